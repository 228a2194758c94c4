"""Study estimates (analysis/estimates.py and the report's "Study estimates" section).

Synthetic tidy tables, seeded: 60 tasks written by two summarisers (``model`` m0, m1), a rating
``score`` (1-5) and a choice ``verdict`` (good / bad), two judges on every task, humans on some.
Every number is checked against ``analysis.ppi`` called by hand on the same arrays; the rules of
which human answers count (independent of the judge's suggestion, the linked human-sample
project joined on the task key, gold overriding, annotators left out) each change a number the
test computes itself.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from shared_data import shared_path

from judgelab.analysis.estimates import (
    MIN_LABELS,
    estimate_table,
    human_rows,
    linked_sample_rows,
    task_values,
)
from judgelab.analysis.judges import JUDGE_MAJORITY
from judgelab.analysis.ppi import pool_estimates
from judgelab.analysis.report import build_report
from judgelab.analysis.report.data import ReportOptions
from judgelab.configs.schema import get_schema
from judgelab.configs.tables import SPAN_COLUMNS
from judgelab.sync.cli import main

META = {
    "scales": {"score": {"min": 1, "max": 5}},
    "items": {"verdict": {"kind": "nominal", "values": ["good", "bad"]}},
    "meta_fields": ["model"],
}
JUDGES = ("model:j1", "model:j2")
N_TASKS = 60


def row(task: int, rater: str, item: str, value: object, annotation: object, **extra: object) -> dict:
    model = rater.startswith("model:")
    return {
        "project": 1,
        "task_id": task,
        "annotation_id": annotation,
        "annotator": None if model else rater,
        "source": rater if model else "human",
        "item": item,
        "value": str(value),
        "created_at": "2025-05-01T10:00:00Z",
        "updated_at": None,
        "lead_time": 10.0,
        "was_cancelled": False,
        "ground_truth": False,
        "region_id": None,
        "origin": None,
        "parent_prediction": None,
    } | extra


def truth(task: int) -> int:
    return 1 + (task * 7) % 5


def make_tables(labelled: int = 30, seed: int = 0) -> dict[str, pd.DataFrame]:
    """60 tasks; judges everywhere (j1 close to the truth, j2 noisy); annotators a and b on the
    first ``labelled`` tasks (b on every other one)."""
    rng = np.random.default_rng(seed)
    tasks = pd.DataFrame(
        {
            "project": 1,
            "task_id": range(1, N_TASKS + 1),
            "schema": None,
            "key": [f"k{t}" for t in range(1, N_TASKS + 1)],
            "model": [f"m{t % 2}" for t in range(1, N_TASKS + 1)],
            "split": ["val" if t <= 30 else "test" for t in range(1, N_TASKS + 1)],
        }
    )
    rows = []
    for task in range(1, N_TASKS + 1):
        score = truth(task)
        for k, judge in enumerate(JUDGES):
            guess = score if k == 0 and rng.random() < 0.8 else int(rng.integers(1, 6))
            rows.append(row(task, judge, "score", guess, f"prediction:{task * 10 + k}"))
            rows.append(row(task, judge, "verdict", "good" if guess >= 3 else "bad", f"prediction:{task * 10 + k}"))
        if task <= labelled:
            raters = ["a", "b"] if task % 2 == 0 else ["a"]
            for rater in raters:
                value = score if rater == "a" else min(5, score + 1)
                annotation = task * 100 + (1 if rater == "a" else 2)
                rows.append(row(task, rater, "score", value, annotation))
                rows.append(row(task, rater, "verdict", "good" if value >= 3 else "bad", annotation))
    judgments = pd.DataFrame(rows)
    return {"tasks": tasks, "judgments": judgments, "spans": pd.DataFrame(columns=SPAN_COLUMNS)}


def by_hand(
    tables: dict[str, pd.DataFrame],
    quantity: str,
    judge: str,
    tasks: list[int] | None = None,
    human: pd.Series | None = None,
    **options: object,
):
    """pool_estimates on the arrays built here: y = mean of the human values per task, yhat = the
    judge's value."""
    j = tables["judgments"]
    ids = tasks or list(tables["tasks"]["task_id"])
    item, _, label = quantity.partition(" = ")
    item = item.removesuffix(" (mean)")

    def value(frame: pd.DataFrame) -> pd.Series:
        rows = frame[frame["item"] == item]
        numbers = rows["value"].astype(float) if not label else (rows["value"] == label).astype(float)
        return numbers.groupby(rows["task_id"]).mean()

    if judge == JUDGE_MAJORITY:
        yhat = pd.concat([value(j[j["source"] == name]) for name in JUDGES], axis=1).median(axis=1)
    else:
        yhat = value(j[j["source"] == judge])
    y = human if human is not None else value(j[j["source"] == "human"])
    yhat = yhat.reindex(ids)
    bounds = (1.0, 5.0) if not label else (0.0, 1.0)
    return pool_estimates(y.reindex(ids).to_numpy(float), yhat.to_numpy(float), bounds=bounds, **options)


