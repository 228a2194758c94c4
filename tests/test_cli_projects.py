"""The project manager's CLI against a real Label Studio: any project named the same way on every
command, the backend under two URLs (Docker), pre-annotation that never ends in a traceback, and
annotation imports that can be re-run. Each test works on projects of its own titles."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from judgelab.sync.cli import main
from judgelab.sync.http_retry import tls_context

FIXTURES = Path(__file__).parent / "fixtures"
pytestmark = pytest.mark.integration


def cli(stack, *args: str, env: dict[str, str] | None = None):
    """Run ``judgelab ARGS`` as a user would, Label Studio given by the environment."""
    environ = {
        "JUDGELAB_LS_URL": stack.url,
        "JUDGELAB_LS_TOKEN": stack.creds.token,
        "JUDGELAB_BACKEND_URL": stack.backend_url,
    }
    result = CliRunner().invoke(main, list(args), env={**environ, **(env or {})})
    assert "Traceback" not in result.output, result.output
    return result


def ok(result) -> str:
    assert result.exit_code == 0, result.output
    return result.output


def as_json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def likert_csv(path: Path, n: int, prefix: str) -> Path:
    lines = ["id,title,article,summary,model"]
    lines += [
        f"{prefix}-{i},Titular {i},El pleno aprobó el plan {i} de 42 millones.,Se aprueba el plan {i}.,gpt-4o"
        for i in range(n)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def tasks_of(client, project_id: int) -> list:
    return list(client.tasks.list(project=project_id, fields="all"))


def predictions_per_task(client, project_id: int) -> list[list[str]]:
    return [[p.model_version for p in client.predictions.list(task=t.id)] for t in tasks_of(client, project_id)]


# --- 1. one way to name a project --------------------------------------------------------------


def test_every_command_names_a_project_by_id_or_title_and_checks_its_schema(live_stack, tmp_path):
    client = live_stack.client
    csv = likert_csv(tmp_path / "noticias.csv", 6, "naming")
    created = as_json(
        cli(live_stack, "import", "--title", "Noticias de prueba", "--schema", "likert_rubric_es", str(csv), "--json")
    )
    project = created["project"]
    assert project["title"] == "Noticias de prueba" and project["schema"] == "likert_rubric_es" and project["created"]
    pid = str(project["id"])
    again = as_json(
        cli(live_stack, "create", "--title", "Noticias de prueba", "--schema", "likert_rubric_es", "--json")
    )
    assert again["projects"] == [{**project, "created": False}]
    # the file's schema comes from the project named: no --schema needed for a generic file
    more = likert_csv(tmp_path / "mas.csv", 2, "naming-more")
    assert "2 imported" in ok(cli(live_stack, "import", "--project", pid, str(more)))
    assert len(tasks_of(client, int(pid))) == 8

    connected = as_json(cli(live_stack, "connect", "--title", "Noticias de prueba", "--json"))["projects"]
    assert [p["id"] for p in connected] == [int(pid)]
    version = connected[0]["model_version"]
    predicted = as_json(cli(live_stack, "preannotate", "--project", pid, "--json"))["projects"][0]
    assert (predicted["tasks"], predicted["predicted"], predicted["method"]) == (8, 8, "retrieve")
    assert predictions_per_task(client, int(pid)) == [[version]] * 8
    synced = as_json(cli(live_stack, "sync", "--title", "Noticias de prueba", "--out", str(tmp_path / "d"), "--json"))
    assert [p["id"] for p in synced["projects"]] == [int(pid)] and synced["counts"]["tasks"] == 8
    assert "2 annotation(s) per task" in ok(cli(live_stack, "design", "overlap", "--project", pid))

    # a schema that is not the project's is refused, naming both, before anything changes
    for command in (
        ["design", "overlap", "--schema", "story_consistency", "--project", pid],
        ["preannotate", "--schema", "story_consistency", "--project", pid],
        ["connect", "--schema", "hotel_spans", "--title", "Noticias de prueba"],
        ["import", "--project", pid, str(FIXTURES / "storysumm_alternates.json")],
    ):
        result = cli(live_stack, *command)
        assert result.exit_code == 1, (command, result.output)
        assert f"project {pid} ('Noticias de prueba', likert_rubric_es)" in result.output
        assert "its label config is the likert_rubric_es schema, not" in result.output
    assert client.projects.get(id=int(pid)).maximum_annotations == 2
    assert len(tasks_of(client, int(pid))) == 8

    missing = cli(live_stack, "connect", "--project", "987654")
    assert missing.exit_code == 1 and "no project 987654 in Label Studio (projects:" in missing.output
    assert f"{pid} 'Noticias de prueba'" in missing.output
    unknown = cli(live_stack, "preannotate", "--title", "No such study")
    assert unknown.exit_code == 1 and "no project 'No such study'" in unknown.output


def test_one_title_for_projects_of_two_schemas_needs_the_schema_or_the_id(live_stack, tmp_path):
    client = live_stack.client
    hotel = as_json(
        cli(live_stack, "create", "--title", "Twin study", "--schema", "hotel_spans", "--samples", "--json")
    )
    hotel_id = hotel["projects"][0]["id"]
    refused = cli(live_stack, "create", "--title", "Twin study", "--schema", "likert_rubric_es")
    assert (
        refused.exit_code == 1 and "its label config is the hotel_spans schema, not likert_rubric_es" in refused.output
    )
    from judgelab.configs.schema import get_schema

    other = client.projects.create(title="Twin study", label_config=get_schema("likert_rubric_es").config_xml)
    try:
        ambiguous = cli(live_stack, "connect", "--title", "Twin study")
        assert ambiguous.exit_code == 1
        assert f"2 projects are titled 'Twin study': {hotel_id} (hotel_spans), {other.id} (likert_rubric_es)" in (
            ambiguous.output
        )
        assert "--project ID or add --schema" in ambiguous.output
        chosen = as_json(cli(live_stack, "connect", "--title", "Twin study", "--schema", "hotel_spans", "--json"))
        assert [p["id"] for p in chosen["projects"]] == [hotel_id]
    finally:
        client.projects.delete(id=other.id)


def test_load_names_its_project_with_project_name_and_still_reads_the_old_option(tmp_path):
    result = CliRunner().invoke(
        main,
        ["load", "basse", str(FIXTURES / "basse_mini.jsonl"), "--out", str(tmp_path / "a"), "--project-name", "B1"],
    )
    assert result.exit_code == 0, result.output
    assert "in 1 project(s): B1" in result.output
    old = CliRunner().invoke(
        main, ["load", "basse", str(FIXTURES / "basse_mini.jsonl"), "--out", str(tmp_path / "b"), "--project", "B2"]
    )
    assert old.exit_code == 0 and "in 1 project(s): B2" in old.output
    assert "load --project is deprecated, use --project-name" in old.stderr


# --- 2. the backend as judgelab reaches it, and as Label Studio does -----------------------------


class _HangUpsUnprinted(ThreadingHTTPServer):
    """A client that hung up before its answer (its own timeout passed) is not printed as a
    traceback: the proxy runs in the test's process, so the traceback would land in the output of
    the command under test, whose own tracebacks the tests look for."""

    def handle_error(self, request, client_address) -> None:
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


class RecordingProxy:
    """An HTTP server at an address of its own that forwards every request to ``target`` and
    records who asked (the User-Agent) for what: the backend as reached under another name.
    ``judgelab_cannot_reach``: requests from judgelab's own HTTP client (httpx) get no answer, as
    when judgelab runs where that name does not resolve."""

    def __init__(self, host: str, port: int, target: str, *, judgelab_cannot_reach: bool = False) -> None:
        self.requests: list[tuple[str, str, str]] = []  # (method, path, user agent)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                agent = self.headers.get("User-Agent", "")
                proxy.requests.append((self.command, self.path, agent))
                if judgelab_cannot_reach and agent.startswith("python-httpx"):
                    self.close_connection = True  # as from the host, where the name leads nowhere
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() in ("content-type", "authorization")}
                answer = httpx.request(
                    self.command, target + self.path, content=body, headers=headers, timeout=300, verify=tls_context()
                )
                self.send_response(answer.status_code)
                self.send_header("Content-Type", answer.headers.get("content-type", "application/json"))
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = _forward

            def log_message(self, *args) -> None:
                pass

        self.server = _HangUpsUnprinted((host, port), Handler)
        self.url = f"http://{host}:{port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def judgelab_requests(self) -> list[tuple[str, str, str]]:
        """Requests made by judgelab's own HTTP client (httpx), not by Label Studio's."""
        return [r for r in self.requests if r[2].startswith("python-httpx")]


ALIAS = "judgelab-backend"
ALIAS_LINE = f"127.0.0.2 {ALIAS}  # added by judgelab's tests, removed after them\n"


@pytest.fixture
def compose_service_name() -> Iterator[str]:
    """``judgelab-backend`` resolving to 127.0.0.2, as the compose service name does inside the
    Docker network (a line in /etc/hosts, removed afterwards; needs root)."""
    hosts = Path("/etc/hosts")
    try:
        socket.gethostbyname(ALIAS)
        added = False
    except OSError:
        if os.geteuid() != 0:
            pytest.skip("naming the backend judgelab-backend needs a line in /etc/hosts (root)")
        with hosts.open("a") as handle:
            handle.write(ALIAS_LINE)
        added = True
    try:
        assert socket.gethostbyname(ALIAS) == "127.0.0.2"
        yield ALIAS
    finally:
        if added:
            hosts.write_text(hosts.read_text().replace(ALIAS_LINE, ""))


def test_connect_and_preannotate_as_the_readme_shows_for_docker(live_stack, tmp_path, compose_service_name):
    """Label Studio reaches the backend as http://judgelab-backend:9090 (the compose network: here
    127.0.0.2), judgelab as http://127.0.0.1:9090 (the compose file's port mapping: here a
    forwarder); the README's two lines run as written."""
    import shlex

    from readme_commands import block_after

    client = live_stack.client
    connect_line, preannotate_line = block_after("tests/test_cli_projects.py runs the next block as written")
    csv = likert_csv(tmp_path / "d.csv", 3, "dk")
    imported = cli(
        live_stack, "import", "--title", "Noticias (Docker)", "--schema", "likert_rubric_es", str(csv), "--json"
    )
    pid = as_json(imported)["project"]["id"]
    proxies = []
    try:
        proxies.append(RecordingProxy("127.0.0.2", 9090, live_stack.backend_url, judgelab_cannot_reach=True))
        proxies.append(RecordingProxy("127.0.0.1", 9090, live_stack.backend_url))
    except OSError as exc:
        for proxy in proxies:
            proxy.close()
        pytest.skip(f"port 9090 is taken: {exc}")
    network, host_port = proxies
    try:
        # the compose file's connect line, for this project: judgelab cannot (need not) reach that URL
        assert "-> http://judgelab-backend:9090" in ok(cli(live_stack, *shlex.split(connect_line)[1:]))
        assert [ml.url for ml in client.ml.list(project=pid)] == ["http://judgelab-backend:9090"]
        label_studio = [r for r in network.requests if not r[2].startswith("python-httpx")]
        assert {path for _, path, _ in label_studio} >= {"/health", "/setup"}, "Label Studio checked it"
        assert {path for _, path, _ in network.judgelab_requests()} <= {"/setup"}, "judgelab only asked for judges"
        ok(cli(live_stack, "preannotate", "--title", "Noticias (Docker)"))  # Label Studio retrieves
        version = client.projects.get(id=pid).model_version
        assert predictions_per_task(client, pid) == [[version]] * 3
        assert "/predict" in {path for _, path, agent in network.requests if not agent.startswith("python-httpx")}
        assert host_port.requests == []

        # both URLs: judgelab pushes through the host's port, Label Studio keeps the network name
        ok(cli(live_stack, "import", "--project", str(pid), str(likert_csv(tmp_path / "e.csv", 4, "dk2"))))
        pushed = ok(cli(live_stack, *shlex.split(preannotate_line)[1:]))
        assert (
            "7/7 tasks have a prediction" in pushed
            and "pushed by judgelab in chunks; this run added 4 predictions, 0 task(s) still without one" in pushed
        )
        assert [ml.url for ml in client.ml.list(project=pid)] == ["http://judgelab-backend:9090"]
        assert ("POST", "/predict") in {(m, p) for m, p, _ in host_port.judgelab_requests()}
        assert "/predict" not in {path for _, path, _ in network.judgelab_requests()}
        assert predictions_per_task(client, pid) == [[version]] * 7
    finally:
        network.close()
        host_port.close()


