"""What reviewers did with the suggestions: one row per (annotation, suggested or final unit).

An annotation that started from a prediction (its rows have ``parent_prediction``) is compared
with that prediction's own rows (``annotation_id`` ``prediction:<parent_prediction>``), unit by
unit:

- an *item* (a choice, a rating, a number, a text answer) is matched by its item name: a
  per-task control has one answer per annotation, whatever result id it carries;
- a *span* is matched by its Label Studio region id, which Label Studio keeps when it copies a
  prediction into an annotation (a moved or relabelled span keeps its id; a deleted one is
  simply absent; a new one gets a fresh id). The span's note (per-region text) belongs to it.

``outcome`` is then ``kept`` (the same value: label, offsets and note for a span), ``edited``
(``changed`` says what: ``value``, or for a span ``label``, ``offsets``, ``note``), ``deleted``
(suggested, absent from the annotation) or ``added`` (absent from the suggestion). Label Studio's
own ``origin`` is carried as recorded, next to the outcome: it is a hint, not an audit (an edit
undone by hand stays ``prediction-changed``, some edits never flip it, deletions leave no trace).

Suggestions without region ids (imported by hand without ``id``) cannot be followed: Label Studio
gives such results fresh ids in the annotation, and every span shows as deleted and added again.
judgelab's backend gives every result an id.

Label Studio's API accepts a ``parent_prediction`` that names a prediction of another task (its
UI only ever links the task's own). Such a link says nothing about what the reviewer saw:
:func:`foreign_parent_links` finds them (when that prediction's rows are in the tables), and
the annotation counts as not started from a suggestion (:func:`without_parents`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from judgelab.analysis.tables import HUMAN_SOURCE, MULTI_VALUE_SEPARATOR, cancelled_mask
from judgelab.configs.tables import PREDICTION_PREFIX

KEPT, EDITED, DELETED, ADDED = "kept", "edited", "deleted", "added"
OUTCOMES = (KEPT, EDITED, DELETED, ADDED)
ITEM, SPAN = "item", "span"
UNKNOWN_SOURCE = "model:(unknown version)"
REVIEW_COLUMNS = [
    "project",
    "task_id",
    "annotation_id",
    "annotator",
    "lead_time",
    "parent_prediction",
    "suggestion_source",
    "unit",
    "category",
    "region_id",
    "outcome",
    "changed",
    "origin",
    "suggested",
    "final",
    "field",
    "suggested_start",
    "suggested_end",
    "final_start",
    "final_end",
]


def _column(frame: pd.DataFrame, name: str) -> pd.Series:
    return frame[name] if name in frame.columns else pd.Series(None, index=frame.index, dtype=object)


def _parent_ids(values: pd.Series) -> pd.Series:
    """``parent_prediction`` as ``prediction:<id>`` strings (None where empty)."""
    numbers = pd.to_numeric(values, errors="coerce")
    text = PREDICTION_PREFIX + numbers.astype("Int64").astype(str)
    return text.where(numbers.notna(), None)


FOREIGN_LINK_COLUMNS = ["project", "task_id", "annotation_id", "parent_prediction", "parent_project", "parent_task_id"]


def _id_text(values: pd.Series) -> pd.Series:
    """Ids as text for comparing: whole numbers without a decimal point (``5``, ``5.0``, ``"5"``
    all read ``"5"``), anything else as it is."""
    numbers = pd.to_numeric(values, errors="coerce")
    whole = numbers.notna() & (numbers == numbers.round())
    text = values.astype(str)
    text[whole] = numbers[whole].astype("int64").astype(str)
    return text


def _prediction_places(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """``prediction:<id>`` -> the project and task its rows belong to (index: annotation_id)."""
    parts = []
    for frame in frames:
        if frame.empty or "annotation_id" not in frame.columns:
            continue
        ids = frame["annotation_id"].astype(str)
        predictions = frame.loc[ids.str.startswith(PREDICTION_PREFIX)]
        parts.append(predictions.reindex(columns=["annotation_id", "project", "task_id"]))
    if not parts:
        return pd.DataFrame(columns=["parent_project", "parent_task_id"])
    places = pd.concat(parts, ignore_index=True)
    places = places.assign(annotation_id=places["annotation_id"].astype(str)).drop_duplicates("annotation_id")
    return places.set_index("annotation_id").rename(columns={"project": "parent_project", "task_id": "parent_task_id"})


def foreign_parent_links(
    judgments: pd.DataFrame, spans: pd.DataFrame, context: Sequence[pd.DataFrame] = ()
) -> pd.DataFrame:
    """The annotations whose ``parent_prediction`` names a prediction of another task (or of another
    project): one row each, with the task that prediction belongs to. A prediction is placed by
    its own rows in ``judgments``, ``spans`` and the ``context`` frames (the other projects of a
    report run); one without rows anywhere cannot be placed and is not listed."""
    columns = ["project", "task_id", "annotation_id", "parent_prediction"]
    linked = [
        frame.loc[frame["parent_prediction"].notna()].reindex(columns=columns)
        for frame in (judgments, spans)
        if not frame.empty and "parent_prediction" in frame.columns
    ]
    linked = [frame for frame in linked if not frame.empty]
    if not linked:
        return pd.DataFrame(columns=FOREIGN_LINK_COLUMNS)
    links = pd.concat(linked, ignore_index=True).drop_duplicates("annotation_id")
    links = links.assign(parent=_parent_ids(links["parent_prediction"])).dropna(subset=["parent"])
    links = links.join(_prediction_places([judgments, spans, *context]), on="parent", how="inner")
    other_task = _id_text(links["task_id"]) != _id_text(links["parent_task_id"])
    other_project = _id_text(links["project"]) != _id_text(links["parent_project"])
    return links.loc[other_task | other_project, FOREIGN_LINK_COLUMNS].reset_index(drop=True)


def without_parents(frame: pd.DataFrame, annotation_ids: Sequence[object] | pd.Series) -> pd.DataFrame:
    """``frame`` with the ``parent_prediction`` of these annotations emptied (as if each had been
    started from a blank task)."""
    if frame.empty or "parent_prediction" not in frame.columns or len(annotation_ids) == 0:
        return frame
    chosen = frame["annotation_id"].astype(str).isin({str(a) for a in annotation_ids})
    return frame.assign(parent_prediction=frame["parent_prediction"].mask(chosen)) if chosen.any() else frame


def _reviewed_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Human, not cancelled rows of annotations that started from a prediction, with ``parent``."""
    if frame.empty or "parent_prediction" not in frame.columns:
        return frame.iloc[0:0].assign(parent=pd.Series(dtype=object))
    human = frame[(_column(frame, "source").fillna(HUMAN_SOURCE) == HUMAN_SOURCE) & ~cancelled_mask(frame)]
    human = human.assign(parent=_parent_ids(human["parent_prediction"]))
    return human[human["parent"].notna()]