def one(table: pd.DataFrame, **where: object) -> pd.Series:
    mask = np.ones(len(table), bool)
    for column, value in where.items():
        mask &= (table[column] == value).to_numpy()
    assert mask.sum() == 1, (where, mask.sum())
    return table[mask].iloc[0]


def assert_matches(found: pd.Series, expected) -> None:
    assert found["n_labeled"] == expected.n_labeled
    assert found["n_judged"] == expected.n_total
    for column, value in [
        ("human_estimate", expected.human.estimate),
        ("human_low", expected.human.low),
        ("human_high", expected.human.high),
        ("ppi_estimate", expected.ppi.estimate),
        ("ppi_low", expected.ppi.low),
        ("ppi_high", expected.ppi.high),
        ("judge_estimate", expected.judge_estimate),
        ("judge_bias", expected.judge_bias),
        ("lambda", expected.lambda_),
        ("worth_human_labels", expected.worth_human_labels),
    ]:
        assert found[column] == pytest.approx(value, rel=1e-9, abs=1e-12), column


def test_every_judge_and_quantity_equals_ppi_by_hand() -> None:
    tables = make_tables()
    table = estimate_table(tables["tasks"], tables["judgments"], tables["spans"], META)
    assert set(table["judge"]) == {*JUDGES, JUDGE_MAJORITY}
    assert set(table["quantity"]) == {"score (mean)", "verdict = good", "verdict = bad"}
    for judge in (*JUDGES, JUDGE_MAJORITY):
        for quantity in ("score (mean)", "verdict = good", "verdict = bad"):
            assert_matches(one(table, judge=judge, quantity=quantity), by_hand(tables, quantity, judge))
    found = one(table, judge="model:j1", quantity="score (mean)")
    assert found["n_labeled"] == 30 and found["n_tasks"] == N_TASKS and found["weights"] == "uniform"
    # the human value of a choice is the share of annotators: a task where a and b disagree is 0.5
    values = task_values(tables["judgments"][tables["judgments"]["source"] == "human"], tables["spans"], META)
    shares = values[values["quantity"] == "verdict = good"].groupby("task_id")["y"].mean()
    assert 0.5 in set(shares)


def test_split_by_the_summariser_field() -> None:
    tables = make_tables()
    table = estimate_table(tables["tasks"], tables["judgments"], tables["spans"], META, by=["model"])
    assert set(table["model"]) == {"m0", "m1"}
    for model in ("m0", "m1"):
        ids = tables["tasks"].loc[tables["tasks"]["model"] == model, "task_id"].tolist()
        found = one(table, judge="model:j1", quantity="score (mean)", model=model)
        assert found["n_tasks"] == len(ids) == 30
        assert_matches(found, by_hand(tables, "score (mean)", "model:j1", ids))