def test_a_backend_label_studio_cannot_reach_is_a_clear_error(live_stack, tmp_path):
    ok(cli(live_stack, "create", "--title", "Unreachable backend", "--schema", "hotel_spans"))
    result = cli(live_stack, "connect", "--title", "Unreachable backend", "--backend-url", "http://127.0.0.1:9")
    assert result.exit_code == 1
    assert "Label Studio could not connect project" in result.output and "http://127.0.0.1:9" in result.output
    assert "--ls-backend-url" in result.output


# --- 3. pre-annotation never ends in a traceback --------------------------------------------


def test_preannotate_says_how_far_label_studio_got_when_it_does_not_answer_in_time(live_stack, tmp_path):
    """A request Label Studio does not answer within judgelab's timeout (shortened here by
    JUDGELAB_RETRIEVE_TIMEOUT) ends with what was done and what to run, and a re-run finishes the
    project without a second prediction anywhere."""
    client = live_stack.client
    csv = likert_csv(tmp_path / "slow.csv", 30, "slow")
    imported = cli(live_stack, "import", "--title", "Slow retrieve", "--schema", "likert_rubric_es", str(csv), "--json")
    pid = str(as_json(imported)["project"]["id"])
    result = cli(live_stack, "preannotate", "--project", pid, env={"JUDGELAB_RETRIEVE_TIMEOUT": "0.2"})
    assert result.exit_code == 1, result.output
    assert "Label Studio did not answer 'Retrieve predictions' for 30 task(s) within 0.2 s" in result.output
    assert "tasks have a prediction of judgelab-offline" in result.output
    assert "Run the same judgelab preannotate again in a minute" in result.output
    version = client.projects.get(id=int(pid)).model_version
    deadline = time.monotonic() + 300  # Label Studio finishes the request it was given
    while time.monotonic() < deadline and sum(map(len, predictions_per_task(client, int(pid)))) < 30:
        time.sleep(2)
    again = as_json(cli(live_stack, "preannotate", "--project", pid, "--json"))["projects"][0]
    assert (again["predicted"], again["added"]) == (30, 0)
    assert predictions_per_task(client, int(pid)) == [[version]] * 30


