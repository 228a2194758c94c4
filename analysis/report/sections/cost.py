"""The report's "Cost" section: the LLM's token usage and what it cost, per model version."""

from __future__ import annotations

import pandas as pd

from judgelab.analysis.cost import cost_per_model_version, cost_per_task
from judgelab.analysis.report.blocks import Glance, Paragraph, Section, Table
from judgelab.analysis.report.data import ProjectData, whole_project


def money(value: float) -> str:
    """A cost with six significant digits (LLM costs per task are often fractions of a cent).

    >>> money(0.000268125), money(12.5), money(float("nan"))
    ('0.000268125', '12.5', '')
    """
    return "" if pd.isna(value) else f"{value:.6g}"


@whole_project  # the usage rows are the project's, not a facet cell's
def cost_section(data: ProjectData) -> Section | None:
    """Tokens, requests, cache hits and cost per model version, when the tables hold usage."""
    usage = data.usage
    if usage is None or usage.empty:
        return None
    per_version = cost_per_model_version(usage)
    per_task = cost_per_task(usage)
    tasks = int(per_task["task_id"].nunique())
    requests = int(per_version["requests"].sum())
    tokens = int(per_version["prompt_tokens"].sum()) + int(per_version["completion_tokens"].sum())
    unreported = int(per_version["unreported"].sum())
    priced = per_task["cost"].dropna()
    columns = _shown_columns(per_version)
    shown = per_version.assign(**{c: per_version[c].map(money) for c in ("cost", "cost_per_task", "estimated_cost")})
    shown = shown[columns]
    blocks = [
        Paragraph(" ".join([_usage_text(per_version, tasks, priced), *_estimate_notes(per_version)])),
        _columns_note(columns, unreported),
        Table(
            "cost_by_model_version",
            "LLM tokens and cost per model version",
            shown,
            data=per_version.assign(project=data.project),
        ),
        Table("cost_per_task", "LLM tokens and cost per task", per_task, csv_only=True),
    ]
    if not priced.empty:
        answer = (
            f"{money(priced.sum())}{' (estimated)' if unreported else ''} for {tasks} task(s), {requests} request(s)"
        )
        glance = [Glance("Cost", "LLM", answer, float(priced.sum()))]
    else:
        glance = [Glance("Cost", "LLM", f"no prices given; {requests} request(s), {tokens:,} tokens")]
    return Section("Cost", blocks, glance=glance)


def _usage_text(per_version: pd.DataFrame, tasks: int, priced: pd.Series) -> str:
    """The usage in one sentence (tasks, requests, tokens, cache hits), then the cost in all, for
    the median and the dearest task at the prices given (an estimate when some usage was)."""
    requests, cached = int(per_version["requests"].sum()), int(per_version["cached"].sum())
    prompt, completion = int(per_version["prompt_tokens"].sum()), int(per_version["completion_tokens"].sum())
    text = (
        f"The LLM pre-annotation of {tasks} task(s) sent {requests} request(s) using {prompt:,} prompt and "
        f"{completion:,} completion tokens; {cached} answer(s) came from the response cache (or from an identical "
        "task of the same batch) and cost nothing."
    )
    if priced.empty:
        return text + " No prices were given (--price-in/--price-out), so no cost is shown."
    unreported = int(per_version["unreported"].sum())
    return text + (
        f" At the prices given (--price-in/--price-out) it cost {'an estimated ' if unreported else ''}"
        f"{money(priced.sum())} in all: {money(priced.median())} for the median task, "
        f"{money(priced.max())} for the dearest."
    )


def _estimate_notes(per_version: pd.DataFrame) -> list[str]:
    """What the totals lack: the estimated part of requests whose server reported no usage, and
    requests with tokens but no price."""
    notes = []
    unreported = int(per_version["unreported"].sum())
    if unreported:
        estimated_tokens = int(per_version["estimated_tokens"].sum())
        estimated_cost = per_version["estimated_cost"].sum(min_count=1)
        of_cost = "" if pd.isna(estimated_cost) else f" and {money(estimated_cost)} of the cost"
        notes.append(
            f"{unreported} request(s) came from a server that reported no token usage: their tokens and cost are "
            f"estimated from the length of their prompt and answer ({estimated_tokens:,} of the tokens{of_cost}; "
            "the columns estimated_tokens and estimated_cost), so the totals are estimates."
        )
    unpriced = int(per_version["unpriced"].sum())
    if unpriced:
        notes.append(f"{unpriced} request(s) had tokens but no price: their cost is missing from the totals.")
    return notes


def _shown_columns(per_version: pd.DataFrame) -> list[str]:
    """The table's columns: ``answers`` only when a request gave several, and the unreported,
    unpriced and estimated columns only when some row has them."""
    columns = ["model_version", "model", "tasks", "requests", "answers", "cached", "unreported", "unpriced"]
    columns += ["prompt_tokens", "completion_tokens", "cost", "cost_per_task", "estimated_tokens", "estimated_cost"]
    if (per_version["answers"] == per_version["requests"]).all():
        columns.remove("answers")  # one answer per request: no samples asked with n
    optional = ("unreported", "unpriced", "estimated_tokens", "estimated_cost")
    return [c for c in columns if c not in optional or per_version[c].fillna(0).any()]


def _columns_note(columns: list[str], unreported: int) -> Paragraph:
    """What the table's columns count, those it shows only."""
    return Paragraph(
        "One row per model version (each judge, and each setting of samples, is its own version). tasks: "
        "tasks it answered; requests: HTTP requests that carried their tokens; "
        + (
            "answers: answers those requests gave (several per request when samples were asked with n); "
            if "answers" in columns
            else ""
        )
        + "cached: answers that cost nothing; cost_per_task: cost divided by tasks"
        + (
            "; unreported: requests whose server reported no token usage, whose tokens and cost are estimated "
            "(estimated_tokens, estimated_cost: the estimated part of the tokens and of the cost)"
            if unreported
            else ""
        )
        + ". cost_per_task.csv has every task."
    )
