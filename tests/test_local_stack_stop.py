"""``judgelab down`` (stop_stack) stops the backend that start_backend started."""

from __future__ import annotations

import time

from judgelab.sync.local_stack import StackSettings, free_port, healthy, start_backend, stop_stack


def test_stop_stack_stops_the_backend_it_started(tmp_path):
    settings = StackSettings(home=tmp_path, backend_port=free_port())
    assert start_backend(settings)
    assert healthy(settings.backend_url)
    assert "backend" in stop_stack(tmp_path)
    for _ in range(50):  # SIGTERM: uvicorn shuts down within a moment
        if not healthy(settings.backend_url, timeout=0.5):
            break
        time.sleep(0.2)
    assert not healthy(settings.backend_url, timeout=0.5)
    assert not list(tmp_path.glob("*.pid"))