# --- 5. annotation imports that can be re-run -----------------------------------------------


def test_importing_annotations_twice_adds_each_one_once(live_stack, tmp_path):
    client = live_stack.client
    wide = shutil.copy(FIXTURES / "augmentation_wide.csv", tmp_path / "wide.csv")
    prev = shutil.copy(FIXTURES / "annotations_round1.csv", tmp_path / "prev.csv")
    args = ["import", "--title", "Round two", str(wide), "--annotations", str(prev), "--json"]
    first = as_json(cli(live_stack, *args))
    assert first["annotations"]["added"] == 3 and first["annotations"]["already"] == 0
    pid = first["project"]["id"]

    def annotations():
        return sorted(
            (t.meta["judgelab_key"], a.completed_by, json.dumps(sorted(r["from_name"] for r in a.result)))
            for t in tasks_of(client, pid)
            for a in client.annotations.list(id=t.id)
        )

    before, users = annotations(), len(list(client.users.list()))
    second = cli(live_stack, *args[:-1])
    assert "0 annotation(s) added, 3 already there" in ok(second)
    assert annotations() == before and len(list(client.users.list())) == users

    # a rater's changed answer is not added beside the one Label Studio has
    changed = prev.read_text().replace(
        "it-101#Llama3.1-8b#rephrased,giulia,SP,3", "it-101#Llama3.1-8b#rephrased,giulia,SP,1"
    )
    prev.write_text(changed)
    third = as_json(cli(live_stack, *args))["annotations"]
    assert (third["added"], third["already"], third["differ"]) == (0, 2, 1)
    assert annotations() == before

    # annotations of a task that is nowhere: refused before a project or a task is created
    stray = tmp_path / "stray.csv"
    stray.write_text("task,annotator,item,value\nit-999#Qwen2.5-14b#rewritten,giulia,SP,2\n", encoding="utf-8")
    refused = cli(live_stack, "import", "--title", "Round three", str(wide), "--annotations", str(stray))
    assert refused.exit_code == 1
    assert "annotations for task(s) in neither the imported files nor the project: it-999" in refused.output
    assert "stray.csv line 2" in refused.output
    assert not [p for p in client.projects.list() if p.title == "Round three"]


