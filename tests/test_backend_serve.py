"""``judgelab serve`` and ``python -m judgelab.backend`` as a user runs them:
``--help``, every flag with its variable, the README's commands exactly as written, several
worker processes sharing the LLM response cache, and ``/metrics``."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter, deque
from dataclasses import replace
from operator import attrgetter
from pathlib import Path

import click
import httpx
import pytest
from backend_process import ROOT, BackendProcess, clean_env, start_backend
from llm_sim import Failure, LLMSim
from readme_commands import docs_text, page_text

from judgelab.backend.cli import OPTIONS, SECRETS, environment
from judgelab.backend.settings import BackendSettings
from judgelab.configs.schema import get_schema
from judgelab.sync.http_retry import tls_context
from judgelab.sync.local_stack import free_port

BIN = Path(sys.executable).parent
JUDGELAB = str(BIN / "judgelab")
HOTEL_XML = get_schema("hotel_spans").config_xml
README = docs_text()  # the README and the manual's pages (docs/)


def hotel_task(i: int) -> dict:
    sample = get_schema("hotel_spans").samples()[0]["data"]
    return {"id": i, "data": {**sample, "summary": f"task {i}: a summary."}}


def predict_body(tasks: list[dict]) -> dict:
    return {"tasks": tasks, "project": "3.1", "label_config": HOTEL_XML, "params": {"context": None}}


def samples(text: str, name: str) -> dict[str, float]:
    """``{labels: value}`` of one metric in a Prometheus text exposition."""
    out = {}
    for m in re.finditer(rf"^{re.escape(name)}(\{{[^}}]*\}})? (\S+)$", text, re.M):
        out[m.group(1) or ""] = float(m.group(2))
    return out


# ---------------------------------------------------------------------------- help and flags


@pytest.mark.parametrize(
    "command",
    [[sys.executable, "-m", "judgelab.backend", "--help"], [JUDGELAB, "serve", "--help"]],
    ids=["module", "cli"],
)
def test_help_lists_every_flag_with_its_variable_and_starts_nothing(command):
    out = subprocess.run(command, cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Usage: judgelab serve")
    flat = " ".join(out.stdout.split())
    for option in OPTIONS:
        assert option.flag in flat and option.env in flat, option
    for secret in SECRETS:
        assert secret in flat
    assert "Uvicorn running" not in out.stdout + out.stderr


def test_a_bad_flag_is_a_usage_error():
    out = subprocess.run(
        [JUDGELAB, "serve", "--workers"], cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 2 and "--workers" in out.stderr and "Traceback" not in out.stderr


def test_every_backend_variable_has_a_flag_or_is_a_secret():
    """A variable the backend (or the schema core it reads) starts to read without a flag fails here."""
    read: set[str] = set()
    for path in [*(ROOT / "backend").rglob("*.py"), *(ROOT / "configs").rglob("*.py")]:
        if path != ROOT / "backend" / "cli.py":
            read |= set(re.findall(r'"((?:JUDGELAB|LABEL_STUDIO)_[A-Z0-9_]*[A-Z0-9])"', path.read_text()))
    flagged = {o.env for o in OPTIONS}
    assert read - flagged - set(SECRETS) == set()
    assert flagged - read == set()


def sample_value(option) -> tuple[str, object]:
    """A valid value for a flag (as typed) and what the setting becomes."""
    default = BackendSettings()
    for part in option.setting.split("."):
        default = getattr(default, part)
    if isinstance(default, bool):
        return ("false", False) if default else ("true", True)
    if option.choices:
        return option.choices[-1], option.choices[-1]
    if isinstance(default, int):
        return "7", 7
    if isinstance(default, float):
        return "7.5", 7.5
    if "url" in option.flag:
        return "http://example.test:1234/v1", "http://example.test:1234/v1"
    return "some-value", "some-value"


@pytest.mark.parametrize("option", [o for o in OPTIONS if o.setting], ids=lambda o: o.flag)
def test_each_flag_sets_its_setting_and_beats_its_variable(option):
    typed, expected = sample_value(option)
    env = {option.env: "ignored"} | ({"JUDGELAB_BASIC_AUTH_PASS": "pw"} if "auth" in option.flag else {})
    settings = BackendSettings.from_env(environment([option.flag, typed], env))
    value = settings
    for part in option.setting.split("."):
        value = getattr(value, part)
    assert value == expected


@pytest.mark.parametrize("option", [o for o in OPTIONS if o.setting], ids=lambda o: o.env)
def test_each_variable_sets_its_setting_without_its_flag(option):
    typed, expected = sample_value(option)
    env = {option.env: typed} | ({"JUDGELAB_BASIC_AUTH_PASS": "pw"} if "auth" in option.flag else {})
    assert attrgetter(option.setting)(BackendSettings.from_env(environment([], env))) == expected
    assert attrgetter(option.setting)(BackendSettings.from_env({})) == attrgetter(option.setting)(BackendSettings())


def test_each_secret_reaches_its_setting_and_has_no_flag():
    secrets = {
        "JUDGELAB_BASIC_AUTH_PASS": "s3cret-1",
        "JUDGELAB_LLM_API_KEY": "s3cret-2",
        "LABEL_STUDIO_API_KEY": "s3cret-3",
    }
    settings = BackendSettings.from_env({"JUDGELAB_BASIC_AUTH_USER": "ls", **secrets})
    assert (settings.basic_auth_pass, settings.llm.api_key, settings.label_studio_api_key) == tuple(secrets.values())
    assert set(SECRETS) == set(secrets)
    assert "s3cret" not in repr(settings)
    with pytest.raises(click.UsageError):
        environment(["--basic-auth-pass", "pw"], {})


@pytest.mark.parametrize(
    "args, env, message",
    [
        (["--port", "x"], {}, "JUDGELAB_BACKEND_PORT must be an integer, got 'x'"),
        ([], {"JUDGELAB_WORKERS": "0"}, "JUDGELAB_WORKERS must be at least 1, got '0'"),
        (["--fetch-local-files", "maybe"], {}, "JUDGELAB_FETCH_LOCAL_FILES must be true or false"),
        (["--annotator", "llm"], {}, "JUDGELAB_LLM_BASE_URL is not set"),
        ([], {"JUDGELAB_BASIC_AUTH_USER": "ls"}, "JUDGELAB_BASIC_AUTH_PASS is empty"),
        ([], {"LABEL_STUDIO_URL": "ftp://ls"}, "LABEL_STUDIO_URL"),
        ([], {"JUDGELAB_ANNOTATOR": "bogus"}, "Invalid value for JUDGELAB_ANNOTATOR: 'bogus'"),
        (["--log-level", "verbose"], {}, "Invalid value for '--log-level': 'verbose'"),
    ],
)
def test_a_bad_setting_stops_the_backend_with_exit_code_2_and_says_why(args, env, message):
    out = subprocess.run(
        [sys.executable, "-m", "judgelab.backend", *args],
        cwd=ROOT,
        env=clean_env(JUDGELAB_BACKEND_PORT=str(free_port()), **env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and message in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and "Uvicorn running" not in out.stderr


def test_the_readme_flags_table_names_every_flag_and_variable():
    section, llm = page_text("backend.md"), page_text("llm.md")
    for option in OPTIONS:
        where = llm if option.flag.startswith(("--llm", "--cache")) else section
        assert f"`{option.env}`" in where, option.env
        assert f"`{option.flag}`" in section or option.flag.startswith(("--llm", "--cache")), option.flag


# ---------------------------------------------------------------------------- the README's commands


def readme_commands() -> list[str]:
    """Every ``judgelab serve`` command in the README's bash blocks, continuation lines joined;
    one of a command shown both as ``judgelab`` (an activated venv) and ``.venv/bin/judgelab``."""
    commands: dict[str, str] = {}
    for block in re.findall(r"```bash\n(.*?)```", README, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = " ".join(line.split(" #", 1)[0].split())
            if re.search(r"(^|\s|/)judgelab serve\b", line):
                commands.setdefault(line.replace(".venv/bin/judgelab", "judgelab"), line)
    return list(commands.values())


COMMANDS = readme_commands()


def test_the_readme_shows_serve_commands():
    assert len(COMMANDS) >= 6, COMMANDS
    assert any("--llm-concurrency 8" in c for c in COMMANDS)


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_serve_command_runs_as_written(command, tmp_path):
    """Run in a folder whose ``.venv`` is this virtualenv, with ``.venv/bin`` on PATH (the README's
    CLI block activates it), and the port from JUDGELAB_BACKEND_PORT so tests do not collide."""
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))
    env = {"PATH": f"{tmp_path / '.venv' / 'bin'}:{os.environ.get('PATH', '')}", "TOKEN": "0123456789abcdef"}
    args = shlex.split(command)
    if "--help" in args:
        out = subprocess.run(
            ["bash", "-c", command], cwd=tmp_path, env=clean_env(**env), capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0 and "Usage: judgelab serve" in out.stdout, out.stderr
        return
    flag = {a: args[i + 1] for i, a in enumerate(args[:-1]) if a.startswith("--")}
    base_url = flag.get("--llm-base-url", "")
    local = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/v1", base_url)
    sim = LLMSim(answer='{"annotations": [], "impression": 4}', port=int(local.group(1))) if local else None
    if sim is not None and not port_is_free(sim.port):
        sim = None  # someone serves that port (a real Ollama?): the backend is still checked
    if sim is not None:
        sim.start()
    try:
        with start_backend(tmp_path / "backend.log", ["bash", "-c", command], cwd=tmp_path, **env) as backend:
            health = httpx.get(f"{backend.url}/health", timeout=10, verify=tls_context()).json()
            assert health["annotator"] == flag.get("--annotator", "offline")
            metrics = httpx.get(f"{backend.url}/metrics", timeout=10, verify=tls_context()).text
            (info,) = samples(metrics, "judgelab_backend_info")
            assert f'llm_model="{flag.get("--llm-model", "")}"' in info
            setup = httpx.post(
                f"{backend.url}/setup", json={"project": "1.1", "schema": HOTEL_XML}, timeout=30, verify=tls_context()
            )
            assert setup.json()["model_version"].startswith(f"judgelab-{health['annotator']}-")
            if sim is not None or health["annotator"] == "offline":
                response = httpx.post(
                    f"{backend.url}/predict", json=predict_body([hotel_task(1)]), timeout=120, verify=tls_context()
                )
                (prediction,) = response.json()["results"]
                assert "result" in prediction, prediction
            if sim is not None:
                (request,) = sim.chat_requests
                assert request.body["model"] == flag["--llm-model"]
            if "--workers" in flag:
                pids = workers_answering(backend, int(flag["--workers"]))
                assert len(pids) == int(flag["--workers"]), pids
    finally:
        if sim is not None:
            sim.stop()


def workers_answering(backend: BackendProcess, wanted: int, within: float = 60.0) -> set[str]:
    """The pids of the workers answering new connections, asked until ``wanted`` answered or
    ``within`` seconds passed: the first worker answers ``/health`` while the others may still be
    starting (a new connection costing a millisecond, 60 in a row could all reach the first)."""
    pids: set[str] = set()
    deadline = time.monotonic() + within
    while len(pids) < wanted and time.monotonic() < deadline:
        pids.add(pid_of(backend))
        time.sleep(0.05)
    return pids


def pid_of(backend: BackendProcess) -> str:
    """The pid of the worker that answers a new connection."""
    metrics = httpx.get(f"{backend.url}/metrics", timeout=10, verify=tls_context()).text
    return re.search(r'judgelab_backend_info\{[^}]*pid="(\d+)"', metrics).group(1)


# ---------------------------------------------------------------------------- workers share the cache


def test_two_workers_share_the_llm_response_cache(tmp_path):
    tasks = [hotel_task(i) for i in range(16)]
    with LLMSim(answer='{"annotations": [], "impression": 5}', latency=0.05) as sim:
        command = [
            JUDGELAB,
            "serve",
            "--workers",
            "2",
            "--annotator",
            "llm",
            "--llm-base-url",
            sim.url,
            "--llm-model",
            "sim-model",
            "--cache-path",
            str(tmp_path / "cache.sqlite"),
            "--predict-deadline",
            "60",
        ]
        with start_backend(tmp_path / "backend.log", command) as backend:

            def round_of_predicts() -> list[dict]:
                results: list = [None] * len(tasks)

                def one(i: int) -> None:  # a connection of its own: any worker may take it
                    response = httpx.post(
                        f"{backend.url}/predict", json=predict_body([tasks[i]]), timeout=120, verify=tls_context()
                    )
                    results[i] = response.json()["results"][0]

                threads = [threading.Thread(target=one, args=(i,)) for i in range(len(tasks))]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                return results

            first = round_of_predicts()
            assert all("result" in p for p in first), first
            asked = sim.count
            assert asked == len(tasks)
            second = round_of_predicts()
            third = round_of_predicts()
            assert second == first and third == first
            assert sim.count == asked, "a worker asked the LLM again for an answer the other had cached"
            # whichever worker answers the scrape counts the cache hits of both
            hits: dict[str, float] = {}
            for _ in range(200):
                metrics = httpx.get(f"{backend.url}/metrics", timeout=10, verify=tls_context()).text
                pid = re.search(r'judgelab_backend_info\{[^}]*pid="(\d+)"', metrics).group(1)
                hits[pid] = samples(metrics, "judgelab_llm_cache_hits_total")[""]
                if len(hits) == 2:
                    break
            assert list(hits.values()) == [2 * len(tasks)] * 2, hits
            assert "continuing without it" not in backend.log() and "cannot be opened" not in backend.log()


def serve_llm(sim: LLMSim, tmp_path: Path, *extra: str) -> list[str]:
    """``judgelab serve --workers 2`` with the LLM annotator on ``sim`` and one cache file."""
    return [
        *(JUDGELAB, "serve", "--workers", "2", "--annotator", "llm", "--llm-base-url", sim.url),
        *("--llm-model", "sim-model", "--cache-path", str(tmp_path / "cache.sqlite"), *extra),
    ]


def post_at_once(url: str, bodies: list[dict]) -> list[dict | None]:
    """The ``/predict`` bodies sent together, each on a connection of its own (any worker may
    take it); each call's answer, or None when it got none."""
    answers: list[dict | None] = [None] * len(bodies)

    def one(i: int) -> None:
        response = httpx.post(f"{url}/predict", json=bodies[i], timeout=120, verify=tls_context())
        answers[i] = response.json() if response.status_code == 200 else None

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