def test_inclusion_probabilities_weigh_the_sample() -> None:
    tables = make_tables()
    ids = tables["tasks"]["task_id"].to_numpy()
    pi = np.where(ids <= 30, 0.3 + 0.02 * ids, 0.3)  # the labelled tasks were drawn with different chances
    tables["tasks"]["inclusion_probability"] = pi
    table = estimate_table(tables["tasks"], tables["judgments"], tables["spans"], META)
    found = one(table, judge="model:j1", quantity="score (mean)")
    assert found["weights"] == "inclusion probabilities"
    assert_matches(found, by_hand(tables, "score (mean)", "model:j1", inclusion=pi))
    assert found["ppi_estimate"] != pytest.approx(by_hand(tables, "score (mean)", "model:j1").ppi.estimate)


def test_anchored_human_labels_are_left_out() -> None:
    tables = make_tables()
    j = tables["judgments"]
    # annotator a of tasks 1-5 started from j1's prediction; annotator a of task 7 kept a prediction's region
    anchored = (j["annotator"] == "a") & j["task_id"].between(1, 5)
    j.loc[anchored, "parent_prediction"] = j.loc[anchored, "task_id"] * 10
    j.loc[(j["annotator"] == "a") & (j["task_id"] == 7) & (j["item"] == "score"), "origin"] = "prediction"
    table = estimate_table(tables["tasks"], j, tables["spans"], META)
    found = one(table, judge="model:j1", quantity="score (mean)")
    left_out = (j["annotator"] == "a") & (j["task_id"].between(1, 5) | (j["task_id"] == 7))
    kept = j[(j["source"] == "human") & ~left_out]
    human = kept[kept["item"] == "score"].assign(v=lambda f: f["value"].astype(float)).groupby("task_id")["v"].mean()
    # tasks 2 and 4 keep annotator b; tasks 1, 3, 5 and 7 lose their only annotator
    assert found["n_labeled"] == 30 - 4
    assert_matches(found, by_hand(tables, "score (mean)", "model:j1", human=human))


def test_gold_overrides_the_annotators() -> None:
    tables = make_tables()
    gold = [row(task, "gold", "score", 5, f"gold-{task}", source="gold", annotator="gold") for task in (2, 3, 40)]
    adjudicated = [row(4, "lead", "score", 1, 999, ground_truth=True)]
    j = pd.concat([tables["judgments"], pd.DataFrame(gold + adjudicated)], ignore_index=True)
    table = estimate_table(tables["tasks"], j, tables["spans"], META)
    found = one(table, judge="model:j1", quantity="score (mean)")
    humans = tables["judgments"][(tables["judgments"]["source"] == "human") & (tables["judgments"]["item"] == "score")]
    human = humans.assign(v=humans["value"].astype(float)).groupby("task_id")["v"].mean()
    human.loc[2], human.loc[3], human.loc[40], human.loc[4] = 5.0, 5.0, 5.0, 1.0
    assert found["n_labeled"] == 31 and found["n_gold"] == 4
    assert_matches(found, by_hand(tables, "score (mean)", "model:j1", human=human.sort_index()))


def test_exclude_annotators() -> None:
    tables = make_tables()
    table = estimate_table(tables["tasks"], tables["judgments"], tables["spans"], META, exclude_annotators={"b"})
    found = one(table, judge="model:j1", quantity="score (mean)")
    j = tables["judgments"]
    rows = j[(j["annotator"] == "a") & (j["item"] == "score")]
    human = rows.assign(v=rows["value"].astype(float)).groupby("task_id")["v"].mean()
    assert_matches(found, by_hand(tables, "score (mean)", "model:j1", human=human))
    assert found["human_estimate"] != pytest.approx(
        one(estimate_table(tables["tasks"], j, tables["spans"], META), judge="model:j1", quantity="score (mean)")[
            "human_estimate"
        ]
    )
    kept, _ = human_rows(j, tables["spans"], {"a", "b"})
    assert kept.empty


def sample_project(tables: dict[str, pd.DataFrame], keys: list[int]) -> dict[str, pd.DataFrame]:
    """A human-sample project (id 2) of project 1: its own task ids, the source tasks' keys, labels by c."""
    tasks = pd.DataFrame(
        {
            "project": 2,
            "task_id": [500 + k for k in keys],
            "schema": None,
            "key": [f"k{k}" for k in keys],
            "model": "x",
            "split": "x",
            "project_sample_of": 1,
        }
    )
    rows = [row(500 + k, "c", "score", truth(k), 7000 + k, project=2) for k in keys]
    rows += [row(500 + k, "c", "verdict", "good" if truth(k) >= 3 else "bad", 7000 + k, project=2) for k in keys]
    return {"tasks": tasks, "judgments": pd.DataFrame(rows), "spans": pd.DataFrame(columns=SPAN_COLUMNS)}