def test_with_annotations_into_tasks_already_there_adds_the_missing_ones(live_stack, tmp_path):
    """BASSE tasks imported first without their ratings: --with-annotations later adds them (and
    only then creates the raters' accounts); a third run adds nothing."""
    client = live_stack.client
    basse = shutil.copy(FIXTURES / "basse_mini.jsonl", tmp_path / "basse.jsonl")
    plain = as_json(cli(live_stack, "import", "--title", "BASSE later ratings", str(basse), "--json"))
    pid = plain["project"]["id"]
    assert plain["annotations"] == {"added": 0, "already": 0, "differ": 0, "users_created": []}
    rated = cli(live_stack, "import", "--title", "BASSE later ratings", "--with-annotations", str(basse))
    assert "0 imported, 3 already in project" in ok(rated)
    assert "5 annotation(s) added, 0 already there" in rated.output
    emails = {u.id: u.email for u in client.users.list()}
    by_task = {
        t.meta["judgelab_key"]: sorted(emails[a.completed_by] for a in client.annotations.list(id=t.id))
        for t in tasks_of(client, pid)
    }
    assert by_task["doc-1#claude-base"] == [f"basse-rater-{i}@judgelab.local" for i in range(3)]
    users = len(emails)
    again = as_json(
        cli(live_stack, "import", "--title", "BASSE later ratings", "--with-annotations", str(basse), "--json")
    )
    assert again["annotations"] == {"added": 0, "already": 5, "differ": 0, "users_created": []}
    assert len(list(client.users.list())) == users


