"""Backend settings from ``JUDGELAB_*`` environment variables (secrets are never logged)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field


@dataclass(frozen=True)
class BackendSettings:
    annotator: str = "offline"
    host: str = "127.0.0.1"
    port: int = 9090
    basic_auth_user: str | None = None
    basic_auth_pass: str | None = field(default=None, repr=False)
    log_level: str = "INFO"

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> BackendSettings:
        env = dict(os.environ if env is None else env)
        return cls(
            annotator=env.get("JUDGELAB_ANNOTATOR", "offline"),
            host=env.get("JUDGELAB_BACKEND_HOST", "127.0.0.1"),
            port=int(env.get("JUDGELAB_BACKEND_PORT", "9090")),
            basic_auth_user=env.get("JUDGELAB_BASIC_AUTH_USER") or None,
            basic_auth_pass=env.get("JUDGELAB_BASIC_AUTH_PASS") or None,
            log_level=env.get("JUDGELAB_LOG_LEVEL", "INFO"),
        )