def test_the_human_sample_project_is_joined_on_the_task_key(tmp_path: Path) -> None:
    tables = make_tables(labelled=0)
    sample = sample_project(tables, list(range(31, 51)))
    other = sample_project(tables, [1, 2])
    other["tasks"]["project_sample_of"] = 9  # a sample of another project
    sample_j, sample_s, found_projects = linked_sample_rows(tables["tasks"], 1, {2: sample, 3: other})
    assert found_projects == [2]
    assert set(sample_j["task_id"]) == set(range(31, 51)) and set(sample_j["project"]) == {1}
    table = estimate_table(
        tables["tasks"], tables["judgments"], tables["spans"], META, sample_judgments=sample_j, sample_spans=sample_s
    )
    found = one(table, judge="model:j2", quantity="score (mean)")
    human = pd.Series({k: float(truth(k)) for k in range(31, 51)})
    assert_matches(found, by_hand(tables, "score (mean)", "model:j2", human=human))
    # the same through the report: both projects in one run, the sample project's rows counted in project 1's
    everything = {name: pd.concat([tables[name], sample[name]], ignore_index=True) for name in tables}
    everything["tasks"]["schema"] = "mine"
    paths = build_report(everything, {"mine": META}, tmp_path, options=ReportOptions(n_boot=0))
    csv = pd.read_csv(paths.csv["estimates"])
    assert set(csv["project"]) == {1}  # the sample project has no judge
    assert one(csv, judge="model:j2", quantity="score (mean)", model="m0")["n_labeled"] == 10
    markdown = paths.markdown.read_text(encoding="utf-8")
    assert "The labels of the human-sample project 2 count here" in markdown
    # project 1's own completion says where its tasks were labelled, not just "none annotated"
    assert "Besides, 20 of its tasks labelled in the human-sample project 2 (see Study estimates)." in markdown
    assert "20 of its tasks labelled in the human-sample project 2" in pd.read_csv(paths.csv["at_a_glance"]).to_string()


def test_too_few_labels_say_so_with_the_n(tmp_path: Path) -> None:
    tables = make_tables(labelled=2 * MIN_LABELS - 2)  # per summariser: MIN_LABELS - 1 labelled tasks
    tables["tasks"]["schema"] = "mine"
    paths = build_report(tables, {"mine": META}, tmp_path, options=ReportOptions(n_boot=0, by=()))
    csv = pd.read_csv(paths.csv["estimates"])
    found = one(csv, judge="model:j1", quantity="score (mean)", model="m1")
    assert found["n_labeled"] == MIN_LABELS - 1 and np.isnan(found["ppi_low"]) and np.isnan(found["human_estimate"])
    assert "too few human labels" in found["note"]
    markdown = paths.markdown.read_text(encoding="utf-8")
    assert (
        f"Mean score for model m1: too few human labels for an interval ({MIN_LABELS - 1} labelled tasks, at least "
        f"{MIN_LABELS} needed)"
    ) in markdown


