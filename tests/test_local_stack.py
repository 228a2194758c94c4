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