def joined_values(frame: pd.DataFrame, keys: list[str], column: str) -> pd.Series:
    """``column``'s distinct non-empty values per ``keys`` group, sorted and joined with " | "
    (one value as it is); groups without a value are absent. Vectorised: only groups with
    several values go through a Python join."""
    text = frame[column].astype(str).str.strip()
    present = frame[column].notna() & (text != "")
    sub = frame.loc[present, keys].assign(**{column: text[present]}).drop_duplicates()
    several = sub.duplicated(keys, keep=False)
    single = sub[~several].set_index(keys)[column]
    if not several.any():
        return single
    multi = sub[several].sort_values(column).groupby(keys, sort=False)[column].agg(MULTI_VALUE_SEPARATOR.join)
    return pd.concat([single, multi])


def _first_by(frame: pd.DataFrame, keys: list[str], columns: list[str]) -> pd.DataFrame:
    return frame.drop_duplicates(keys).set_index(keys)[columns]


def _annotations(reviewed: list[pd.DataFrame]) -> pd.DataFrame:
    """One row per reviewed annotation: project, task_id, annotation_id, annotator, lead_time, parent."""
    columns = ["project", "task_id", "annotation_id", "annotator", "lead_time", "parent"]
    parts = [frame.reindex(columns=columns) for frame in reviewed if not frame.empty]
    if not parts:
        return pd.DataFrame(columns=columns)
    frame = pd.concat(parts, ignore_index=True)
    frame["lead_time"] = pd.to_numeric(frame["lead_time"], errors="coerce")
    return frame.groupby("annotation_id", sort=False, as_index=False).agg(
        project=("project", "first"),
        task_id=("task_id", "first"),
        annotator=("annotator", "first"),
        lead_time=("lead_time", "max"),
        parent=("parent", "first"),
    )


