"""The README's commands, run exactly as written in a shell against the real Label Studio.

The "A study from start to end" block is a project manager's session: custom titles, a CSV saved
from a spreadsheet with 1,000 rows, an earlier round's ratings, a pilot project, A/B group
projects, pre-annotation (the 1,000 tasks by the chunked push), sync and report, with no
traceback anywhere. Every other ``judgelab`` line of the README and of the manual's pages
(``docs/``) is run here or by the test named for it, so a command they show cannot silently stop
working.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from readme_commands import block_after, command_lines
from shared_data import SHARED_DATA, shared_path

SESSION_MARKER = "tests/test_readme.py runs the next block as written"
DOCKER_MARKER = "tests/test_cli_projects.py runs the next block as written"
# the "Other commands" lines (docs/guide.md) this module runs as written (after the session)
OTHER_COMMANDS = [
    "judgelab schemas",
    "judgelab create --samples",
    'judgelab design overlap --title "Noticias 2025 (pilot)" --annotations-per-task 3',
    "judgelab down",
]
SHARED_COMMANDS = ["judgelab load storysumm data/storysumm/storysumm.json --out storysumm-tables"]
# lines that cannot run as written in a test, and what runs their equivalent
NOT_RUNNABLE = {
    "judgelab up": "binds Label Studio to port 8080 and the backend to 9090 of this machine; tests/conftest.py "
    "starts the same servers through the same functions on free ports, and "
    "tests/test_local_stack_database.py runs `up` itself",
}

N_NEWS = 1000
MODELS = ["gpt-4o", "claude", "llama3", "human"]


def _news_csv(path: Path) -> None:
    """1,000 news summaries as a spreadsheet in a Spanish locale saves them: semicolons between
    cells, UTF-8 with a byte order mark, CRLF line ends, quoted cells holding quotes."""
    lines = ["id;title;article;summary;model"]
    for i in range(N_NEWS):
        article = f'El pleno aprobó ayer, por {i % 17 + 9} votos, el plan "Movilidad {i}" de {i + 3} millones.'
        summary = f"Se aprueba el plan de movilidad {i}, dotado con {i + 3} millones."
        cells = [f"n{i:04d}", f"Plan {i}", article, summary, MODELS[i % len(MODELS)]]
        lines.append(";".join('"' + c.replace('"', '""') + '"' if (";" in c or '"' in c) else c for c in cells))
    path.write_bytes(("\ufeff" + "\r\n".join(lines) + "\r\n").encode("utf-8"))


def _earlier_round(path: Path) -> None:
    rows = ["task,annotator,item,value"]
    for i in range(20):
        for rater, shift in (("ana", 0), ("luis", i % 2)):
            for item in ("Coherence", "Consistency", "Fluency", "Relevance", "5W"):
                rows.append(f"n{i:04d},{rater},{item},{4 + shift if i % 3 else 3}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


def _hotels(folder: Path) -> None:
    rows = ["id,descriptions,summary"]
    for i in range(14):
        rows.append(
            f"h{i:02d},Hotel {i} sits by the sea and has {i + 10} rooms.,Hotel {i} has {i + 10} rooms by the sea."
        )
    (folder / "hoteles.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    checks = [
        {"id": "ok", "descriptions": "A quiet inn.", "summary": "A quiet inn.", "check": "error_free"},
        {
            "id": "hudson",
            "descriptions": "Apartments in Dubai with a pool.",
            "summary": "Enjoy sweeping views across the Hudson River to the Manhattan skyline.",
            "check": "obvious_incorrect",
            "reference": "Hudson River",
        },
    ]
    (folder / "checks.json").write_text(json.dumps(checks), encoding="utf-8")


def _judgelab_dir() -> str:
    exe = shutil.which("judgelab", path=str(Path(sys.executable).parent)) or shutil.which("judgelab")
    assert exe, "the judgelab command is not installed"
    return str(Path(exe).parent)


def run_line(line: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """One README line in bash, as a user types it; it must succeed without a traceback."""
    done = subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert "Traceback" not in done.stdout + done.stderr, f"{line}\n{done.stderr}"
    assert done.returncode == 0, f"{line}\nstdout: {done.stdout}\nstderr: {done.stderr}"
    return done


def user_env(stack) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGELAB_", "LABEL_STUDIO_"))}
    env.update(
        {
            "PATH": _judgelab_dir() + os.pathsep + env.get("PATH", ""),
            "JUDGELAB_LS_URL": stack.url,
            "JUDGELAB_LS_TOKEN": stack.creds.token,
            "JUDGELAB_BACKEND_URL": stack.backend_url,
        }
    )
    if os.environ.get("PYTHONPATH"):  # the checkout under test (scripts/editable)
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


@pytest.fixture(scope="module")
def session(live_stack, tmp_path_factory):
    """The README's session, run once: its outputs by line, the folder it ran in, how long it took."""
    folder = tmp_path_factory.mktemp("pm-session")
    _news_csv(folder / "noticias.csv")
    _earlier_round(folder / "ronda0.csv")
    _hotels(folder)
    env = user_env(live_stack)
    lines = [line for line in block_after(SESSION_MARKER) if line]  # the comment lines are people's work
    outputs, seconds, between = {}, {}, {}
    for line in lines:
        started = time.monotonic()
        outputs[line] = run_line(line, folder, env)
        seconds[line] = time.monotonic() - started
        for start, people_work in PEOPLE_WORK.items():  # what the README's comment lines say people do
            if line.startswith(start):
                started = time.monotonic()
                between[start] = people_work(live_stack.client)
                seconds[f"(people) {people_work.__doc__.split('.')[0]}"] = time.monotonic() - started
    return {"outputs": outputs, "folder": folder, "env": env, "seconds": seconds, "people": between}


