"""The whole study flow against a real Label Studio and the real backend.

Create the five projects from configs/, import their samples (twice: nothing duplicated),
connect the backend, retrieve predictions with Label Studio's own action, post annotations as
two users, sync into tidy tables, and check the tables and the report's figures exactly.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from snapshot_export import pull_tables

from judgelab.configs.label_config import parse_label_config
from judgelab.configs.schema import all_schemas
from judgelab.sync.backend_link import connect_backend, retrieve_predictions
from judgelab.sync.export import read_tables, write_tables
from judgelab.sync.http_retry import tls_context
from judgelab.sync.importers import rows_from_records
from judgelab.sync.projects import ensure_project, import_rows

pytestmark = pytest.mark.integration


def _sample_rows(schema):
    return rows_from_records([(f"samples.json item {i}", t) for i, t in enumerate(schema.samples())], schema)


@pytest.fixture(scope="module")
def study(live_stack):
    """The five projects with their samples, connected to the backend and pre-annotated."""
    client = live_stack.client
    projects, versions = {}, {}
    for schema in all_schemas().values():
        project = ensure_project(client, schema)
        import_rows(client, project.id, _sample_rows(schema))
        link = connect_backend(client, project.id, live_stack.backend_url)
        retrieve_predictions(client, project.id)
        projects[schema.name], versions[schema.name] = project.id, link.model_version
    return {"projects": projects, "versions": versions, "client": client, "stack": live_stack}


def _tasks(client, project_id):
    return list(client.tasks.list(project=project_id, fields="all"))


def test_five_projects_with_their_samples_and_no_duplicates_on_rerun(study):
    client = study["client"]
    assert set(study["projects"]) == {
        "summary_flaws",
        "augmentation_quality",
        "story_consistency",
        "likert_rubric_es",
        "hotel_spans",
    }
    for name, schema in all_schemas().items():
        again = ensure_project(client, schema)
        assert again.id == study["projects"][name] and not again.created
        rows = _sample_rows(schema)
        report = import_rows(client, again.id, rows)
        assert report.imported == 0 and report.skipped_existing == len(schema.samples())
        keys = [t.meta.get("judgelab_key") for t in _tasks(client, again.id)]
        assert sorted(k for k in keys if k in {r.key for r in rows}) == sorted(r.key for r in rows)
        assert len(rows) >= 8
        same_title = [p for p in client.projects.list() if p.title == schema.title]
        assert len(same_title) == 1, f"{name}: one project, not {len(same_title)}"
    hotel = study["projects"]["hotel_spans"]  # an admin renames a project: it is still found
    client.projects.update(id=hotel, title="Hotels, round 2")
    try:
        assert ensure_project(client, all_schemas()["hotel_spans"]).id == hotel
    finally:
        client.projects.update(id=hotel, title=all_schemas()["hotel_spans"].title)


def _check_prediction(schema_name, config, task, prediction):
    data = task.data
    regions = prediction["result"]
    controls = config.expanded_controls(data)
    for region in regions:
        control = controls[region["from_name"]]
        value = region["value"]
        if region["type"] == "labels":
            text = config.object_text(region["to_name"], data)
            assert value["text"] == text[value["start"] : value["end"]]
            assert set(value["labels"]) <= set(control.labels)
        elif region["type"] == "choices":
            allowed = {o["value"] for o in data[control.dynamic]} if control.dynamic else set(control.labels)
            assert set(value["choices"]) <= allowed
        elif region["type"] == "rating":
            assert 1 <= value["rating"] <= int(control.attrs["maxRating"])
    names = {r["from_name"] for r in regions}
    if schema_name == "story_consistency":
        assert {f"verdict_{i}" for i in range(len(data["lines"]))} <= names, "a verdict for every line"
        assert {f"swap_{k}" for k in range(len(data["alternates"]))} <= names
    if schema_name == "likert_rubric_es":
        assert {"Coherence", "Consistency", "Fluency", "Relevance", "5W"} <= names
    if schema_name == "augmentation_quality":
        assert {"SP", "SC"} <= names
    # Since the scores are calibrated, the optional no-errors answers are ticked only when likely enough, so a task
    # may have neither them nor a span; it never has both.
    if schema_name == "hotel_spans":
        assert "impression" in names
        assert not ("no_errors" in names and any(r["type"] == "labels" for r in regions))
    if schema_name == "summary_flaws":
        assert not ("none_identified" in names and any(r["type"] == "labels" for r in regions))
    for region in regions:  # every suggestion carries its calibrated probability
        assert 0.0 <= region["score"] <= 1.0, region
    if regions:
        assert 0.0 <= prediction["score"] <= 1.0


def test_retrieve_predictions_gives_every_task_one_valid_prediction(study):
    client = study["client"]
    schemas = all_schemas()
    for name, project_id in study["projects"].items():
        config = parse_label_config(schemas[name].config_xml)
        version = study["versions"][name]
        assert client.projects.get(id=project_id).model_version == version
        for task in _tasks(client, project_id):
            predictions = [p for p in client.predictions.list(task=task.id)]
            assert [p.model_version for p in predictions] == [version], f"{name} task {task.id}"
            _check_prediction(name, config, task, {"result": predictions[0].result, "score": predictions[0].score})


def test_retrieving_again_adds_no_prediction(study):
    client = study["client"]
    project_id = study["projects"]["hotel_spans"]
    before = sum(len(list(client.predictions.list(task=t.id))) for t in _tasks(client, project_id))
    retrieve_predictions(client, project_id)
    after = sum(len(list(client.predictions.list(task=t.id))) for t in _tasks(client, project_id))
    assert before == after == len(_tasks(client, project_id))


def _second_user(client):
    for user in client.users.list():
        if user.email == "second.annotator@judgelab.local":
            return user
    return client.users.create(
        username="second",
        email="second.annotator@judgelab.local",
        password="second-pass-123",
        first_name="Second",
        last_name="Annotator",
    )


def _choice(from_name, to_name, value):
    return {"from_name": from_name, "to_name": to_name, "type": "choices", "value": {"choices": [value]}}


@pytest.fixture(scope="module")
def annotated(study):
    """Two annotators on the first three Likert tasks and on two hotel tasks, chosen so the
    agreement figures can be computed by hand."""
    client = study["client"]
    admin = client.users.whoami()
    second = _second_user(client)
    likert = sorted(t.id for t in _tasks(client, study["projects"]["likert_rubric_es"]))[:3]
    # (admin, second) ratings of Coherence for the three tasks: agree, agree, disagree
    coherence = [("5", "5"), ("3", "3"), ("4", "2")]
    for task_id, (a, b) in zip(likert, coherence, strict=True):
        for user, value in ((admin, a), (second, b)):
            result = [_choice("Coherence", "summary", value)]
            result += [_choice(c, "summary", "4") for c in ("Consistency", "Fluency", "Relevance", "5W")]
            client.annotations.create(id=task_id, result=result, completed_by=user.id, lead_time=12.5)
    hotel_tasks = sorted(_tasks(client, study["projects"]["hotel_spans"]), key=lambda t: t.id)[:2]
    span_task = hotel_tasks[0]
    summary = span_task.data["summary"]
    words = summary.split()
    phrase = " ".join(words[1:3])
    start = summary.index(phrase)
    region = {
        "id": "r1",
        "from_name": "error",
        "to_name": "summary",
        "type": "labels",
        "value": {"start": start, "end": start + len(phrase), "text": phrase, "labels": ["Incorrect"]},
    }
    note = {
        "id": "r1",
        "from_name": "reason",
        "to_name": "summary",
        "type": "textarea",
        "value": {"start": start, "end": start + len(phrase), "text": ["contradicts the description"]},
    }
    rating = {"from_name": "impression", "to_name": "summary", "type": "rating", "value": {"rating": 2}}
    client.annotations.create(id=span_task.id, result=[region, note, rating], completed_by=admin.id)
    client.annotations.create(id=span_task.id, result=[{**rating, "value": {"rating": 3}}], completed_by=second.id)
    return {
        "likert": likert,
        "coherence": coherence,
        "span_task": span_task,
        "phrase": phrase,
        "start": start,
        "admin": admin,
        "second": second,
    }


def test_sync_writes_tidy_tables_with_annotations_and_predictions(study, annotated, tmp_path):
    client = study["client"]
    tables = pull_tables(client)
    write_tables(tables, tmp_path / "tables", "parquet")
    write_tables(tables, tmp_path / "sqlite", "sqlite")
    sample_keys = {row.key for s in all_schemas().values() for row in _sample_rows(s)}
    study_tasks = tables.tasks[tables.tasks.project.isin(study["projects"].values())]
    assert set(study_tasks.key) >= sample_keys
    for folder in ("tables", "sqlite"):
        loaded = read_tables(tmp_path / folder)
        assert len(loaded.tasks) == len(tables.tasks)
        assert len(loaded.judgments) == len(tables.judgments)
        assert len(loaded.spans) == len(tables.spans)

    j = tables.judgments
    human = j[j.source == "human"]
    likert_project = study["projects"]["likert_rubric_es"]
    coherence = human[(human.project == likert_project) & (human.item == "Coherence")]
    assert len(coherence) == 6
    assert set(coherence.annotator) == {annotated["admin"].email, annotated["second"].email}
    by_task = coherence.pivot(index="task_id", columns="annotator", values="value")
    expected = {t: pair for t, pair in zip(annotated["likert"], annotated["coherence"], strict=True)}
    for task_id, (a, b) in expected.items():
        assert by_task.loc[task_id, annotated["admin"].email] == a
        assert by_task.loc[task_id, annotated["second"].email] == b
    assert set(coherence.lead_time) == {12.5}

    hotel = study["projects"]["hotel_spans"]
    spans = tables.spans[(tables.spans.source == "human") & (tables.spans.project == hotel)]
    assert len(spans) == 1
    span = spans.iloc[0]
    assert (span.start, span.end, span.text, span.label, span.note) == (
        annotated["start"],
        annotated["start"] + len(annotated["phrase"]),
        annotated["phrase"],
        "Incorrect",
        "contradicts the description",
    )
    impressions = human[(human.item == "impression") & (human.project == hotel)].sort_values("annotator")
    assert sorted(impressions.value) == ["2", "3"]

    predicted = j[j.source.str.startswith("model:")]
    for name, project_id in study["projects"].items():
        assert set(predicted[predicted.project == project_id].source) == {f"model:{study['versions'][name]}"}
    story = predicted[predicted.project == study["projects"]["story_consistency"]]
    tasks = tables.tasks[tables.tasks.project == study["projects"]["story_consistency"]]
    expected_lines = sum(len(json.loads(lines)) for lines in tasks["lines"])
    assert story.item.str.fullmatch(r"line_\d+").sum() == expected_lines


def test_report_figures_match_the_annotations(study, annotated, tmp_path):
    from judgelab.analysis.report import build_report

    tables = pull_tables(study["client"])
    schemas = {name: s.meta for name, s in all_schemas().items()}
    build_report(tables.as_dict(), schemas, tmp_path / "report")
    markdown = (tmp_path / "report" / "report.md").read_text()
    agreement = pd.read_csv(tmp_path / "report" / "agreement.csv")
    row = agreement[(agreement.project == study["projects"]["likert_rubric_es"]) & (agreement["item"] == "Coherence")]
    assert len(row) == 1
    # 2 of 3 tasks agree exactly; kappa by hand: p_o = 2/3, categories 5,3,4 (admin) and 5,3,2 (second):
    # p_e = sum_k p_a(k) p_b(k) = (1/3*1/3) [5] + (1/3*1/3) [3] = 2/9, kappa = (2/3 - 2/9) / (1 - 2/9) = 4/7
    assert row["exact_agreement"].iloc[0] == pytest.approx(2 / 3)
    assert row["cohen_kappa"].iloc[0] == pytest.approx(4 / 7)
    assert "Coherence" in markdown
    assert (tmp_path / "report" / "report.html").exists()


def test_the_local_label_studio_sends_nothing_to_sentry(study):
    """Neither the server (its process environment) nor the page it serves has a Sentry DSN; the
    server's analytics are off."""
    import httpx

    stack = study["stack"]
    pid = int((stack.settings.home / "label-studio.pid").read_text())
    environ = dict(item.split("=", 1) for item in Path(f"/proc/{pid}/environ").read_text().split("\0") if "=" in item)
    assert environ.get("SENTRY_DSN") == "" and environ.get("FRONTEND_SENTRY_DSN") == ""
    assert environ.get("COLLECT_ANALYTICS") == "false"  # nor a record of each request to its telemetry
    with httpx.Client(base_url=stack.url, follow_redirects=True, timeout=60, verify=tls_context()) as browser:
        browser.get("/user/login/")
        login = {"email": stack.creds.username, "password": stack.creds.password}
        login["csrfmiddlewaretoken"] = browser.cookies.get("csrftoken")
        browser.post("/user/login/", data=login, headers={"Referer": f"{stack.url}/user/login/"})
        page = browser.get("/projects/")
    assert page.url.path == "/projects/"  # logged in, not sent back to the login page
    assert "sentry_dsn: null" in page.text and "ingest.sentry.io" not in page.text


