"""The local stack's process handling: `judgelab down` stops what `judgelab up` started."""

from __future__ import annotations

import time

from click.testing import CliRunner

from judgelab.sync.cli import main
from judgelab.sync.local_stack import StackSettings, free_port, healthy, start_backend


def test_down_stops_the_backend_that_up_started(tmp_path):
    settings = StackSettings(home=tmp_path, ls_port=free_port(), backend_port=free_port())
    assert start_backend(settings)
    assert healthy(settings.backend_url)
    result = CliRunner().invoke(main, ["--home", str(tmp_path), "down"])
    assert result.exit_code == 0, result.output
    assert "backend" in result.output
    deadline = time.monotonic() + 30
    while healthy(settings.backend_url, timeout=0.5) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not healthy(settings.backend_url, timeout=0.5)
    assert not list(tmp_path.glob("*.pid"))


def test_the_stop_command_up_prints_works_as_printed_without_judgelab_on_the_path(tmp_path):
    """scripts/up.sh runs .venv/bin/judgelab without activating the virtual environment: the
    command `up` ends with must not rely on `judgelab` being on the PATH."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from judgelab.sync.cli.stack import stop_command

    venv_bin = Path(sys.executable).parent
    bare_path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if Path(p) != venv_bin)
    env = {**os.environ, "PATH": bare_path}
    env.pop("JUDGELAB_HOME", None)
    # typed in the folder that holds the virtual environment (the checkout, after up.sh)
    checkout = venv_bin.parent.parent
    home = tmp_path / "state"
    settings = StackSettings(home=home, ls_port=free_port(), backend_port=free_port())
    assert start_backend(settings)
    printed = stop_command(home, cwd=checkout, path=bare_path)
    assert printed.startswith(f"{venv_bin.parent.name}/bin/judgelab --home ")
    done = subprocess.run(["bash", "-c", printed], cwd=checkout, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "stopped: backend" in done.stdout, (printed, done.stderr)
    # typed elsewhere: absolute paths; with this judgelab on the PATH: the bare name
    assert stop_command(home, cwd=tmp_path, path=bare_path).startswith(f"{venv_bin / 'judgelab'} --home state ")
    assert stop_command(Path(".judgelab"), cwd=checkout, path=str(venv_bin)) == "judgelab --home .judgelab down"