SAMPLE_TITLE = "Noticias 2025 (human sample)"
SAMPLE_RATERS = ("marta@example.org", "pablo@example.org")
ADJUDICATOR = "lead@example.org"


def _ratings(key: str, rater: int) -> list[dict]:
    """A rater's five ratings of task ``key`` (``n0123``): summaries of even rows rate a point
    higher; the second rater is a point lower on Coherence on every third task."""
    from judgelab.configs.schema import get_schema

    i = int(key.lstrip("n"))
    criteria = get_schema("likert_rubric_es").items_of_kind("ordinal")
    scores = {c: 3 + (i % 2 == 0) + (i * 7 + k * 5) // 3 % 2 for k, c in enumerate(criteria)}
    if rater == 1 and i % 3 == 0:
        scores[criteria[0]] -= 1
    return [
        {"from_name": c, "to_name": "summary", "type": "choices", "value": {"choices": [str(v)]}}
        for c, v in scores.items()
    ]


def _user_ids(client) -> dict[str, int]:
    return {u.email: u.id for u in client.users.list()}


def _label_the_sample(client) -> dict[str, int]:
    """marta and pablo label the human sample. Through the API, as the labeling UI saves them."""
    from concurrent.futures import ThreadPoolExecutor

    users = _user_ids(client)
    sample = _project(client, SAMPLE_TITLE)
    keys = {task.meta["judgelab_key"]: task.id for task in client.tasks.list(project=sample.id, fields="all")}

    def label(key: str, rater: int) -> None:
        client.annotations.create(id=keys[key], result=_ratings(key, rater), completed_by=users[SAMPLE_RATERS[rater]])

    with ThreadPoolExecutor(4) as pool:  # several people at once
        list(pool.map(label, [key for key in keys for _ in SAMPLE_RATERS], [r for _ in keys for r in (0, 1)]))
    return keys


def _adjudicate(client) -> dict[str, int]:
    """lead answers the adjudication. Through the API, with the first rater's answers."""
    lead = _user_ids(client)[ADJUDICATOR]
    adjudication = _project(client, f"{SAMPLE_TITLE} (adjudication)")
    keys = {}
    for task in client.tasks.list(project=adjudication.id, fields="all"):
        keys[task.meta["judgelab_key"]] = task.id
        client.annotations.create(id=task.id, result=_ratings(task.meta["judgelab_key"], 0), completed_by=lead)
    return keys


# after the README line that starts so, what its next comment line says people do
PEOPLE_WORK = {
    "judgelab annotators add": _label_the_sample,
    f'judgelab design adjudicate --title "{SAMPLE_TITLE}" --adjudicator': _adjudicate,
}


def _project(client, title: str):
    (project,) = [p for p in client.projects.list() if p.title == title]
    return client.projects.get(id=project.id)


def _line(session, start: str) -> subprocess.CompletedProcess:
    (found,) = [out for line, out in session["outputs"].items() if line.startswith(start)]
    return found


@pytest.mark.integration
def test_the_readme_session_runs_start_to_end(session, live_stack):
    from importlib.metadata import version

    from judgelab.sync.prediction_status import missing_version

    client = live_stack.client
    print(f"\nthe README session took {sum(session['seconds'].values()):.0f} s:")
    for line, seconds in session["seconds"].items():
        print(f"  {seconds:6.1f} s  {line}")
    assert _line(session, "judgelab --version").stdout == f"judgelab {version('judgelab')}\n"
    first_import = _line(session, 'judgelab import --title "Noticias 2025" --schema').stdout
    assert f"noticias.csv: {N_NEWS} task(s); {N_NEWS} imported, 0 already" in first_import
    assert "'Noticias 2025': 2 annotation(s) per task on 100% of tasks" in first_import
    pilot_out = _line(session, "judgelab design pilot").stdout
    assert f"pilot of 30 of {N_NEWS} likert_rubric_es task(s), stratified by model" in pilot_out
    rated = _line(session, 'judgelab import --title "Noticias 2025" --annotations').stdout
    assert f"0 imported, {N_NEWS} already" in rated and "40 annotation(s) added, 0 already there" in rated
    news = _project(client, "Noticias 2025")
    pilot = _project(client, "Noticias 2025 (pilot)")
    assert (news.task_number, pilot.task_number) == (N_NEWS, 30)
    assert pilot.maximum_annotations == 2
    assert (news.maximum_annotations, news.overlap_cohort_percentage) == (2, 100)  # --overlap 2

    preannotated = _line(session, 'judgelab preannotate --title "Noticias 2025"').stdout
    assert f"{N_NEWS}/{N_NEWS} tasks have a prediction" in preannotated
    assert f"pushed by judgelab in chunks; this run added {N_NEWS} predictions, 0 task(s) still without one" in (
        preannotated
    )
    assert "30/30 tasks have a prediction" in preannotated
    assert "via Label Studio's 'Retrieve predictions'; this run added 30 predictions, 0 task(s)" in preannotated
    for project in (news, pilot):
        version = client.projects.get(id=project.id).model_version
        missing, total = missing_version(client, project.id, version)
        assert missing == [] and total == project.task_number
        assert sum(1 for _ in client.predictions.list(project=project.id)) == total, "one prediction per task"

    groups = json.loads(_line(session, 'judgelab preannotate --title "Hotels 2025 (group A)"').stdout)["projects"]
    assert [p["title"] for p in groups] == ["Hotels 2025 (group A)", "Hotels 2025 (group B)"]
    assert all(p["tasks"] == p["predicted"] > 0 and p["schema"] == "hotel_spans" for p in groups)
    for group in groups:  # one batch of seed 004 per group: its tasks, both attention checks, its wording
        data = [t.data for t in client.tasks.list(project=group["id"], fields="all")]
        assert {d["group"] for d in data} == {group["title"][-2]}
        assert sorted(d["check"] for d in data if d["check"]) == ["error_free", "obvious_incorrect"]

    tables = session["folder"] / "judgelab-data"
    judgments = pd.read_parquet(tables / "judgments.parquet")
    human = judgments[(judgments.source == "human") & (judgments.project == news.id)]
    assert set(human.annotator) == {"ana@judgelab.local", "luis@judgelab.local"}
    assert len(human) == 20 * 2 * 5
    tasks = pd.read_parquet(tables / "tasks.parquet")
    sample = _project(client, SAMPLE_TITLE)
    assert tasks.groupby("project").size().to_dict() == {
        news.id: N_NEWS,
        sample.id: N_SAMPLE,
        pilot.id: 30,
        groups[0]["id"]: groups[0]["tasks"],
        groups[1]["id"]: groups[1]["tasks"],
    }
    index = session["folder"] / "judgelab-report" / "index.html"
    reported = _line(session, "judgelab report").stdout
    assert index.exists() and f"({N_NEWS} tasks)" in reported and "(30 tasks)" in reported
    (html,) = [line.split(": ")[-1].rsplit(" (", 1)[0] for line in reported.splitlines() if f"({N_NEWS} tasks)" in line]
    agreement = pd.read_csv(session["folder"] / Path(html).parent / "agreement.csv")
    assert "Coherence" in set(agreement["item"])
    _the_human_sample_and_its_estimates(session, news, sample, tasks, judgments, html)


N_SAMPLE = 48  # the README's --budget


def _the_human_sample_and_its_estimates(session, news, sample, tasks, judgments, html) -> None:
    """The sample drawn per summariser, labelled twice, its disagreements adjudicated and collected as
    ground truth; the report's estimates of "Noticias 2025" count the sample's labels."""
    drawn = _line(session, "judgelab design sample").stdout
    assert f"of {N_SAMPLE} of {N_NEWS} task(s) (budget {N_SAMPLE}, design stratified" in drawn
    mine = tasks[tasks["project"] == news.id]
    sampled = mine["sampled"].fillna(False).astype(bool)  # only the sampled tasks record the draw
    assert int(sampled.sum()) == N_SAMPLE and mine.loc[sampled, "inclusion_probability"].notna().all()
    assert mine.loc[~sampled, "inclusion_probability"].isna().all()
    per_model = mine[sampled].groupby("model").size()
    assert set(per_model.index) == set(MODELS) and per_model.min() >= 10, per_model.to_dict()
    labelled, disputed = session["people"].values()
    assert len(labelled) == N_SAMPLE and sorted(disputed) == sorted(k for k in labelled if int(k[1:]) % 3 == 0)
    collected = _line(session, f'judgelab design adjudicate --title "{SAMPLE_TITLE}" --collect').stdout
    assert f"{len(disputed)} ground-truth annotation(s) added" in collected
    gold = judgments[(judgments["project"] == sample.id) & judgments["ground_truth"].astype(bool)]
    assert set(gold["annotator"]) == {ADJUDICATOR} and gold["task_id"].nunique() == len(disputed)
    estimates = pd.read_csv(session["folder"] / Path(html).parent / "estimates.csv")
    coherence = estimates[estimates["quantity"] == "Coherence (mean)"].set_index("model")
    assert set(coherence.index) == set(MODELS)
    assert (coherence["n_labeled"] >= per_model.reindex(coherence.index)).all()  # the sample's labels count
    assert coherence["ppi_estimate"].notna().all() and (coherence["weights"] == "inclusion probabilities").all()
    report = (session["folder"] / html).read_text(encoding="utf-8")
    assert "Study estimates" in report and f"The labels of the human-sample project {sample.id} count here" in report


@pytest.mark.integration
def test_the_readme_session_run_again_adds_nothing(session, live_stack):
    """Safe to rerun: the same lines again import, annotate and pre-annotate nothing twice."""
    client = live_stack.client
    news = _project(client, "Noticias 2025")
    before = (news.task_number, news.total_annotations_number, news.total_predictions_number)
    lines = block_after(SESSION_MARKER)
    expected = {  # the import with the earlier round's ratings re-reads the 1,000 tasks too
        lines[3]: f"0 imported, {N_NEWS} already",
        lines[5]: f"{N_NEWS}/{N_NEWS} tasks have a prediction",
    }
    outputs = {line: run_line(line, session["folder"], session["env"]).stdout for line in expected}
    for line, says in expected.items():
        assert says in outputs[line], line
    assert "0 annotation(s) added, 40 already there" in outputs[lines[3]]
    again = _project(client, "Noticias 2025")
    assert (again.task_number, again.total_annotations_number, again.total_predictions_number) == before
    assert before == (N_NEWS, 40, N_NEWS)


@pytest.mark.integration
def test_the_readme_other_commands_run_as_written(session, live_stack):
    client = live_stack.client
    for line in OTHER_COMMANDS:
        out = run_line(line, session["folder"], session["env"]).stdout
        assert out.strip(), line
    assert _project(client, "Noticias 2025 (pilot)").maximum_annotations == 3
    assert len([p for p in client.projects.list() if p.title == "Rúbrica Likert de resúmenes (es)"]) == 1


def test_the_readme_commands_that_read_shared_data_run_as_written(tmp_path):
    """``data/`` as the manual means it: the published data sets in a folder of the user's own."""
    shared_path("storysumm", "storysumm.json")
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "data").symlink_to(SHARED_DATA)
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGELAB_")}
    env["PATH"] = _judgelab_dir() + os.pathsep + env.get("PATH", "")
    for line in SHARED_COMMANDS:
        out = run_line(line, tmp_path / "work", env).stdout
        assert "loaded storysumm" in out