def test_report_section_sentences_table_glance_and_facets(tmp_path: Path) -> None:
    tables = make_tables(labelled=60)
    tables["tasks"]["schema"] = "mine"
    paths = build_report(tables, {"mine": META}, tmp_path, options=ReportOptions(n_boot=0, by=("split",)))
    csv = pd.read_csv(paths.csv["estimates"])
    assert {"split", "model", "judge", "quantity", "ppi_low", "ppi_high", "worth_human_labels"} <= set(csv.columns)
    assert set(csv["split"]) == {"val", "test"}
    ids = tables["tasks"].query("split == 'test' and model == 'm0'")["task_id"].tolist()
    found = one(csv, judge="model:j1", quantity="score (mean)", split="test", model="m0")
    assert_matches(found, by_hand(tables, "score (mean)", "model:j1", ids))
    markdown = paths.markdown.read_text(encoding="utf-8")
    best = csv[(csv["split"] == "test") & (csv["model"] == "m0") & (csv["quantity"] == "score (mean)")]
    best = best.iloc[0]  # the table lists the judge worth the most labels first
    judge = "judge " + best["judge"].removeprefix("model:") if best["judge"] != JUDGE_MAJORITY else JUDGE_MAJORITY
    sentence = (
        f"Mean score for model m0: {best['ppi_estimate']:.2f} [{best['ppi_low']:.2f}, {best['ppi_high']:.2f}] from "
        f"{int(best['n_labeled'])} human labels and {judge} on {int(best['n_judged'])} tasks; human-only "
        f"{best['human_estimate']:.2f} [{best['human_low']:.2f}, {best['human_high']:.2f}], judge-only "
        f"{best['judge_estimate']:.2f}"
    )
    assert sentence in markdown
    assert "| Estimates | mean score for model m" in markdown  # the front page's summary


def test_spans_and_line_verdicts(tmp_path: Path) -> None:
    """Span schemas: the share of tasks with any span and with a span of each label (0 where a rater
    answered without marking one); line verdicts: the share of a task's lines flagged, and a summary
    derived from them (any line flagged) where no summary verdict was given."""
    story = get_schema("story_consistency")
    flag, other = story.constant("line_flag"), story.constant("consistent")
    rows = []
    for task in range(1, 5):
        for line in range(2):
            bad = task == 1 and line == 0
            rows.append(row(task, "a", f"line_{line}", flag if bad else other, task))
            rows.append(row(task, "model:j", f"line_{line}", flag if task <= 2 and line == 0 else other, f"p{task}"))
    values = task_values(pd.DataFrame(rows), pd.DataFrame(), story.meta)
    summary = f"{story.constant('summary_item')} = {story.constant('summary_unfaithful')}"
    mine = values[(values["rater"] == "a")].pivot_table(index="task_id", columns="quantity", values="y")
    assert mine[summary].tolist() == [1.0, 0.0, 0.0, 0.0]
    assert mine[f"lines {flag} (share per task)"].tolist() == [0.5, 0.0, 0.0, 0.0]
    # a stated summary verdict wins over the lines
    stated = row(2, "a", story.constant("summary_item"), story.constant("summary_unfaithful"), 2)
    values = task_values(pd.DataFrame([*rows, stated]), pd.DataFrame(), story.meta)
    mine = values[(values["rater"] == "a") & (values["quantity"] == summary)].set_index("task_id")["y"].sort_index()
    assert mine.tolist() == [1.0, 1.0, 0.0, 0.0]

    spans = pd.DataFrame(
        [
            {"project": 1, "task_id": 1, "annotation_id": 1, "annotator": "a", "source": "human", "label": "X"},
            {"project": 1, "task_id": 2, "annotation_id": 2, "annotator": "a", "source": "human", "label": "Y"},
        ]
    )
    judgments = pd.DataFrame([row(3, "a", "done", "yes", 3)])  # task 3 answered without a span
    values = task_values(judgments, spans, {})
    any_span = values[values["quantity"] == "spans: any"].set_index("task_id")["y"].sort_index()
    assert any_span.to_dict() == {1: 1.0, 2: 1.0, 3: 0.0}
    x = values[values["quantity"] == "spans: X"].set_index("task_id")["y"].sort_index()
    assert x.to_dict() == {1: 1.0, 2: 0.0, 3: 0.0}


