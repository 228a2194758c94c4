"""The installed distribution: one top-level package, ``judgelab``, that a user's own modules cannot shadow.

Before, the wheel installed top-level ``backend``, ``sync`` and ``analysis`` packages: from a folder
holding a ``backend/`` package, ``python -m backend`` failed ("No module named backend.__main__"), and
a local ``analysis.py`` replaced judgelab's analysis in ``import analysis``. The wheel now maps the
repository's folders into ``judgelab.*`` (pyproject.toml: ``sources``); this test builds it, installs
it apart from the editable checkout and uses it from such a folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0 and "Could not find a version that satisfies the requirement hatchling" in done.stderr:
        pytest.skip("hatchling (the build backend) cannot be downloaded here")
    assert done.returncode == 0, done.stderr
    (path,) = out.glob("judgelab-*.whl")
    return path


def test_the_wheel_installs_one_top_level_package_with_the_schemas(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"judgelab", wheel.name.split("-py")[0] + ".dist-info"}
    schemas = sorted(p.name for p in (ROOT / "configs").iterdir() if (p / "schema.yaml").is_file())
    for schema in schemas:
        for part in ("config.xml", "schema.yaml", "samples.json"):
            assert f"judgelab/configs/{schema}/{part}" in names
    assert not [n for n in names if "__pycache__" in n or n.startswith(("judgelab/tests", "judgelab/bench"))]


def test_the_installed_package_works_from_a_folder_with_modules_of_the_same_names(wheel: Path, tmp_path: Path):
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)], check=True
    )
    work = tmp_path / "work"
    (work / "backend").mkdir(parents=True)
    (work / "backend" / "__init__.py").write_text("raise SystemExit('the user folder was imported')\n")
    for name in ("analysis.py", "sync.py", "configs.py"):
        (work / name).write_text("raise SystemExit('the user module was imported')\n")
    # -S: no site-packages .pth files, so the editable checkout stays out; its dependencies come
    # from the environment's site-packages, judgelab from the installed wheel
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), sysconfig.get_paths()["purelib"]])}
    env.pop("JUDGELAB_CONFIGS_DIR", None)
    code = (
        "import judgelab.analysis, judgelab.backend.app, judgelab.configs, judgelab.sync.cli;"
        "from judgelab.sync.cli import main;"
        "print(judgelab.configs.configs_dir());"
        "main(['schemas'], standalone_mode=False)"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=work, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert Path(lines[0]).is_relative_to(target)  # the schemas come from the installed package
    assert len([line for line in lines[1:] if " seed " in line]) == 5
