"""Where the tests find ``../shared`` (real public data and the seeds), in one place.

The folder sits beside the checkout (``$JUDGELAB_SHARED_DIR`` overrides it); a user's clone has no
``../shared``, so every test that reads it skips cleanly through :func:`shared_path`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED = Path(os.environ.get("JUDGELAB_SHARED_DIR") or Path(__file__).resolve().parents[2] / "shared")
SHARED_DATA = SHARED / "data"
SEEDS = SHARED / "seeds"


def shared_path(*parts: str) -> Path:
    """``../shared/data/<parts>``, or skip the test when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data not available: {path}")
    return path
