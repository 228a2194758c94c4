"""``python -m judgelab.backend [flags]``: serve the ML backend (``--help`` lists the flags and
their ``JUDGELAB_*`` variables)."""

from __future__ import annotations

from judgelab.backend.cli import main

if __name__ == "__main__":
    main()