def prediction_sources(*frames: pd.DataFrame) -> dict[str, str]:
    """``prediction:<id>`` -> the model source of that prediction's rows (``model:<version>``)."""
    found: dict[str, str] = {}
    for frame in frames:
        if frame.empty or "annotation_id" not in frame.columns:
            continue
        ids = frame["annotation_id"].astype(str)
        rows = frame.loc[ids.str.startswith(PREDICTION_PREFIX), ["annotation_id", "source"]]
        rows = rows.drop_duplicates("annotation_id")
        found.update(zip(rows["annotation_id"].astype(str).tolist(), rows["source"].astype(str).tolist(), strict=True))
    return found


def _item_units(judgments: pd.DataFrame, reviewed: pd.DataFrame, annotations: pd.DataFrame) -> pd.DataFrame:
    parents = annotations["parent"].unique()
    keys = ["annotation_id", "item"]
    rows = reviewed.assign(item=reviewed["item"].astype(str), origin=_column(reviewed, "origin"),
                           region_id=_column(reviewed, "region_id"))  # fmt: skip
    final = _first_by(rows, keys, ["region_id", "origin"]).rename(columns={"region_id": "final_region"})
    final = final.join(joined_values(rows, keys, "value").rename("final"), how="inner").reset_index()
    model = judgments[judgments["annotation_id"].isin(parents) & judgments["item"].notna()]
    model = model.assign(item=model["item"].astype(str), region_id=_column(model, "region_id"))
    suggested = _first_by(model, keys, ["region_id"]).rename(columns={"region_id": "suggested_region"})
    suggested = suggested.join(joined_values(model, keys, "value").rename("suggested"), how="inner").reset_index()
    suggested = suggested.rename(columns={"annotation_id": "parent"})
    per_annotation = annotations[["annotation_id", "parent"]].merge(suggested, on="parent")
    units = per_annotation.drop(columns="parent").merge(final, on=["annotation_id", "item"], how="outer")
    has_s, has_f = units["suggested"].notna(), units["final"].notna()
    same = units["suggested"] == units["final"]
    units["outcome"] = np.select([has_s & has_f & same, has_s & has_f, has_s], [KEPT, EDITED, DELETED], ADDED)
    units["changed"] = np.where(units["outcome"] == EDITED, "value", None)
    units["region_id"] = units["final_region"].where(units["final_region"].notna(), units["suggested_region"])
    units["unit"] = ITEM
    units["category"] = units["item"]
    return units.drop(columns=["item", "final_region", "suggested_region"])


def _span_side(rows: pd.DataFrame, key: str) -> pd.DataFrame:
    rows = rows.assign(
        region_id=rows["region_id"].astype(str),
        origin=_column(rows, "origin"),
        note=_column(rows, "note"),
        label=_column(rows, "label"),
    )
    keys = [key, "region_id"]
    side = _first_by(rows, keys, ["field", "start", "end", "origin"])
    side["label"] = joined_values(rows, keys, "label").reindex(side.index).fillna("")
    side["note"] = joined_values(rows, keys, "note").reindex(side.index).fillna("")
    return side.reset_index()


