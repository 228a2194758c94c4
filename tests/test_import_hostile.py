"""`judgelab import --annotations` while another import runs and while Label Studio is busy (its
writes answered 500 with its HTML error page, or their answers lost): every task, account and
annotation is added once, a failure that does not pass is one line saying what happened and what
to do, and Label Studio's error page is never printed. Against the session's real Label Studio,
through the real CLI (the failures come from a proxy in front of it, tests/fault_proxy.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import pytest
from fault_proxy import ScriptedFaultProxy

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-c", "from judgelab.sync.cli import main; main()"]
CRITERIA = ("Coherence", "Consistency", "Fluency", "Relevance", "5W")
N_TASKS = 30
HTML = re.compile(r"<\s*(!doctype|html|head|body|title|div|pre)\b", re.IGNORECASE)


def _files(folder: Path, tag: str, raters: tuple[str, ...]) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    tasks = ["id,article,summary"] + [
        f"{tag}-{i},Noticia {i} sobre el plan {tag}.,Resumen {i}." for i in range(N_TASKS)
    ]
    ratings = ["task,annotator,item,value"] + [
        f"{tag}-{i},{rater},{item},{1 + (i + len(rater)) % 5}"
        for i in range(N_TASKS)
        for rater in raters
        for item in CRITERIA
    ]
    (folder / "tasks.csv").write_text("\n".join(tasks) + "\n", encoding="utf-8")
    (folder / "ratings.csv").write_text("\n".join(ratings) + "\n", encoding="utf-8")
    return folder / "tasks.csv", folder / "ratings.csv"


def _env(stack, url: str | None = None) -> dict[str, str]:
    return {
        **os.environ,
        "JUDGELAB_LS_URL": url or stack.url,
        "JUDGELAB_LS_TOKEN": stack.creds.token,
        "JUDGELAB_HTTP_RETRY_PAUSE": "0.05",
    }


def _import(title: str, *files: Path, annotations: Path | None = None) -> list[str]:
    return (
        [*CLI, "import", "--schema", "likert_rubric_es", "--title", title]
        + (["--annotations", str(annotations)] if annotations else [])
        + [str(f) for f in files]
    )


def _run(stack, command: list[str], url: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=ROOT, env=_env(stack, url), capture_output=True, text=True, timeout=600)


def _stored(stack, title: str) -> tuple[int, int, Counter]:
    """(projects with the title, their tasks, annotations per (task key, rater id))."""
    client = stack.client
    projects = [p for p in client.projects.list() if p.title == title]
    tasks = [t for p in projects for t in client.tasks.list(project=p.id, fields="all")]
    per = Counter((t.meta["judgelab_key"], a["completed_by"]) for t in tasks for a in t.annotations or [])
    return len(projects), len(tasks), per


def _clean(done: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in done.stderr, done.stderr
    assert not HTML.search(done.stdout + done.stderr), done.stdout + done.stderr


def test_two_imports_with_annotations_at_once_add_everything_once(live_stack, tmp_path):
    raters = ("ana", "luis", "eva")
    tasks, ratings = _files(tmp_path, "twice", raters)
    command = _import("Two imports at once", tasks, annotations=ratings)
    runs = [
        subprocess.Popen(
            command, cwd=ROOT, env=_env(live_stack), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    for proc in runs:
        stdout, stderr = proc.communicate(timeout=600)
        done = subprocess.CompletedProcess(command, proc.returncode, stdout, stderr)
        _clean(done)
        assert done.returncode == 0, stdout + stderr
    projects, n_tasks, per = _stored(live_stack, "Two imports at once")
    assert (projects, n_tasks) == (1, N_TASKS)
    assert len(per) == N_TASKS * len(raters) and set(per.values()) == {1}  # one per task and rater


def test_writes_answered_500_or_lost_are_looked_for_then_sent_again(live_stack, tmp_path):
    """Label Studio's error page for the first task import (after the tasks were stored: only the
    answer is lost), for the first account created (before) and for two annotations (one after it
    was stored, one before): both runs end well, with each thing stored once."""
    seen: Counter = Counter()

    def script(method: str, path: str) -> str | None:
        if method != "POST":
            return None
        kind = next(
            (
                k
                for k, pattern in (
                    ("import", r"/api/projects/\d+/import"),
                    ("user", r"/api/users/?$"),
                    ("annotation", r"/api/tasks/\d+/annotations/?$"),
                )
                if re.search(pattern, path)
            ),
            None,
        )
        if kind is None:
            return None
        seen[kind] += 1
        return {
            ("import", 1): "500-after",
            ("user", 1): "500",
            ("annotation", 1): "500-after",
            ("annotation", 3): "500",
        }.get((kind, seen[kind]))

    raters = tuple(f"{name}-{uuid.uuid4().hex[:8]}" for name in ("pilar", "tomas"))  # new accounts, whatever ran before
    tasks, ratings = _files(tmp_path, "busy", raters)
    with ScriptedFaultProxy(live_stack.url, script) as proxy:
        first = _run(live_stack, _import("Busy Label Studio", tasks), url=proxy.url)
        _clean(first)
        assert first.returncode == 0 and f"{N_TASKS} imported" in first.stdout, first.stdout + first.stderr
        second = _run(live_stack, _import("Busy Label Studio", tasks, annotations=ratings), url=proxy.url)
        _clean(second)
        assert second.returncode == 0, second.stdout + second.stderr
        assert f"{N_TASKS * len(raters)} annotation(s) added" in second.stdout
    assert proxy.faults == Counter({"500-after": 2, "500": 2})
    projects, n_tasks, per = _stored(live_stack, "Busy Label Studio")
    assert (projects, n_tasks) == (1, N_TASKS)
    assert len(per) == N_TASKS * len(raters) and set(per.values()) == {1}


def test_a_write_failing_every_time_is_one_line_with_the_status_and_what_to_do(live_stack, tmp_path):
    tasks, ratings = _files(tmp_path, "down", ("rita",))
    assert _run(live_stack, _import("Failing Label Studio", tasks)).returncode == 0

    def script(method: str, path: str) -> str | None:
        return "500" if method == "POST" and "/annotations" in path else None

    with ScriptedFaultProxy(live_stack.url, script) as proxy:
        done = _run(live_stack, _import("Failing Label Studio", tasks, annotations=ratings), url=proxy.url)
    _clean(done)
    assert done.returncode == 1
    message = done.stderr.strip().splitlines()
    assert len(message) == 1 and message[0].startswith("error: "), done.stderr
    assert "HTTP 500" in message[0] and "OperationalError at /api/injected/" in message[0]
    assert "re-run" in message[0]
    assert proxy.faults["500"] >= 2  # sent again before giving up
    assert sum(_stored(live_stack, "Failing Label Studio")[2].values()) == 0


def test_a_big_json_lines_file_checked_in_parts_imports_every_task_once_or_nothing(live_stack, tmp_path):
    """A file over the size that is checked in parts side by side (one per processor): every task
    lands once with its annotations, and a bad line near its end, in the last part, stores nothing
    and is named."""
    from judgelab.sync.importers.generic import PARALLEL_CHECK_BYTES

    raters, n = ("ana", "luis"), 300  # long articles: the size with few tasks to send
    article = "El pleno aprobó el plan de 42 millones, con el voto en contra de la oposición. " * 180
    lines = []
    for i in range(n):
        rating = {"from_name": "coherence", "to_name": "summary", "type": "rating", "value": {"rating": 1 + i % 5}}
        annotations = [{"completed_by": {"email": f"{r}@big.org"}, "result": [rating]} for r in raters]
        task = {"id": f"big-{i}", "article": f"{i}. {article}", "summary": f"Resumen {i}."}
        lines.append(json.dumps({"data": task, "annotations": annotations}, ensure_ascii=False))
    good = tmp_path / "big.jsonl"
    good.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert good.stat().st_size > PARALLEL_CHECK_BYTES
    bad = tmp_path / "big_bad.jsonl"
    bad.write_text("\n".join(lines[:-3] + ['{"data": {"id": "big-x", "article": "A"'] + lines[-2:]) + "\n")

    refused = _run(live_stack, _import("Big file in parts", bad))
    _clean(refused)
    assert refused.returncode == 1 and f"big_bad.jsonl line {n - 2}: invalid JSON" in refused.stderr, refused.stderr
    assert _stored(live_stack, "Big file in parts")[:2] == (0, 0)

    done = _run(live_stack, _import("Big file in parts", good))
    _clean(done)
    assert done.returncode == 0, done.stdout + done.stderr
    projects, n_tasks, per = _stored(live_stack, "Big file in parts")
    assert (projects, n_tasks) == (1, n)
    assert len(per) == n * len(raters) and set(per.values()) == {1}
    (project,) = [p for p in live_stack.client.projects.list() if p.title == "Big file in parts"]
    stored = {t.data["id"]: t.data["article"] for t in live_stack.client.tasks.list(project=project.id, fields="all")}
    assert stored == {f"big-{i}": f"{i}. {article}" for i in range(n)}

    # run again as after a kill: two annotations gone from Label Studio (in the first part and in
    # the last), a rater's answer changed in the file, two tasks more at its end. The annotations
    # of the tasks already there come back from what the check of every part wrote.
    client = live_stack.client
    tasks = {t.data["id"]: t for t in client.tasks.list(project=project.id, fields="all")}
    luis = {u.email: u.id for u in client.users.list()}["luis@big.org"]
    for key in ("big-3", f"big-{n - 1}"):
        (gone,) = [a for a in tasks[key].annotations if a["completed_by"] == luis]
        client.annotations.delete(id=gone["id"])
    changed = json.loads(lines[5])  # ana rated big-5 1 (1 + 5 % 5)
    changed["annotations"][0]["result"][0]["value"]["rating"] = 5
    more = [
        json.dumps({**json.loads(lines[i]), "data": {**json.loads(lines[i])["data"], "id": f"big-more-{i}"}})
        for i in range(2)
    ]
    good.write_text("\n".join([*lines[:5], json.dumps(changed), *lines[6:], *more]) + "\n", encoding="utf-8")
    again = _run(live_stack, [*_import("Big file in parts", good), "--json"])
    _clean(again)
    assert again.returncode == 0, again.stdout + again.stderr
    result = json.loads(again.stdout)
    assert (result["files"][0]["imported"], result["files"][0]["already"]) == (2, n)
    assert {k: result["annotations"][k] for k in ("added", "already", "differ")} == {
        "added": 2 * 2 + 2,
        "already": n * 2 - 2 - 1,
        "differ": 1,
    }
    projects, n_tasks, per = _stored(live_stack, "Big file in parts")
    assert (projects, n_tasks) == (1, n + 2) and len(per) == (n + 2) * len(raters) and set(per.values()) == {1}
    kept = {t.data["id"]: t for t in client.tasks.list(project=project.id, fields="all")}["big-5"]
    ana = {u.email: u.id for u in client.users.list()}["ana@big.org"]
    (theirs,) = [a for a in kept.annotations if a["completed_by"] == ana]
    assert theirs["result"][0]["value"]["rating"] == 1  # Label Studio's answer is kept
