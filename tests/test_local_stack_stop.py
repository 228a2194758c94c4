"""``judgelab down`` (and the test fixtures' teardown) stops what ``judgelab up`` started."""

from __future__ import annotations

import os
import time

from click.testing import CliRunner

from judgelab.sync.cli import main
from judgelab.sync.local_stack import StackSettings, free_port, healthy, start_backend


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is gone for good
        return stat.read().split(")")[-1].split()[0] != "Z"


def test_down_stops_the_backend_it_started(tmp_path):
    settings = StackSettings(home=tmp_path, backend_port=free_port())
    start_backend(settings)
    pid = int(next(tmp_path.glob("*backend.pid")).read_text())
    result = CliRunner().invoke(main, ["--home", str(tmp_path), "down"])
    assert result.exit_code == 0, result.output
    assert "stopped: backend" in result.output
    for _ in range(100):
        if not _running(pid):
            break
        time.sleep(0.1)
    assert not _running(pid), "the backend process is still running after judgelab down"
    assert not healthy(settings.backend_url)