def _span_units(spans: pd.DataFrame, reviewed: pd.DataFrame, annotations: pd.DataFrame) -> pd.DataFrame:
    parents = annotations["parent"].unique()
    reviewed = reviewed[reviewed["region_id"].notna()]
    final = (
        _span_side(reviewed, "annotation_id")
        .add_prefix("f_")
        .rename(columns={"f_annotation_id": "annotation_id", "f_region_id": "region_id", "f_origin": "origin"})
    )
    model = spans[spans["annotation_id"].isin(parents) & spans["region_id"].notna()]
    suggested = _span_side(model, "annotation_id").rename(columns={"annotation_id": "parent"}).drop(columns="origin")
    suggested = suggested.add_prefix("s_").rename(columns={"s_parent": "parent", "s_region_id": "region_id"})
    per_annotation = annotations[["annotation_id", "parent"]].merge(suggested, on="parent").drop(columns="parent")
    units = per_annotation.merge(final, on=["annotation_id", "region_id"], how="outer")
    has_s, has_f = units["s_label"].notna(), units["f_label"].notna()
    both = has_s & has_f
    label = both & (units["s_label"] != units["f_label"])
    offsets = both & (
        (units["s_start"].astype("Int64") != units["f_start"].astype("Int64")).fillna(True)
        | (units["s_end"].astype("Int64") != units["f_end"].astype("Int64")).fillna(True)
        | (units["s_field"].astype(str) != units["f_field"].astype(str))
    )
    note = both & (units["s_note"].fillna("") != units["f_note"].fillna(""))
    changed = pd.Series("", index=units.index)
    for flag, name in ((label, "label"), (offsets, "offsets"), (note, "note")):
        changed = changed.where(~flag, changed + np.where(changed == "", "", "+") + name)
    edited = changed != ""
    units["outcome"] = np.select([both & ~edited, both, has_s], [KEPT, EDITED, DELETED], ADDED)
    units["changed"] = changed.where(edited, None)
    return pd.DataFrame(
        {
            "annotation_id": units["annotation_id"],
            "unit": SPAN,
            "category": units["s_label"].where(has_s, units["f_label"]),
            "region_id": units["region_id"],
            "outcome": units["outcome"],
            "changed": units["changed"],
            "origin": units["origin"],
            "suggested": units["s_label"],
            "final": units["f_label"],
            "field": units["f_field"].where(has_f, units["s_field"]),
            "suggested_start": units["s_start"],
            "suggested_end": units["s_end"],
            "final_start": units["f_start"],
            "final_end": units["f_end"],
        }
    )


def review_table(judgments: pd.DataFrame, spans: pd.DataFrame) -> pd.DataFrame:
    """The review table of every annotation in ``judgments``/``spans`` that has a
    ``parent_prediction`` (see the module docstring); empty (with its columns) when there is
    none, as with tables written before judgelab kept ``parent_prediction``. An annotation whose
    parent is a prediction of another task counts as not started from a suggestion."""
    foreign = foreign_parent_links(judgments, spans)["annotation_id"]
    judgments, spans = without_parents(judgments, foreign), without_parents(spans, foreign)
    reviewed_j = _reviewed_rows(judgments)
    reviewed_s = _reviewed_rows(spans)
    annotations = _annotations([reviewed_j, reviewed_s])
    if annotations.empty:
        return pd.DataFrame(columns=REVIEW_COLUMNS)
    parts = []
    if not judgments.empty:
        parts.append(_item_units(judgments, reviewed_j[reviewed_j["item"].notna()], annotations))
    if not spans.empty and "region_id" in spans.columns:
        parts.append(_span_units(spans, reviewed_s, annotations))
    parts = [part for part in parts if not part.empty]
    if not parts:
        return pd.DataFrame(columns=REVIEW_COLUMNS)
    units = pd.concat(parts, ignore_index=True)
    units = units.merge(annotations, on="annotation_id", how="left")
    sources = prediction_sources(judgments, spans)
    source = units["parent"].map(sources).astype(object)
    units["suggestion_source"] = source.fillna(UNKNOWN_SOURCE)  # a prediction without rows
    units["parent_prediction"] = pd.to_numeric(
        units["parent"].str.slice(len(PREDICTION_PREFIX)), errors="coerce"
    ).astype("Int64")
    for column in ("suggested_start", "suggested_end", "final_start", "final_end"):
        units[column] = pd.to_numeric(_column(units, column), errors="coerce").astype("Int64")
    units = units.reindex(columns=REVIEW_COLUMNS)
    order = {name: i for i, name in enumerate(OUTCOMES)}
    units = units.assign(_o=units["outcome"].map(order))
    units = units.sort_values(["project", "task_id", "annotation_id", "unit", "_o"], kind="stable")
    return units.drop(columns="_o").reset_index(drop=True)


