"""``python -m backend``: serve the ML backend with uvicorn."""

from __future__ import annotations

import logging

import uvicorn

from backend.app import create_app
from backend.settings import BackendSettings


def main() -> None:
    settings = BackendSettings.from_env()
    logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level=settings.log_level.lower())


if __name__ == "__main__":
    main()