def test_personal_access_token_works_and_a_wrong_token_is_refused(study):
    from judgelab.sync.client import Connection, SyncError, connect

    client, stack = study["client"], study["stack"]
    for token in client.tokens.list():  # one personal access token per user: start from none
        client.tokens.blacklist(refresh=token.token)
    pat = client.tokens.create().token
    assert pat.count(".") == 2, "a personal access token is a JWT"
    with_pat = connect(Connection(url=stack.url, token=pat))
    assert with_pat.users.whoami().id == client.users.whoami().id
    projects = {p.id: p.title for p in client.projects.list()}
    assert projects and {i: with_pat.projects.get(id=i).title for i in projects} == projects
    with pytest.raises(SyncError, match="refused the token"):
        connect(Connection(url=stack.url, token="not-a-token"))


def test_the_sync_api_authenticates_like_the_sdk(study):
    """``judgelab sync`` talks plain HTTP: a legacy token, a personal access token (exchanged for
    an access token, and again when that one is refused), and a wrong token clearly refused."""
    from judgelab.sync.client import Connection, SyncError
    from judgelab.sync.ls_api import connect_api

    client, stack = study["client"], study["stack"]
    expected = {p.id for p in client.projects.list()}
    legacy = connect_api(Connection(url=stack.url, token=stack.creds.token))
    assert {p["id"] for p in legacy.projects()} == expected
    assert legacy.user_emails()[client.users.whoami().id] == client.users.whoami().email
    for token in client.tokens.list():
        client.tokens.blacklist(refresh=token.token)
    pat = client.tokens.create().token
    api = connect_api(Connection(url=stack.url, token=pat))
    assert {p["id"] for p in api.projects()} == expected
    api._access = api._access[:-4] + "AAAA"  # as if it had expired: Label Studio answers 401
    assert {p["id"] for p in api.projects()} == expected
    with pytest.raises(SyncError, match="refused the token"):
        connect_api(Connection(url=stack.url, token="not-a-token"))