def test_overlapping_predicts_pay_for_each_distinct_prompt_once_across_two_workers(tmp_path):
    """30 calls sent at once, 4 tasks each over 20 distinct prompts (each prompt in 6 calls): an
    identical request is asked once whichever worker or thread holds it, the others wait for its
    answer (they used to ask too, up to 6 requests per prompt)."""
    prompts, per_call = 20, 4
    bodies = [
        predict_body([hotel_task((c * per_call + k) % prompts) | {"id": c * per_call + k} for k in range(per_call)])
        for c in range(30)
    ]
    with LLMSim(answer='{"annotations": [], "impression": 5}', latency=1.0) as sim:
        command = serve_llm(sim, tmp_path, "--predict-deadline", "60")
        with start_backend(tmp_path / "backend.log", command) as backend:
            answers = post_at_once(backend.url, bodies)
        per_prompt = Counter(r.last_user_text for r in sim.chat_requests)
    assert all(a is not None and all("result" in p for p in a["results"]) for a in answers), answers
    assert len(per_prompt) == prompts
    assert max(per_prompt.values()) == 1, f"{sim.count} requests for {prompts} prompts: {sorted(per_prompt.values())}"


def test_a_failed_request_lets_the_calls_waiting_for_it_ask_again(tmp_path):
    """The first request for a prompt fails (a 400, not retried): the calls that waited for it
    are not failed with it; one of them asks again and every other call gets its answer."""
    task = hotel_task(1)
    with LLMSim(
        answer='{"annotations": [], "impression": 5}', latency=0.5, script=deque([Failure("status", status=400)])
    ) as sim:
        command = serve_llm(sim, tmp_path, "--predict-deadline", "60", "--llm-retries", "0")
        with start_backend(tmp_path / "backend.log", command) as backend:
            answers = post_at_once(backend.url, [predict_body([task]) for _ in range(6)])
    with_result = [a for a in answers if a is not None and "result" in a["results"][0]]
    assert len(with_result) == 5, answers  # only the call whose request failed has a placeholder
    assert sim.count == 2


