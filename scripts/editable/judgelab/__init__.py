"""judgelab in an editable install (``pip install -e .``): the package is the repository root.

A built wheel installs ``judgelab/backend``, ``judgelab/sync``, ``judgelab/analysis`` and
``judgelab/configs`` (see ``[tool.hatch.build.targets.wheel]`` in pyproject.toml); an editable
install puts this folder on ``sys.path`` instead, and this file makes ``judgelab.backend`` and the
others resolve to the repository's top-level folders, so edits take effect without reinstalling.
"""

from pathlib import Path

__path__ = [str(Path(__file__).resolve().parents[3])]