def test_report_cli_leaves_out_the_annotators_named(tmp_path: Path) -> None:
    tables = make_tables()
    tables["tasks"]["schema"] = None
    folder = tmp_path / "tables"
    folder.mkdir()
    tables["judgments"]["annotation_id"] = tables["judgments"]["annotation_id"].astype(str)
    for name, frame in tables.items():
        frame.to_parquet(folder / f"{name}.parquet")
    runs = {}
    for label, extra in (("all", []), ("without-b", ["--exclude-annotator", "b"])):
        result = CliRunner().invoke(
            main,
            ["report", "--tables", str(folder), "--out", str(tmp_path / label), "--n-boot", "0", *extra],
            catch_exceptions=False,
        )
        assert result.exit_code == 0, result.output
        runs[label] = pd.read_csv(next((tmp_path / label).glob("*/estimates.csv")))
    expected = estimate_table(
        tables["tasks"], tables["judgments"], tables["spans"], {}, by=["model"], exclude_annotators={"b"}
    )
    for frame, exclude in ((runs["all"], set()), (runs["without-b"], {"b"})):
        wanted = estimate_table(
            tables["tasks"], tables["judgments"], tables["spans"], {}, by=["model"], exclude_annotators=exclude
        )
        found = one(frame, judge="model:j1", quantity="score (mean)", model="m0")
        assert found["ppi_estimate"] == pytest.approx(
            one(wanted, judge="model:j1", quantity="score (mean)", model="m0")["ppi_estimate"]
        )
    assert not expected.empty
    markdown = next((tmp_path / "without-b").glob("*/report.md")).read_text(encoding="utf-8")
    assert "Left out of the study's estimates (1 annotator): b (named with --exclude-annotator)." in markdown


def test_storysumm_gold_as_human_labels(tmp_path: Path) -> None:
    """StorySumm: gold for every summary, eight judges; every judge (and their majority) gets a row per
    summariser, its human labels being the gold labels."""
    from judgelab.analysis.loaders.storysumm import read_storysumm

    loaded = read_storysumm(shared_path("storysumm", "storysumm.json"))
    meta = get_schema("story_consistency").meta
    table = estimate_table(loaded["tasks"], loaded["judgments"], loaded["spans"], meta, by=["model"])
    judges = {s for s in loaded["judgments"]["source"].unique() if str(s).startswith("model:")}
    summary = f"{get_schema('story_consistency').constant('summary_item')} = Unfaithful"
    assert set(table.loc[table["quantity"] == summary, "judge"]) >= {
        JUDGE_MAJORITY,
        *(j for j in judges if (loaded["judgments"].query("source == @j")["item"] == "faithful").any()),
    }
    per_model = loaded["tasks"].groupby("model").size()
    rows = table[(table["quantity"] == summary) & (table["judge"] == JUDGE_MAJORITY)].set_index("model")
    assert rows["n_labeled"].to_dict() == per_model.to_dict() and (rows["n_gold"] == rows["n_labeled"]).all()
    gold = loaded["judgments"].query("source == 'gold' and item == 'faithful'").set_index("task_id")["value"]
    for model, ids in loaded["tasks"].groupby("model")["task_id"]:
        share = (gold.reindex(ids) == "Unfaithful").mean()
        assert rows.loc[model, "human_low"] <= share <= rows.loc[model, "human_high"]


# -- through a real Label Studio ---------------------------------------------------------------

HOTEL_SUMMARY = "The Harbour Inn offers 90 rooms and an outdoor pool."


def _rating(rid: str, value: int) -> dict:
    return {"id": rid, "from_name": "impression", "to_name": "summary", "type": "rating", "value": {"rating": value}}


