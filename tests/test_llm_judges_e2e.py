"""Several judges, several samples, token usage, cost and budget through the CLI a user runs, on a
real Label Studio, with the real backend in ``llm`` mode against the simulated OpenAI-compatible
server (two model names). The README's commands are run as written."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from conftest import free_port
from llm_sim import LLMSim, SimCall

from judgelab.configs.schema import all_schemas
from judgelab.sync.cli import main
from judgelab.sync.export import read_tables
from judgelab.sync.http_retry import tls_context
from judgelab.sync.importers import rows_from_records
from judgelab.sync.local_stack import StackSettings, start_backend, stop_stack
from judgelab.sync.projects import ensure_project, import_rows, project_schema_name
from judgelab.sync.usage import read_usage

pytestmark = pytest.mark.integration

HOTEL = all_schemas()["hotel_spans"]
MODELS = ("gpt-4o-mini", "gpt-4o")
IMPRESSIONS = [4, 4, 2, 4, 5]
PRICES = {"gpt-4o-mini": (0.15, 0.60), "gpt-4o": (2.50, 10.0)}  # as in docs/llm.md


def judge_answer(messages, call: SimCall) -> str:
    """A factgenie answer of the same length for every task: sample s rates IMPRESSIONS[s], the
    big model marks the skyline too."""
    spans = [{"text": "Hudson River", "annotation_type": 2, "reason": "the hotel is in Dubai"}]
    if call.model == "gpt-4o":
        spans.append({"text": "Manhattan skyline", "annotation_type": 0, "reason": "not in the descriptions"})
    return json.dumps({"annotations": spans, "impression": IMPRESSIONS[call.sample % 5]})


@pytest.fixture(scope="module")
def judges_stack(live_stack, tmp_path_factory):
    home = tmp_path_factory.mktemp("judges")
    with LLMSim(answer=judge_answer, models=MODELS) as sim:
        settings = StackSettings(home=home, backend_port=free_port(), annotator="llm")
        start_backend(
            settings,
            {
                "JUDGELAB_LLM_BASE_URL": sim.url,
                "JUDGELAB_LLM_MODEL": ",".join(MODELS),
                "JUDGELAB_LLM_TEMPERATURE": "0.7",
                "JUDGELAB_LLM_RETRIES": "0",
                "JUDGELAB_LLM_TIMEOUT": "10",
                "JUDGELAB_PREDICT_DEADLINE": "30",
                "JUDGELAB_CACHE_PATH": str(home / "llm-cache.sqlite"),
            },
        )
        env = {
            "JUDGELAB_LS_URL": live_stack.url,
            "JUDGELAB_LS_TOKEN": live_stack.creds.token,
            "JUDGELAB_BACKEND_URL": settings.backend_url,
        }
        try:
            yield {"sim": sim, "url": settings.backend_url, "client": live_stack.client, "env": env, "home": home}
        finally:
            stop_stack(home)


def judgelab(stack, command: str, expect: int = 0):
    """Run a ``judgelab ...`` command line as a user types it."""
    args = shlex.split(command.replace("\\\n", " "))
    assert args[0] == "judgelab", command
    result = CliRunner().invoke(main, args[1:], env=stack["env"])
    assert result.exit_code == expect, f"{command}\n{result.output}\n{result.exception!r}"
    return result


def readme_commands(heading: str) -> list[str]:
    """The ``judgelab`` command lines of the first bash block under ``heading`` in the README or the
    manual (docs/)."""
    from readme_commands import docs_text

    text = docs_text()
    block = text[text.index(heading) :]
    block = block[block.index("```bash\n") + len("```bash\n") :]
    block = block[: block.index("```")]
    return [line for line in block.replace("\\\n", " ").splitlines() if line.startswith("judgelab ")]


def fresh_project(client, samples: list[dict]) -> int:
    """The default-titled hotel project (the one the CLI's --schema finds), new, with ``samples``."""
    for project in client.projects.list():
        description = getattr(project, "description", None) or ""
        if project_schema_name(project) == HOTEL.name and "[judgelab-title:" not in description:
            client.projects.delete(id=project.id)
    project = ensure_project(client, HOTEL)
    import_rows(client, project.id, rows_from_records([(f"task {i}", s) for i, s in enumerate(samples)], HOTEL))
    return project.id


def dubai_tasks(n: int, tag: str) -> list[dict]:
    """``n`` tasks of equal length (so of equal cost): the Dubai hotel, numbered and tagged."""
    sample = next(s for s in HOTEL.samples() if "Hudson River" in s["data"]["summary"])
    return [
        {
            **sample,
            "data": {
                **sample["data"],
                "id": f"{tag}{i:02d}",
                "summary": f"[{tag}{i:02d}] " + sample["data"]["summary"],
            },
        }
        for i in range(n)
    ]


def versions_per_task(client, project_id: int) -> list[list[str]]:
    return [
        sorted(str(p.model_version) for p in client.predictions.list(task=t.id))
        for t in client.tasks.list(project=project_id)
    ]


def expected_cost(sim: LLMSim, since: int = 0) -> float:
    """What the simulated server's reported usage costs at the README's prices."""
    total = 0.0
    for request in sim.chat_requests[since:]:
        if request.usage:
            price_in, price_out = PRICES[request.body["model"]]
            total += request.usage["prompt_tokens"] * price_in + request.usage["completion_tokens"] * price_out
    return total / 1e6


def printed(output: str, what: str) -> float:
    return float(re.search(rf"{what} ([0-9.]+)", output).group(1))


def test_readme_two_judges_five_samples_cost_sync_and_report(judges_stack, tmp_path, monkeypatch):
    client, sim = judges_stack["client"], judges_stack["sim"]
    project_id = fresh_project(client, dubai_tasks(4, "R"))
    monkeypatch.chdir(tmp_path)
    connect, preannotate, sync, report = readme_commands("## Several samples and several judges")
    asked_before = sim.count

    out = judgelab(judges_stack, connect).output
    versions = re.findall(r"judge (\S+) \(5 sample\(s\)\) -> (\S+)", out)
    assert [m for m, _ in versions] == list(MODELS), out
    mini, big = (v for _, v in versions)
    assert "gpt-4o-k5-" in big and "gpt-4o-mini-k5-" in mini

    out = judgelab(judges_stack, preannotate).output
    assert f"4/4 tasks have a prediction of {mini}, {big} " in out, out
    assert "this run added 8 predictions, 0 task(s) still without one" in out, out
    # two judges x 4 tasks, five samples each asked with n=5: 8 requests
    requests = sim.chat_requests[asked_before:]
    assert len(requests) == 8 and {r.body["n"] for r in requests} == {5}
    assert "in 8 request(s); 0 answer(s) from the cache" in out
    assert printed(out, "cost") == pytest.approx(expected_cost(sim, asked_before), abs=5e-5)

    assert versions_per_task(client, project_id) == [sorted([mini, big])] * 4
    task = next(iter(client.tasks.list(project=project_id)))
    by_version = {p.model_version: p for p in client.predictions.list(task=task.id)}
    rating = next(r for r in by_version[mini].result if r["type"] == "rating")
    assert rating["value"]["rating"] == 4 and rating["score"] == pytest.approx(0.6)  # 3 of 5 samples
    spans = sorted(r["value"]["text"] for r in by_version[big].result if r["type"] == "labels")
    assert spans == ["Hudson River", "Manhattan skyline"]
    assert by_version[big].score == pytest.approx((0.6 + 1.0 + 1.0) / 3)

    judgelab(judges_stack, sync)
    tables = read_tables(tmp_path / "judgelab-data")
    ours = tables.judgments[tables.judgments["project"] == project_id]
    assert {f"model:{mini}", f"model:{big}"} <= set(ours["source"])
    usage = read_usage(tmp_path / "judgelab-data")
    usage = usage[usage["project"] == project_id]
    assert sorted(usage["model_version"].unique()) == sorted([mini, big]) and len(usage) == 8
    assert usage["cost"].sum() == pytest.approx(expected_cost(sim, asked_before))
    assert usage["requests"].sum() == 8 and usage["answers"].sum() == 40

    judgelab(judges_stack, report)
    reports = [p for p in (tmp_path / "judgelab-report").glob("*/report.md") if project_report(p, client, project_id)]
    assert len(reports) == 1, [p.parent.name for p in (tmp_path / "judgelab-report").glob("*/report.md")]
    markdown = reports[0].read_text(encoding="utf-8")
    assert "Cost" in markdown and big in markdown and "sent 8 request(s)" in markdown


def test_label_studio_retrieve_stores_one_prediction_per_judge_and_cache_hits_are_free(judges_stack):
    client, sim = judges_stack["client"], judges_stack["sim"]
    project_id = fresh_project(client, dubai_tasks(3, "L"))
    asked_before = sim.count
    out = judgelab(
        judges_stack, "judgelab preannotate --schema hotel_spans --model gpt-4o-mini,gpt-4o --samples 1"
    ).output
    lines = re.findall(r"(\d+)/(\d+) tasks have a prediction of (\S+)", out)
    assert [(done, total) for done, total, _ in lines] == [("3", "3"), ("3", "3")], out
    default, big = (v for _, _, v in lines)
    assert not default.startswith("judgelab-llm-gpt") and big.startswith("judgelab-llm-gpt-4o-")  # default: as ever
    assert versions_per_task(client, project_id) == [sorted([default, big])] * 3  # Label Studio's own retrieve
    assert sim.count - asked_before == 6
    assert "in 6 request(s); 0 answer(s) from the cache" in out

    # the same tasks in a new project: every answer is in the cache, nothing is paid
    project_id = fresh_project(client, dubai_tasks(3, "L"))
    asked_before = sim.count
    out = judgelab(judges_stack, "judgelab preannotate --schema hotel_spans --push").output
    assert sim.count == asked_before
    assert "0 prompt + 0 completion tokens in 0 request(s); 6 answer(s) from the cache (free)" in out, out
    assert versions_per_task(client, project_id) == [sorted([default, big])] * 3


def test_budget_stops_before_it_is_passed_and_a_later_run_finishes(judges_stack):
    client, url = judges_stack["client"], judges_stack["url"]
    project_id = fresh_project(client, dubai_tasks(6, "B"))
    options = "--model gpt-4o --samples 3 --price-in 2.5 --price-out 10"
    probe = judgelab(judges_stack, f"judgelab preannotate --schema hotel_spans --push {options} --budget 1000").output
    per_task = httpx.get(f"{url}/usage", params={"project": project_id, "per": "task"}, verify=tls_context()).json()[
        "rows"
    ]
    costs = {round(r["cost"], 12) for r in per_task}
    assert len(per_task) == 6 and len(costs) == 1, per_task  # equal tasks, equal costs
    task_cost = costs.pop()
    assert printed(probe, "cost") == pytest.approx(6 * task_cost, abs=5e-5)

    project_id = fresh_project(client, dubai_tasks(6, "C"))  # new prompts: nothing cached
    budget = 3.5 * task_cost
    out = judgelab(
        judges_stack, f"judgelab preannotate --schema hotel_spans --push {options} --budget {budget!r}"
    ).output
    assert "stopped before passing the budget" in out and "3 task(s) left for a later run" in out, out
    spent = httpx.get(f"{url}/usage", params={"project": project_id}, verify=tls_context()).json()["total"]["cost"]
    assert spent == pytest.approx(3 * task_cost) and spent <= budget
    assert sum(1 for v in versions_per_task(client, project_id) if v) == 3

    out = judgelab(judges_stack, f"judgelab preannotate --schema hotel_spans --push {options} --budget 1000").output
    assert (
        "6/6 tasks have a prediction" in out and "this run added 3 predictions, 0 task(s) still without one" in out
    ), out
    assert all(len(v) == 1 for v in versions_per_task(client, project_id))  # no task predicted twice

    refused = judgelab(judges_stack, "judgelab preannotate --schema hotel_spans --budget 1", expect=1)
    assert "--budget needs --push" in refused.output


def sim_cost(tokens: dict[str, int], price_in: float = 2.5, price_out: float = 10.0) -> float:
    """What the simulated server's tokens of one request cost (prices per million tokens)."""
    return (tokens["prompt_tokens"] * price_in + tokens["completion_tokens"] * price_out) / 1_000_000


def test_the_budget_holds_when_the_server_reports_usage_for_some_answers_only(judges_stack, tmp_path):
    client, sim = judges_stack["client"], judges_stack["sim"]
    options = "--model gpt-4o --samples 1 --price-in 2.5 --price-out 10"
    fresh_project(client, dubai_tasks(1, "P"))
    judgelab(judges_stack, f"judgelab preannotate --schema hotel_spans --push {options}")
    task_cost = sim_cost(sim.chat_requests[-1].tokens)  # every task of equal length costs the same
    project_id = fresh_project(client, dubai_tasks(12, "Q"))
    budget = 4.5 * task_cost
    sim.reset_counts()
    sim.usage_every = 4  # only the first answer of every four carries usage
    try:
        out = judgelab(
            judges_stack, f"judgelab preannotate --schema hotel_spans --push {options} --budget {budget!r}"
        ).output
    finally:
        sim.usage_every = 1
    paid = [sim_cost(r.tokens) for r in sim.chat_requests]
    assert any(r.usage is None for r in sim.chat_requests) and any(r.usage for r in sim.chat_requests)
    assert sum(paid) <= budget + max(paid), (sum(paid) / budget, out)  # never more than one request over
    assert "stopped before passing the budget" in out, out
    # what the run says it cost is what it cost, marked as estimated
    assert printed(out, "cost") == pytest.approx(sum(paid), rel=0.05), out
    unreported = sum(1 for r in sim.chat_requests if r.usage is None)
    assert f"{unreported} request(s) without token usage from the server: tokens and cost estimated" in out, out
    judgelab(judges_stack, f"judgelab sync --out {tmp_path / 'tables'} --project {project_id}")
    usage = read_usage(tmp_path / "tables")
    assert int(usage["unreported"].sum()) == unreported
    estimated = usage[usage["unreported"] > 0]
    assert (estimated["estimated_tokens"] == estimated["prompt_tokens"] + estimated["completion_tokens"]).all()
    assert estimated["estimated_cost"].sum() == pytest.approx(estimated["cost"].sum())
    assert usage["cost"].sum() == pytest.approx(sum(paid), rel=0.05)
    judgelab(judges_stack, f"judgelab report --tables {tmp_path / 'tables'} --out {tmp_path / 'report'}")
    [markdown] = list((tmp_path / "report").glob("*/report.md"))
    cost_text = markdown.read_text(encoding="utf-8").split("## Cost", 1)[1]
    assert (
        f"{unreported} request(s) came from a server that reported no token usage: their tokens and cost are "
        "estimated" in cost_text
    )
    assert "it cost an estimated" in cost_text and "estimated_cost" in cost_text


def test_a_server_without_usage_is_counted_at_estimated_tokens(judges_stack):
    client, sim = judges_stack["client"], judges_stack["sim"]
    fresh_project(client, dubai_tasks(2, "U"))
    sim.report_usage = False
    try:
        out = judgelab(
            judges_stack, "judgelab preannotate --schema hotel_spans --push --model gpt-4o --samples 1"
        ).output
        assert "in 2 request(s)" in out and "0 prompt + 0 completion tokens" not in out, out
        assert "2 request(s) without token usage from the server: tokens and cost estimated" in out, out
        fresh_project(client, dubai_tasks(2, "V"))
        out = judgelab(
            judges_stack,
            "judgelab preannotate --schema hotel_spans --push --model gpt-4o --price-in 1 --price-out 1 --budget 1",
        ).output
        assert "2/2 tasks have a prediction" in out and "(all of it estimated)" in out, out
    finally:
        sim.report_usage = True


@pytest.mark.browser
@pytest.mark.skipif(not shutil.which("chromium"), reason="Debian's chromium is not installed")
def test_the_cost_section_reads_well_in_the_browser(judges_stack, tmp_path, artifacts):
    from test_browser_ui import CHROMIUM, FLAGS

    playwright = pytest.importorskip("playwright.sync_api")
    client = judges_stack["client"]
    project_id = fresh_project(client, dubai_tasks(3, "H"))
    judgelab(judges_stack, "judgelab preannotate --schema hotel_spans --push --price-in 0.15 --price-out 0.6")
    judgelab(judges_stack, f"judgelab sync --out {tmp_path / 'tables'} --project {project_id}")
    judgelab(judges_stack, f"judgelab report --tables {tmp_path / 'tables'} --out {tmp_path / 'report'}")
    [html] = list((tmp_path / "report").glob("*/report.html"))  # the one project synced
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        page.goto(html.as_uri())
        heading = page.get_by_role("heading", name="Cost", exact=True)
        heading.scroll_into_view_if_needed()
        page.screenshot(path=str(artifacts / "report_cost_section.png"))
        section = heading.locator("xpath=ancestor::section[1]").inner_text()
        browser.close()
    assert "LLM tokens and cost per model version" in section and "cost_per_task" in section


def project_report(path: Path, client, project_id: int) -> bool:
    """Whether ``path`` is the report of the project: reports are named after their project's title,
    with the project's id added when several projects share the title."""
    title = client.projects.get(id=project_id).title
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", title).strip("._")
    name = path.parent.name
    return name == slug or name == re.sub(r"[^A-Za-z0-9._-]+", "_", f"{title} ({project_id})").strip("._")
