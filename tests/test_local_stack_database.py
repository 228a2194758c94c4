"""Which database the local stack gives Label Studio: SQLite by default, or PostgreSQL from
settings or a URL. No server is started here (tests/test_sync_incremental.py runs Label Studio
on both)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from judgelab.sync.cli import main
from judgelab.sync.client import SyncError
from judgelab.sync.local_stack import Credentials, PostgresSettings, StackSettings, label_studio_env

CREDS = Credentials(username="admin@judgelab.local", password="pw", token="t" * 40)


def test_sqlite_is_the_default(tmp_path):
    env = label_studio_env(StackSettings(home=tmp_path), CREDS)
    assert env["DJANGO_DB"] == "sqlite"
    assert env["LABEL_STUDIO_BASE_DATA_DIR"] == str(tmp_path / "label-studio")


def test_postgres_settings_become_label_studio_variables_and_win_over_prefixed_ones(tmp_path, monkeypatch):
    # Label Studio reads LABEL_STUDIO_<name> and HEARTEX_<name> before <name>
    monkeypatch.setenv("LABEL_STUDIO_POSTGRE_HOST", "elsewhere")
    monkeypatch.setenv("HEARTEX_DJANGO_DB", "sqlite")
    database = PostgresSettings(name="ls", user="lsuser", password="s3cret", host="127.0.0.1", port=5433)
    env = label_studio_env(StackSettings(home=tmp_path, database=database), CREDS)
    assert {k: env[k] for k in database.label_studio_env()} == {
        "DJANGO_DB": "default",
        "POSTGRE_NAME": "ls",
        "POSTGRE_USER": "lsuser",
        "POSTGRE_PASSWORD": "s3cret",
        "POSTGRE_HOST": "127.0.0.1",
        "POSTGRE_PORT": "5433",
    }
    assert "LABEL_STUDIO_POSTGRE_HOST" not in env and "HEARTEX_DJANGO_DB" not in env
    assert "s3cret" not in repr(database) and "s3cret" not in database.display_url


def test_database_url():
    assert PostgresSettings.from_url("postgresql://ls:p%40ss@db.local:6543/label_studio") == PostgresSettings(
        name="label_studio", user="ls", password="p@ss", host="db.local", port=6543
    )
    assert PostgresSettings.from_url("postgres://ls@localhost/ls").port == 5432
    for bad in (
        "mysql://ls:pw@h/db",
        "postgresql://h:5432/db",
        "postgresql://ls:pw@h:5432/",
        "postgresql://ls@h:99999/d",
    ):
        with pytest.raises(SyncError):
            PostgresSettings.from_url(bad)


def test_up_refuses_a_bad_database_url_before_starting_anything(tmp_path: Path):
    result = CliRunner().invoke(main, ["--home", str(tmp_path), "up"], env={"JUDGELAB_LS_DATABASE_URL": "mysql://x/y"})
    assert result.exit_code == 1
    assert "postgresql://user:password@host:5432/name" in result.output
    assert not (tmp_path / "label-studio.pid").exists()


def test_label_studio_reports_nothing_to_sentry_unless_asked(tmp_path, monkeypatch):
    """Label Studio's default sends errors with request data and traces to HumanSignal's Sentry;
    the local stack turns that off, and keeps a DSN the user set."""
    monkeypatch.delenv("SENTRY_DSN", raising=False)
    monkeypatch.delenv("FRONTEND_SENTRY_DSN", raising=False)
    env = label_studio_env(StackSettings(home=tmp_path), CREDS)
    assert env["SENTRY_DSN"] == "" and env["FRONTEND_SENTRY_DSN"] == ""
    monkeypatch.setenv("SENTRY_DSN", "https://key@sentry.example/1")
    env = label_studio_env(StackSettings(home=tmp_path), CREDS)
    assert env["SENTRY_DSN"] == "https://key@sentry.example/1" and env["FRONTEND_SENTRY_DSN"] == ""


def test_label_studio_sends_no_analytics_unless_asked(tmp_path, monkeypatch):
    """Label Studio's default posts a record of most requests (the user's email among them) to
    HumanSignal's telemetry server; the local stack turns that off, and keeps the user's setting
    under any name Label Studio reads it by."""
    from judgelab.sync.local_stack import ANALYTICS_ENV_NAMES

    for name in ANALYTICS_ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    env = label_studio_env(StackSettings(home=tmp_path), CREDS)
    assert env["COLLECT_ANALYTICS"] == "false"
    for name in ("COLLECT_ANALYTICS", "LABEL_STUDIO_COLLECT_ANALYTICS"):
        monkeypatch.setenv(name, "true")
        env = label_studio_env(StackSettings(home=tmp_path), CREDS)
        assert env[name] == "true" and (name == "COLLECT_ANALYTICS" or "COLLECT_ANALYTICS" not in env)
        monkeypatch.delenv(name)


def test_label_studio_imports_predictions_updating_only_their_tasks_unless_the_user_says_otherwise(
    tmp_path, monkeypatch
):
    from judgelab.sync.local_stack import PREDICTION_IMPORT_FLAG

    monkeypatch.delenv(PREDICTION_IMPORT_FLAG, raising=False)
    assert label_studio_env(StackSettings(home=tmp_path), CREDS)[PREDICTION_IMPORT_FLAG] == "true"
    monkeypatch.setenv(PREDICTION_IMPORT_FLAG, "false")  # Label Studio's own default, kept when asked for
    assert label_studio_env(StackSettings(home=tmp_path), CREDS)[PREDICTION_IMPORT_FLAG] == "false"