def _run_by_other_tests() -> set[str]:
    """Lines other modules run as written: every ``judgelab serve`` line
    (tests/test_backend_serve.py, an activated venv's ``judgelab`` for ``.venv/bin/judgelab``) and
    the judges' block (tests/test_llm_judges_e2e.py), the anchoring block (tests/test_arms.py),
    the annotators' block (tests/test_cli_people.py), the rubber-stamping block
    (tests/test_rubber_stamping.py), the adjudication block (tests/test_adjudication.py), the human
    sample's (tests/test_design_sample.py), the batch APIs' two blocks (tests/test_llm_batch.py)."""
    from test_backend_serve import COMMANDS as SERVE
    from test_llm_judges_e2e import readme_commands as judges_block

    serve = {line.replace(".venv/bin/judgelab", "judgelab") for line in SERVE}
    shown = {line for line in command_lines() if line.replace(".venv/bin/judgelab", "judgelab") in serve}
    from test_adjudication import ADJUDICATION_MARKER
    from test_arms import ARMS_MARKER
    from test_cli_people import COMMANDS as ANNOTATORS
    from test_design_sample import SAMPLE_MARKER
    from test_llm_batch import BATCH_MARKER, FILE_MARKER
    from test_rubber_stamping import DOCS_MARKER as STAMPING_MARKER

    judges = {" ".join(line.split()) for line in judges_block("## Several samples and several judges")}
    markers = (ARMS_MARKER, STAMPING_MARKER, ADJUDICATION_MARKER, SAMPLE_MARKER, BATCH_MARKER, FILE_MARKER)
    marked = set().union(*(block_after(marker) for marker in markers))
    return shown | judges | marked | set(ANNOTATORS)


def _exercised() -> set[str]:
    return {
        *block_after(SESSION_MARKER),
        *block_after(DOCKER_MARKER),
        *OTHER_COMMANDS,
        *SHARED_COMMANDS,
        *NOT_RUNNABLE,
        *_run_by_other_tests(),
    }


def test_every_command_the_readme_shows_is_run_by_a_test():
    """The README's and the manual's (docs/**/*.md) fenced ``judgelab`` lines."""
    shown = command_lines()
    assert len(shown) > 20, "the judgelab commands of the README and docs/ were not found"
    exercised = {" ".join(line.split()) for line in _exercised()}
    missing = [line for line in shown if " ".join(line.split()) not in exercised]
    assert not missing, "README/docs lines no test runs as written (add them to tests/test_readme.py):\n" + "\n".join(
        missing
    )
    for line, reason in NOT_RUNNABLE.items():
        assert line in shown, f"{line!r} is no longer in the README or docs/: drop it from NOT_RUNNABLE"
        for path in (p for p in reason.split() if p.startswith("tests/")):
            assert (Path(__file__).parents[1] / path.strip("`,;:")).exists(), path