@pytest.mark.parametrize("annotator", ["offline", "llm"])
def test_a_worker_loads_what_its_first_predict_needs_before_it_serves(tmp_path, annotator):
    """The app a worker serves has imported the SDK's label interface and the annotator's prompt
    tasks (about 1.3 s of imports, several seconds on a busy machine): a worker's first /predict
    used to pay them inside its deadline, and a 3 s deadline could pass before its LLM request
    was sent."""
    late = ["label_studio_sdk.label_interface", *(["judgelab.backend.llm.tasks"] if annotator == "llm" else [])]
    code = (
        "import sys; from judgelab.backend.app import create_app; "
        f"assert not [m for m in {late!r} if m in sys.modules], 'imported before the app'; create_app(); "
        f"print([m for m in {late!r} if m not in sys.modules])"
    )
    env = clean_env(
        JUDGELAB_ANNOTATOR=annotator,
        JUDGELAB_LLM_BASE_URL="http://127.0.0.1:9/v1",
        JUDGELAB_LLM_MODEL="m",
        JUDGELAB_CACHE_PATH=str(tmp_path / "cache.sqlite"),
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", f"not loaded before serving: {out.stdout}"


def test_a_schema_folder_that_cannot_be_read_does_not_stop_a_worker_from_starting(tmp_path):
    """The schemas loaded ahead of the first /predict: a folder of one's own with a schema.yaml
    that is not UTF-8 leaves the backend answering /health, as before it loaded them ahead."""
    bad = tmp_path / "mine" / "broken"
    bad.mkdir(parents=True)
    (bad / "config.xml").write_text("<View/>")
    (bad / "schema.yaml").write_bytes(b"name: \xff\xfe broken\n")
    log = tmp_path / "backend.log"
    with start_backend(log, JUDGELAB_EXTRA_CONFIGS=str(tmp_path / "mine")) as backend:
        assert httpx.get(f"{backend.url}/health", timeout=10, verify=tls_context()).status_code == 200


def test_a_request_that_hangs_holds_no_waiting_call_past_its_deadline(tmp_path):
    """The LLM does not answer the first request for a prompt for two minutes: the calls waiting
    for it, in the same worker or the other, return at their deadline (3 s) as the asking one
    does, while that request is still unanswered (shown by order, not by a clock)."""
    task = hotel_task(1)
    with LLMSim(answer='{"annotations": [], "impression": 5}', script=deque([Failure("hang", seconds=120)])) as sim:
        command = serve_llm(sim, tmp_path, "--predict-deadline", "3", "--llm-retries", "0")
        with start_backend(tmp_path / "backend.log", command) as backend:
            answers = post_at_once(backend.url, [predict_body([task]) for _ in range(6)])
            still_hanging, sent = sim.in_flight, sim.count
    assert all(a is not None and len(a["results"]) == 1 for a in answers), answers
    assert sent >= 1, f"no LLM request was sent before every call's deadline: {answers}"
    assert still_hanging >= 1, "a call waited for the hanging request's answer"


def test_a_killed_worker_does_not_block_its_prompt(tmp_path):
    """A backend killed (SIGKILL) while asking for a prompt leaves its claim in the cache file; a
    backend started on that file answers the prompt at once instead of waiting for the claim to
    lapse (60 s after the killed one's deadline)."""
    task = hotel_task(1)
    with LLMSim(answer='{"annotations": [], "impression": 5}', script=deque([Failure("hang", seconds=120)])) as sim:
        first = [*serve_llm(sim, tmp_path, "--predict-deadline", "60")]
        first[first.index("--workers") + 1] = "1"
        killed = start_backend(tmp_path / "killed.log", first)
        try:

            def ask() -> None:
                with contextlib.suppress(httpx.HTTPError):  # the backend dies under it
                    httpx.post(f"{killed.url}/predict", json=predict_body([task]), timeout=120, verify=tls_context())

            threading.Thread(target=ask, daemon=True).start()
            for _ in range(600):  # the request is at the LLM: its claim is in the file
                if sim.in_flight:
                    break
                threading.Event().wait(0.05)
            assert sim.in_flight == 1
            os.killpg(killed.proc.pid, signal.SIGKILL)
            killed.proc.wait(timeout=30)
        finally:
            killed.stop()
        with start_backend(tmp_path / "backend.log", serve_llm(sim, tmp_path, "--predict-deadline", "10")) as backend:
            answer = httpx.post(
                f"{backend.url}/predict", json=predict_body([task]), timeout=120, verify=tls_context()
            ).json()
    assert "result" in answer["results"][0], answer


def test_the_cache_opens_while_another_process_writes_to_it(tmp_path):
    """Workers starting together on a new cache file: one switching it to WAL while another
    holds a write lock used to get "database is locked" and run without a cache for good."""
    path = tmp_path / "cache.sqlite"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            f"c = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
            "c.execute('CREATE TABLE t (x)'); c.execute('BEGIN IMMEDIATE'); c.execute('INSERT INTO t VALUES (1)')\n"
            "print('locked', flush=True); time.sleep(1.5); c.execute('COMMIT')\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        opened = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys\n"
                "from judgelab.backend.llm.cache import open_cache, SQLiteCache\n"
                f"cache = open_cache({str(path)!r})\n"
                "cache.put('k', 'answer')\n"
                "print(type(cache).__name__, cache.get('k'))\n",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        holder.wait(timeout=30)
    assert opened.stdout.split() == ["SQLiteCache", "answer"], opened.stdout + opened.stderr


# ---------------------------------------------------------------------------- /metrics


def check_exposition(text: str) -> None:
    """The Prometheus text format: HELP and TYPE per family, ``name{labels} value`` samples,
    histogram buckets cumulative and ending at +Inf = _count."""
    families: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            families[name] = kind
        elif line.startswith("# HELP "):
            continue
        else:
            m = re.fullmatch(r'([a-zA-Z_:][\w:]*)(\{(?:[a-zA-Z_]\w*="(?:[^"\\]|\\.)*",?)*\})? (\S+)', line)
            assert m, line
            float(m.group(3).replace("+Inf", "inf"))
            base = re.sub(r"_(bucket|sum|count)$", "", m.group(1))
            assert m.group(1) in families or base in families, line
    for name, kind in families.items():
        if kind == "histogram":
            series: dict[str, list[tuple[float, float]]] = {}
            for labels, value in samples(text, f"{name}_bucket").items():
                le = re.search(r'le="([^"]+)"', labels).group(1)
                rest = re.sub(r',?le="[^"]+",?', ",", labels).replace("{,", "{").replace(",}", "}")
                series.setdefault(rest, []).append((float(le.replace("+Inf", "inf")), value))
            for rest, buckets in series.items():
                counts = [n for _, n in sorted(buckets)]
                assert counts == sorted(counts) and counts[-1] == samples(text, f"{name}_count")[rest], rest


def test_metrics_count_requests_predictions_and_durations(tmp_path):
    with start_backend(tmp_path / "backend.log", JUDGELAB_PREDICT_DEADLINE="30") as backend:
        good = [hotel_task(i) for i in range(3)]
        bad = {"id": 99, "data": {"summary": "no descriptions"}}
        for _ in range(2):
            response = httpx.post(
                f"{backend.url}/predict", json=predict_body([*good, bad]), timeout=60, verify=tls_context()
            )
            assert response.status_code == 200
        httpx.post(f"{backend.url}/predict", content=b"not json", timeout=10, verify=tls_context())
        httpx.get(f"{backend.url}/no/such/path/{os.getpid()}", timeout=10, verify=tls_context())
        text = httpx.get(f"{backend.url}/metrics", timeout=10, verify=tls_context()).text
    check_exposition(text)
    requests = samples(text, "judgelab_requests_total")
    assert requests['{path="/predict",status="200"}'] == 2
    assert requests['{path="/predict",status="400"}'] == 1
    assert requests['{path="other",status="404"}'] == 1  # a random path adds no series of its own
    predictions = samples(text, "judgelab_predictions_total")
    assert predictions['{outcome="predicted"}'] == 6 and predictions['{outcome="failed"}'] == 2
    assert samples(text, "judgelab_request_duration_seconds_count")['{path="/predict"}'] == 3
    assert samples(text, "judgelab_models_cached")[""] == 1
    assert samples(text, "process_resident_memory_bytes")[""] > 10e6


def test_a_scrape_while_a_worker_starts_counts_the_others(tmp_path):
    """A starting worker creates its file of counts empty, then sizes it: a scrape reading it in
    between failed whole (500). It counts the other workers' files."""
    script = (
        "from pathlib import Path; import sys; from judgelab.backend.metrics import Metrics\n"
        "m = Metrics(); m.request_started('/predict'); m.request_finished('/predict', 200, 0.3)\n"
        "(Path(sys.argv[1]) / 'counter_999999.db').touch()  # a worker starting\n"
        "print(m.render())"
    )
    env = clean_env(PROMETHEUS_MULTIPROC_DIR=str(tmp_path))
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert samples(out.stdout, "judgelab_requests_total") == {'{path="/predict",status="200"}': 1.0}


def test_metrics_count_the_requests_of_every_worker(tmp_path):
    """Two workers: a scrape, whichever of them answers it, counts the predicts both answered
    (each on a connection of its own, so either worker may take it)."""
    n = 12
    with start_backend(tmp_path / "backend.log", [JUDGELAB, "serve", "--workers", "2"]) as backend:
        for i in range(n):
            response = httpx.post(
                f"{backend.url}/predict", json=predict_body([hotel_task(i)]), timeout=60, verify=tls_context()
            )
            assert response.status_code == 200
        counted: dict[str, tuple[float, float]] = {}
        for _ in range(200):
            text = httpx.get(f"{backend.url}/metrics", timeout=10, verify=tls_context()).text
            pid = re.search(r'judgelab_backend_info\{[^}]*pid="(\d+)"', text).group(1)
            requests = samples(text, "judgelab_requests_total")['{path="/predict",status="200"}']
            counted[pid] = (requests, samples(text, "judgelab_predictions_total")['{outcome="predicted"}'])
            if len(counted) == 2:
                break
        check_exposition(text)
    assert len(counted) == 2, counted
    assert list(counted.values()) == [(n, n)] * 2, counted
    assert samples(text, "judgelab_request_duration_seconds_count")['{path="/predict"}'] == n


def test_metrics_are_behind_basic_auth(tmp_path):
    with start_backend(
        tmp_path / "backend.log", JUDGELAB_BASIC_AUTH_USER="ls", JUDGELAB_BASIC_AUTH_PASS="pw"
    ) as backend:
        assert httpx.get(f"{backend.url}/metrics", timeout=10, verify=tls_context()).status_code == 401
        assert (
            httpx.get(f"{backend.url}/metrics", auth=("ls", "pw"), timeout=10, verify=tls_context()).status_code == 200
        )


def test_settings_replace_keeps_validation():
    with pytest.raises(ValueError, match="JUDGELAB_BASIC_AUTH_PASS"):
        replace(BackendSettings(), basic_auth_user="ls")
