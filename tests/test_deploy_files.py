"""The deployment files: docker-compose.yml has the documented shape and validates, and the
backend Dockerfile builds from files in the repository (checked without a Docker engine)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "backend" / "Dockerfile"

LABEL_STUDIO_ENV = {
    "DJANGO_DB",
    "POSTGRE_NAME",
    "POSTGRE_USER",
    "POSTGRE_PASSWORD",
    "POSTGRE_PORT",
    "POSTGRE_HOST",
    "LABEL_STUDIO_USERNAME",
    "LABEL_STUDIO_PASSWORD",
    "LABEL_STUDIO_USER_TOKEN",
    "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN",
    "USE_DEFAULT_BANNED_SUBNETS",
    "SSRF_PROTECTION_ENABLED",
    "ML_TIMEOUT_PREDICT",
    "ML_TIMEOUT_SETUP",
    "ML_TIMEOUT_HEALTH",
    "SENTRY_DSN",
    "FRONTEND_SENTRY_DSN",
    "COLLECT_ANALYTICS",
}
BACKEND_ENV = {
    "JUDGELAB_ANNOTATOR",
    "JUDGELAB_LLM_BASE_URL",
    "JUDGELAB_LLM_MODEL",
    "JUDGELAB_LLM_API_KEY",
    "JUDGELAB_BASIC_AUTH_USER",
    "JUDGELAB_BASIC_AUTH_PASS",
}


@pytest.fixture(scope="module")
def services() -> dict:
    return yaml.safe_load(COMPOSE.read_text())["services"]


def environment(service: dict) -> dict[str, str | None]:
    """A service's environment as a dict, whichever of the two compose forms it uses."""
    env = service.get("environment") or {}
    if isinstance(env, dict):
        return {k: None if v is None else str(v) for k, v in env.items()}
    pairs = (item.split("=", 1) for item in env)
    return {p[0]: (p[1] if len(p) == 2 else None) for p in pairs}


