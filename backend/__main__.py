"""``python -m judgelab.backend``: serve the ML backend with uvicorn (settings from ``JUDGELAB_*``)."""

from __future__ import annotations

import logging
import sys

import uvicorn

from judgelab.backend.app import create_app
from judgelab.backend.settings import BackendSettings, SettingsError


def main() -> None:
    try:
        settings = BackendSettings.from_env()
        if settings.annotator == "llm":
            settings.llm.check_endpoint()
        logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        app = create_app(settings)
    except (SettingsError, ValueError) as exc:
        print(f"judgelab backend: {exc}", file=sys.stderr)
        sys.exit(2)
    uvicorn.run(app, host=settings.host, port=settings.port, log_level=settings.log_level.lower())


if __name__ == "__main__":
    main()
