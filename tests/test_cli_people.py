"""Adding annotators to a Label Studio that allows sign-up only through its invite link (as the
local stack runs it): ``judgelab invite`` prints the link, ``judgelab annotators add`` signs people
up through it with a password, and they can then log in. Run against the real Label Studio, with
the README's lines as written."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from readme_commands import block_after

from judgelab.sync.cli import main
from judgelab.sync.cli.stack import stack_command
from judgelab.sync.client import SyncError
from judgelab.sync.http_retry import tls_context
from judgelab.sync.people import Invite, sign_up

pytestmark = pytest.mark.integration
ANNOTATORS_MARKER = "annotators: run as written by tests/test_cli_people.py"
COMMANDS = block_after(ANNOTATORS_MARKER)


def cli(stack, *args: str, env: dict[str, str] | None = None):
    environ = {"JUDGELAB_LS_URL": stack.url, "JUDGELAB_LS_TOKEN": stack.creds.token}
    result = CliRunner().invoke(main, list(args), env={**environ, **(env or {})})
    assert "Traceback" not in result.output, result.output
    return result


def readme_line(stack, start: str):
    (line,) = [line for line in COMMANDS if line.startswith(start)]
    args = shlex.split(line)
    assert args[0] == "judgelab", line
    return line, cli(stack, *args[1:])


def logs_in(url: str, email: str, password: str) -> str | None:
    """The email Label Studio says is logged in after its login form took ``email`` and ``password``."""
    with httpx.Client(base_url=url, timeout=60, follow_redirects=False, verify=tls_context()) as http:
        page = http.get("/user/login/")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        http.post("/user/login/", data={"csrfmiddlewaretoken": csrf, "email": email, "password": password},
                  headers={"Referer": f"{url}/user/login/"})  # fmt: skip
        who = http.get("/api/current-user/whoami")
        return who.json().get("email") if who.status_code == 200 else None


@pytest.fixture(autouse=True)
def _no_accounts_of_these_tests(live_stack):
    """A kept Label Studio (JUDGELAB_TEST_HOME) still has the accounts an earlier run made."""
    ours = {"ana@example.org", "luis@example.org", "weak@example.org", "late@example.org"}
    for user in live_stack.client.users.list():
        if user.email in ours:
            live_stack.client.users.delete(id=user.id)


def test_the_readme_adds_annotators_who_can_then_log_in(live_stack):
    line, invited = readme_line(live_stack, "judgelab invite")
    assert invited.exit_code == 0, invited.output
    link = invited.stdout.strip()
    assert link.startswith(f"{live_stack.url}/user/signup/?token="), link
    assert httpx.get(link, timeout=60, verify=tls_context()).status_code == 200  # the sign-up page opens for the link
    line, added = readme_line(live_stack, "judgelab annotators add")
    assert added.exit_code == 0, added.output
    emails = [word for word in shlex.split(line) if "@" in word]
    password = shlex.split(line)[shlex.split(line).index("--password") + 1]
    for email in emails:
        assert f"{email}: account created" in added.output
        assert logs_in(live_stack.url, email, password) == email
    members = {u.email for u in live_stack.client.users.list()}
    assert set(emails) <= members  # in the organization: they see its projects
    again = readme_line(live_stack, "judgelab annotators add")[1]
    assert again.exit_code == 0 and all(f"{e}: has an account already" in again.output for e in emails)


def test_a_weak_password_is_refused_with_label_studios_reason(live_stack):
    result = cli(live_stack, "annotators", "add", "weak@example.org", "--password", "abc")
    assert result.exit_code == 1
    assert "refused the sign-up of weak@example.org" in result.output and "8–128 characters" in result.output
    assert "weak@example.org" not in {u.email for u in live_stack.client.users.list()}


def test_a_new_invite_link_ends_the_old_one(live_stack):
    old = cli(live_stack, "invite", "--json")
    new = cli(live_stack, "invite", "--new", "--json")
    assert old.exit_code == 0 and new.exit_code == 0, new.output
    old_url, new_url = json.loads(old.stdout)["invite_url"], json.loads(new.stdout)["invite_url"]
    assert old_url != new_url and "no longer work" in new.stderr
    with pytest.raises(SyncError, match="no longer valid"):
        sign_up(Invite(old_url, ""), "late@example.org", "a-long-passphrase-42")
    sign_up(Invite(new_url, ""), "late@example.org", "a-long-passphrase-42")
    assert logs_in(live_stack.url, "late@example.org", "a-long-passphrase-42") == "late@example.org"


def test_the_invite_command_up_prints_works_as_printed(live_stack, tmp_path):
    """`judgelab up` ends with the invite command for its own state folder and Label Studio."""
    venv_bin = Path(sys.executable).parent
    bare_path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if Path(p) != venv_bin)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGELAB_", "LABEL_STUDIO_"))}
    env["PATH"] = bare_path
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    printed = stack_command(live_stack.settings.home, "invite", url=live_stack.url, cwd=tmp_path, path=bare_path)
    done = subprocess.run(["bash", "-c", printed], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (printed, done.stderr)
    assert done.stdout.strip().startswith(f"{live_stack.url}/user/signup/?token="), done.stdout