def test_compose_services_and_ollama_profile(services):
    assert {"postgres", "label-studio", "judgelab-backend", "ollama"} <= set(services)
    assert services["ollama"].get("profiles") == ["ollama"]
    for name in ("postgres", "label-studio", "judgelab-backend"):
        assert "profiles" not in services[name], f"{name} must start without a profile"
    assert services["label-studio"]["image"] == "heartexlabs/label-studio:1.23.2"
    assert services["postgres"]["image"].startswith("postgres:16")
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    assert services["label-studio"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "healthcheck" in services["judgelab-backend"]


def test_compose_backend_builds_from_backend_dockerfile(services):
    build = services["judgelab-backend"]["build"]
    assert build["dockerfile"] == "backend/Dockerfile"
    assert (COMPOSE.parent / build.get("context", ".")).resolve() == ROOT


def test_compose_environment(services):
    ls_env = environment(services["label-studio"])
    assert LABEL_STUDIO_ENV <= set(ls_env), LABEL_STUDIO_ENV - set(ls_env)
    assert ls_env["DJANGO_DB"] == "default"
    assert ls_env["POSTGRE_HOST"] == "postgres"
    assert ls_env["SENTRY_DSN"] == "${SENTRY_DSN:-}"  # no telemetry unless the user sets a DSN
    assert ls_env["COLLECT_ANALYTICS"] == "${COLLECT_ANALYTICS:-false}"  # nor analytics unless turned on
    # the prediction import that updates only the request's tasks, as the local stack runs it
    from judgelab.sync.local_stack import PREDICTION_IMPORT_FLAG, Credentials, StackSettings, label_studio_env

    local = label_studio_env(StackSettings(home=Path("unused")), Credentials("a@b.c", "p", "t"))
    assert ls_env[PREDICTION_IMPORT_FLAG] == local[PREDICTION_IMPORT_FLAG] == "true"
    # a busy backend's /setup gets 30 s in both (Label Studio's default is 3 s)
    assert ls_env["ML_TIMEOUT_SETUP"] == "${ML_TIMEOUT_SETUP:-30}" and local["ML_TIMEOUT_SETUP"] == "30"
    # and its /health 10 s (Label Studio's default is 1 s)
    assert ls_env["ML_TIMEOUT_HEALTH"] == "${ML_TIMEOUT_HEALTH:-10}" and local["ML_TIMEOUT_HEALTH"] == "10"
    backend_env = environment(services["judgelab-backend"])
    assert BACKEND_ENV <= set(backend_env), BACKEND_ENV - set(backend_env)
    assert backend_env["JUDGELAB_ANNOTATOR"] == "${JUDGELAB_ANNOTATOR:-offline}"
    assert "http://ollama:11434/v1" in backend_env["JUDGELAB_LLM_BASE_URL"]
    # secrets are passed through from the shell, never given a value in the file
    assert backend_env["JUDGELAB_LLM_API_KEY"] is None
    assert backend_env["JUDGELAB_BASIC_AUTH_PASS"] is None


def test_compose_ports(services):
    def container_ports(service: dict) -> set[str]:
        return {str(p).split(":")[-1].split("/")[0] for p in service.get("ports", [])}

    assert "8080" in container_ports(services["label-studio"])
    assert "9090" in container_ports(services["judgelab-backend"])
    assert "11434" in container_ports(services["ollama"])


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="docker-compose is not installed")
def test_docker_compose_config_validates():
    proc = subprocess.run(
        ["docker-compose", "-f", str(COMPOSE), "config", "-q"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with continuation lines joined and comments dropped."""
    instructions, current = [], ""
    for line in DOCKERFILE.read_text().splitlines():
        stripped = line.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        current = (current + " " + stripped.removesuffix("\\")).strip()
        if not stripped.endswith("\\"):
            keyword, _, args = current.strip().partition(" ")
            instructions.append((keyword.upper(), args.strip()))
            current = ""
    return instructions


def test_dockerfile_copies_only_files_in_the_repository():
    copies = [args for keyword, args in dockerfile_instructions() if keyword in {"COPY", "ADD"}]
    assert copies, "the Dockerfile copies nothing"
    sources = []
    for args in copies:
        words = shlex.split(args)
        assert not any(w.startswith("--from") for w in words), "a copy from another stage or image"
        sources += [w for w in words if not w.startswith("--")][:-1]  # the last word is the destination
    ignored = dockerignore_patterns()
    for source in sources:
        assert not source.startswith(("http://", "https://", "/", "..")), source
        assert (ROOT / source).exists(), f"COPY source {source} is not in the repository"
        assert source.rstrip("/") not in ignored, f"COPY source {source} is excluded by .dockerignore"
    assert {"pyproject.toml", "README.md", "backend", "sync", "analysis", "configs"} <= {s.rstrip("/") for s in sources}


def test_dockerfile_runtime_settings():
    instructions = dockerfile_instructions()
    text = "\n".join(f"{k} {a}" for k, a in instructions)
    assert instructions[0] == ("FROM", "python:3.11-slim")
    run = " ".join(a for k, a in instructions if k == "RUN")
    assert "pip install --no-cache-dir ." in run and "[server]" not in run
    users = [a for k, a in instructions if k == "USER"]
    assert users and users[-1] not in {"root", "0"}
    assert ("EXPOSE", "9090") in instructions
    healthcheck = next(a for k, a in instructions if k == "HEALTHCHECK")
    assert "urllib" in healthcheck and "/health" in healthcheck
    assert instructions[-1] == ("CMD", '["python", "-m", "judgelab.backend"]')
    for setting in ("JUDGELAB_BACKEND_HOST=0.0.0.0", "JUDGELAB_BACKEND_PORT=9090", "JUDGELAB_CONFIGS_DIR=/app/configs"):
        assert setting in text


def dockerignore_patterns() -> set[str]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return {line.strip().removeprefix("**/").rstrip("/") for line in lines if line.strip() and line[0] != "#"}


def test_dockerignore_keeps_local_state_out():
    patterns = dockerignore_patterns()
    expected = {".venv", ".judgelab", "test-artifacts", "__pycache__", ".git", "judgelab-data", "judgelab-report"}
    assert expected <= patterns, expected - patterns