def outcome_counts(review: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Counts and shares of each outcome per ``by`` group: ``n_kept`` ... ``n_added``, ``n_suggested``
    (kept + edited + deleted), ``kept_rate``, ``edited_rate``, ``deleted_rate`` (of the suggested)
    and ``added_rate`` (added units per final unit: added / (kept + edited + added))."""
    columns = [*by, *(f"n_{o}" for o in OUTCOMES), "n_suggested", "kept_rate", "edited_rate", "deleted_rate",
               "added_rate"]  # fmt: skip
    if review.empty:
        return pd.DataFrame(columns=columns)
    counts = pd.crosstab([review[c] for c in by], review["outcome"]).reindex(columns=list(OUTCOMES), fill_value=0)
    counts.columns = [f"n_{o}" for o in OUTCOMES]
    counts = counts.reset_index()
    counts["n_suggested"] = counts["n_kept"] + counts["n_edited"] + counts["n_deleted"]
    final = counts["n_kept"] + counts["n_edited"] + counts["n_added"]
    with np.errstate(divide="ignore", invalid="ignore"):
        for outcome in (KEPT, EDITED, DELETED):
            counts[f"{outcome}_rate"] = counts[f"n_{outcome}"] / counts["n_suggested"].replace(0, np.nan)
        counts["added_rate"] = counts["n_added"] / final.replace(0, np.nan)
    return counts[columns]


ANNOTATION_OUTCOME_COLUMNS = ["project", "task_id", "annotation_id", "annotator", "lead_time", "suggestion_source",
                              "n_suggested", "n_kept", "n_edited", "n_deleted", "n_added", "unchanged"]  # fmt: skip


def annotation_outcomes(review: pd.DataFrame) -> pd.DataFrame:
    """One row per reviewed annotation of the review table: its counts of kept, edited, deleted
    and added units, and ``unchanged``: the annotation kept its suggestion unchanged, every
    suggested unit kept and none added (the one definition of a suggestion "kept unchanged" at
    the level of an annotation).

    >>> review = pd.DataFrame({"project": 1, "task_id": [1, 1, 2], "annotation_id": ["a", "a", "b"],
    ...     "annotator": "ana", "lead_time": [4.0, 4.0, 30.0], "suggestion_source": "model:m",
    ...     "outcome": [KEPT, KEPT, EDITED]})
    >>> annotation_outcomes(review)[["annotation_id", "n_suggested", "n_kept", "unchanged"]]
      annotation_id  n_suggested  n_kept  unchanged
    0             a            2       2       True
    1             b            1       0      False
    """
    if review.empty:
        return pd.DataFrame(columns=ANNOTATION_OUTCOME_COLUMNS)
    keys = ["project", "task_id", "annotator", "lead_time", "suggestion_source"]
    first = review.drop_duplicates("annotation_id").set_index("annotation_id")[keys]
    counts = outcome_counts(review, ["annotation_id"]).set_index("annotation_id")
    frame = first.join(counts[[f"n_{o}" for o in OUTCOMES] + ["n_suggested"]]).reset_index()
    all_kept = frame["n_kept"] == frame["n_suggested"]
    frame["unchanged"] = (frame["n_suggested"] > 0) & all_kept & (frame["n_added"] == 0)
    return frame.reindex(columns=ANNOTATION_OUTCOME_COLUMNS)
