"""The architecture's rules, checked on the source:

- which of judgelab's packages may import which (``configs`` is the schema core and imports none of
  the others; ``backend`` and ``analysis`` import only ``configs``; ``sync`` imports ``configs`` and
  ``analysis``, and reaches the backend over HTTP or as a process, never by import) and no import
  cycles: import-linter's contracts in pyproject.toml (``[tool.importlinter]``). Its graph (grimp)
  counts every import statement, function-level ones included, and leaves out those under
  ``if TYPE_CHECKING:``;
- no hand-kept list names every schema: per-schema code registers itself (configs.plugins).
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("configs", "backend", "sync", "analysis")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _package_tree(where: Path, copied: str | None = None) -> Path:
    """A folder holding ``judgelab`` laid out as a built wheel installs it (grimp reads the files
    under the package's own folder, and the editable install's ``judgelab`` is one file pointing
    at the repository): the four packages linked, or ``copied`` copied so a test can plant a file."""
    package = where / "judgelab"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for name in PACKAGES:
        if name == copied:
            shutil.copytree(ROOT / name, package / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (package / name).symlink_to(ROOT / name, target_is_directory=True)
    return package


def _lint_imports(tree: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", str(ROOT / "pyproject.toml")],
        cwd=tree,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree), "COLUMNS": "1000"},  # one line per contract
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_import_contracts_are_kept(tmp_path):
    result = _lint_imports(_package_tree(tmp_path).parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


PLANTED = {
    # a function-level import counts as much as one at the top of a module (and configs importing
    # backend, which imports configs, also breaks the contract on cycles)
    "configs imports backend": (
        "configs",
        {"planted.py": "def f():\n    from judgelab.backend import model\n"},
        "configs is the schema core",
    ),
    "sync imports backend": (
        "sync",
        {"planted.py": "import judgelab.backend.results\n"},
        "sync never imports backend",
    ),
    "a cycle hidden in a function": (
        "analysis",
        {
            "planted_a.py": "from judgelab.analysis import planted_b\n",
            "planted_b.py": "def f():\n    from judgelab.analysis import planted_a\n",
        },
        "no import cycles",
    ),
}


@pytest.mark.parametrize("case", list(PLANTED))
def test_the_import_contracts_break_on_a_planted_import(tmp_path, case):
    folder, files, contract = PLANTED[case]
    package = _package_tree(tmp_path, copied=folder)
    for name, text in files.items():
        (package / folder / name).write_text(text)
    result = _lint_imports(tmp_path)
    assert result.returncode != 0, result.stdout + result.stderr
    broken = [line for line in result.stdout.splitlines() if " BROKEN" in line]
    assert any(contract in line for line in broken), result.stdout


@pytest.mark.parametrize(
    "package",
    ["backend", "sync", "analysis"],
)
def test_no_hand_kept_list_names_every_schema(package):
    """A literal that names all five built-in schemas is a dispatch table someone must keep; per-schema
    code registers itself instead (tests and docs may list them)."""
    schemas = {p.name for p in (ROOT / "configs").iterdir() if (p / "schema.yaml").exists()}
    offenders = []
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Dict, ast.List, ast.Tuple, ast.Set)):
                elements = node.keys if isinstance(node, ast.Dict) else node.elts
                named = {e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)}
                if schemas <= named:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, "lists of every schema (register per schema instead): " + ", ".join(offenders)