def test_a_config_label_studio_rejects_is_reported_with_its_folder(study, tmp_path):
    from judgelab.configs.schema import load_schema
    from judgelab.sync.client import SyncError

    folder = tmp_path / "broken_schema"
    folder.mkdir()
    (folder / "config.xml").write_text(
        '<View><Text name="text" value="$text"/><Labels name="l" toName="nowhere"><Label value="A"/></Labels></View>'
    )
    (folder / "schema.yaml").write_text("name: broken_schema\ntitle: Broken schema\n")
    with pytest.raises(SyncError) as err:
        ensure_project(study["client"], load_schema(folder))
    assert "broken_schema" in str(err.value) and str(folder) in str(err.value)
    assert "nowhere" in str(err.value)
    assert not [p for p in study["client"].projects.list() if p.title == "Broken schema"]


def test_cli_import_refuses_a_bad_csv_whole_and_reruns_without_duplicates(study, tmp_path):
    from click.testing import CliRunner

    from judgelab.sync.cli import main

    stack = study["stack"]
    project_id = study["projects"]["likert_rubric_es"]
    before = len(_tasks(study["client"], project_id))
    header = "id,title,article,summary,model\n"
    good = 'csv-1,Titular,"El ayuntamiento aprobó el plan.",Resumen uno.,gpt-4o\n'
    bad = "csv-2,Titular,,Resumen sin noticia.,gpt-4o\n"
    path = tmp_path / "nuevas.csv"
    path.write_text(header + good + bad, encoding="utf-8")
    args = ["--url", stack.url, "--token", stack.creds.token, "import", "--schema", "likert_rubric_es", str(path)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert "nuevas.csv line 3" in result.output and "article" in result.output
    assert len(_tasks(study["client"], project_id)) == before, "nothing of a bad file is imported"

    path.write_text(header + good + bad.replace(",,", ',"La noticia completa.",'), encoding="utf-8")
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 0, first.output
    assert "2 imported" in first.output
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0 and "0 imported, 2 already" in again.output
    assert len(_tasks(study["client"], project_id)) == before + 2


def test_backend_behind_basic_auth_is_reached_by_label_studio(study, tmp_path):
    """Label Studio's ML connection sends HTTP basic auth; the backend refuses requests without it."""
    import httpx
    from conftest import free_port

    from judgelab.sync.local_stack import StackSettings, start_backend, stop_stack

    settings = StackSettings(home=tmp_path, backend_port=free_port())
    start_backend(settings, {"JUDGELAB_BASIC_AUTH_USER": "ls", "JUDGELAB_BASIC_AUTH_PASS": "s3cret-pass"})
    url = settings.backend_url
    try:
        assert httpx.post(f"{url}/setup", json={"schema": "<View/>"}, verify=tls_context()).status_code == 401
        client = study["client"]
        schema = all_schemas()["likert_rubric_es"]
        project = ensure_project(client, schema, title="Likert behind basic auth")
        import_rows(client, project.id, _sample_rows(schema)[:2])
        link = connect_backend(client, project.id, url, auth=("ls", "s3cret-pass"))
        retrieve_predictions(client, project.id)
        tasks = _tasks(client, project.id)
        assert [[p.model_version for p in client.predictions.list(task=t.id)] for t in tasks] == [
            [link.model_version]
        ] * 2
    finally:
        stop_stack(tmp_path)