# --- 8. version, JSON, progress ----------------------------------------------------------------


def test_version_and_json_of_the_schemas():
    from importlib.metadata import version

    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0 and result.output == f"judgelab {version('judgelab')}\n"
    listed = json.loads(CliRunner().invoke(main, ["schemas", "--json"]).stdout)["schemas"]
    assert {s["name"] for s in listed} >= {"hotel_spans", "likert_rubric_es"}
    assert set(listed[0]) == {"name", "seed", "language", "title"}


def test_progress_bars_show_on_a_terminal_only(live_stack, tmp_path):
    """A bar on stderr when it is a terminal (a pseudo-terminal here); nothing when it is a pipe."""
    import fcntl
    import pty
    import struct
    import subprocess
    import sys
    import termios

    csv = likert_csv(tmp_path / "bar.csv", 40, "bar")
    env = {**os.environ, "JUDGELAB_LS_URL": live_stack.url, "JUDGELAB_LS_TOKEN": live_stack.creds.token}
    command = [
        sys.executable,
        "-m",
        "judgelab.sync.cli",
        "import",
        "--title",
        "Progress bars",
        "--schema",
        "likert_rubric_es",
    ]
    piped = subprocess.run([*command, str(csv)], env=env, capture_output=True, text=True, timeout=300)
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == "" and "40 imported" in piped.stdout
    more = likert_csv(tmp_path / "bar2.csv", 40, "bar2")
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a terminal 100 columns wide
    proc = subprocess.Popen([*command, str(more)], env=env, stdout=subprocess.PIPE, stderr=follower, text=True)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    out, _ = proc.communicate(timeout=300)
    os.close(leader)
    assert proc.returncode == 0 and "40 imported" in out
    text = seen.decode(errors="replace")
    assert "import into project" in text and "/40 [" in text and "task/s" in text