@pytest.mark.integration
def test_estimates_from_a_synced_label_studio_project(live_stack, tmp_path, request):
    """A judge (a model version's predictions) on 14 tasks, an annotator on 12 of them without its
    suggestion and on one more task started from it (``parent_prediction``): ``judgelab sync`` and
    ``judgelab report`` give the estimates of the 12 independent ratings, as ppi computes them."""
    from judgelab.configs.schema import all_schemas
    from judgelab.sync.importers import rows_from_records
    from judgelab.sync.projects import ensure_project, import_rows

    client = live_stack.client
    schema = all_schemas()["hotel_spans"]
    project = ensure_project(client, schema, title="Study estimates: hotel")
    request.addfinalizer(lambda: client.projects.delete(id=project.id))
    records = [
        ("est", {"id": f"est-{n}", "descriptions": "The Harbour Inn has 40 rooms.", "summary": HOTEL_SUMMARY})
        for n in range(14)
    ]
    ids = import_rows(client, project.id, rows_from_records(records, schema)).task_ids
    judge = {task: 1 + (n * 3) % 7 for n, task in enumerate(ids)}
    human = {task: min(7, judge[task] + (n % 3 == 0)) for n, task in enumerate(ids[:12])}
    predictions = {
        task: client.predictions.create(task=task, result=[_rating("r", judge[task])], model_version="judge-a").id
        for task in ids
    }
    for task, value in human.items():
        client.annotations.create(id=task, result=[_rating("r", value)], lead_time=5.0)
    anchored = ids[12]  # started from the judge's suggestion: not an independent label
    client.annotations.create(id=anchored, result=[_rating("r", 7)], parent_prediction=predictions[anchored])

    runner = CliRunner()
    base = ["--url", live_stack.url, "--token", live_stack.creds.token]
    for args in (
        ["sync", "--out", tmp_path / "tables", "--project", project.id],
        ["report", "--tables", tmp_path / "tables", "--out", tmp_path / "report", "--n-boot", "0"],
    ):
        result = runner.invoke(main, [*base, *map(str, args)])
        assert result.exit_code == 0, result.output
    synced = pd.read_parquet(tmp_path / "tables" / "judgments.parquet")
    started = synced[(synced["task_id"] == anchored) & (synced["source"] == "human")]
    assert started["parent_prediction"].notna().all() and len(started) == 1  # the anchored label is in the tables
    [csv] = (tmp_path / "report").glob("*/estimates.csv")
    table = pd.read_csv(csv)
    found = one(table, judge="model:judge-a", quantity="impression (mean)")
    y = np.array([human.get(task, np.nan) for task in ids], dtype=float)
    yhat = np.array([judge[task] for task in ids], dtype=float)
    expected = pool_estimates(y, yhat, bounds=(1.0, 7.0))
    assert found["n_labeled"] == 12 and found["n_judged"] == 14
    assert_matches(found, expected)


def test_every_label_anchored_says_why_there_is_no_estimate(tmp_path: Path) -> None:
    tables = make_tables()
    j = tables["judgments"]
    humans = j["source"] == "human"
    j.loc[humans, "parent_prediction"] = j.loc[humans, "task_id"] * 10
    assert estimate_table(tables["tasks"], j, tables["spans"], META).empty
    tables["tasks"]["schema"] = "mine"
    paths = build_report(tables, {"mine": META}, tmp_path, options=ReportOptions(n_boot=0, by=()))
    n_annotations = j.loc[humans, "annotation_id"].nunique()
    markdown = paths.markdown.read_text(encoding="utf-8")
    assert f"No study estimate: all {n_annotations} human annotations were made with a judge's suggestion" in markdown


def test_spans_none_marked_by_the_humans_count_as_zero() -> None:
    """A span study where the annotators marked no span on their tasks (the judge did): the share of
    tasks with a span is 0 for every labelled task, not missing."""
    j = pd.DataFrame([row(task, "a", "done", "yes", task) for task in range(1, 13)])
    spans = pd.DataFrame(
        [
            {"project": 1, "task_id": t, "annotation_id": f"p{t}", "annotator": None, "source": "model:j", "label": "X"}
            for t in range(1, 13)
            if t % 3 == 0
        ]
    )
    j = pd.concat([j, pd.DataFrame([row(t, "model:j", "done", "yes", f"p{t}") for t in range(1, 13)])])
    tasks = pd.DataFrame({"project": 1, "task_id": range(1, 13)})
    table = estimate_table(tasks, j, spans, {})
    found = one(table, judge="model:j", quantity="spans: any")
    assert found["n_labeled"] == 12 and found["judge_estimate"] == pytest.approx(4 / 12)
    assert found["judge_bias"] == pytest.approx(4 / 12)
    expected = pool_estimates(np.zeros(12), (np.arange(1, 13) % 3 == 0).astype(float), bounds=(0.0, 1.0))
    assert_matches(found, expected)
