"""What the LLM pre-annotation cost, from the ``usage`` table (one row per task and model version;
see :data:`judgelab.configs.tables.USAGE_COLUMNS`).

``cost_per_model_version(usage)`` sums it per model version (the judges of a project);
``cost_per_task(usage)`` per task over all model versions. A cost is missing (NaN) when no
price was given; the tokens and cost of requests whose server reported no usage (counted in
``unreported``) are estimates from their text, and their part of the totals is
``estimated_tokens`` and ``estimated_cost``; answers from the cache cost nothing (counted in
``cached``).

>>> import pandas as pd
>>> usage = pd.DataFrame({"project": [1, 1, 1], "task_id": [1, 2, 1], "model_version": ["a", "a", "b"],
...     "model": ["m", "m", "n"], "requests": [1, 0, 1], "answers": [1, 0, 1], "cached": [0, 1, 0],
...     "unreported": [0, 0, 0], "unpriced": [0, 0, 0], "prompt_tokens": [100, 0, 80],
...     "completion_tokens": [10, 0, 20], "cost": [0.002, 0.0, 0.004]})
>>> cost_per_model_version(usage)[["model_version", "tasks", "requests", "cached", "cost", "cost_per_task"]]
  model_version  tasks  requests  cached   cost  cost_per_task
0             a      2         1       1  0.002          0.001
1             b      1         1       0  0.004          0.004
"""

from __future__ import annotations

import pandas as pd

from judgelab.configs.tables import USAGE_COLUMNS

COUNT_COLUMNS = ["requests", "answers", "cached", "unreported", "unpriced", "prompt_tokens", "completion_tokens"]
COUNT_COLUMNS += ["estimated_tokens"]
MONEY_COLUMNS = ["cost", "estimated_cost"]


def _normalised(usage: pd.DataFrame | None) -> pd.DataFrame:
    if usage is None:
        return pd.DataFrame(columns=USAGE_COLUMNS)
    frame = usage.reindex(columns=[*usage.columns, *[c for c in USAGE_COLUMNS if c not in usage.columns]]).copy()
    for column in COUNT_COLUMNS:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").fillna(0).astype("int64")
    for column in MONEY_COLUMNS:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    return frame


def _summed(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    grouped = frame.groupby(keys, sort=False, dropna=False)
    out = grouped[COUNT_COLUMNS].sum().reset_index()
    for column in MONEY_COLUMNS:
        out[column] = grouped[column].sum(min_count=1).to_numpy()  # NaN when no row has a price (or an estimate)
    return out


def cost_per_model_version(usage: pd.DataFrame | None) -> pd.DataFrame:
    """One row per model version (and model): tasks, requests, answers, cached answers,
    unreported and unpriced requests, tokens, cost, cost per task and the estimated part."""
    frame = _normalised(usage)
    if frame.empty:
        columns = ["model_version", "model", "tasks", *COUNT_COLUMNS, *MONEY_COLUMNS, "cost_per_task"]
        return pd.DataFrame(columns=columns)
    out = _summed(frame, ["model_version", "model"])
    tasks = frame.groupby(["model_version", "model"], sort=False, dropna=False)["task_id"].nunique().to_numpy()
    out.insert(2, "tasks", tasks)
    out["cost_per_task"] = out["cost"] / out["tasks"].where(out["tasks"] > 0)
    return out


def cost_per_task(usage: pd.DataFrame | None) -> pd.DataFrame:
    """One row per task (all its model versions together): requests, tokens and cost."""
    frame = _normalised(usage)
    if frame.empty:
        return pd.DataFrame(columns=["project", "task_id", *COUNT_COLUMNS, *MONEY_COLUMNS])
    return _summed(frame, ["project", "task_id"])
