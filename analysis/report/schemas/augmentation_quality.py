"""Report section for the augmentation-quality guideline (seed 001): pilot agreement against its
targets, calibration markers, the disagreement rule and annotator drift.

Shown for the ``augmentation_quality`` schema and for any schema whose metadata declares
``agreement_targets``, ``calibration_markers`` or ``drift_block_size``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, TypeVar

import pandas as pd

from judgelab.analysis.grouped import RowGroups
from judgelab.analysis.qc.augmentation_quality import (
    DEFAULT_BLOCK_SIZE,
    annotator_drift_by_group,
    calibration_check_by_group,
    pilot_agreement_by_group,
    resolve_disagreements_by_group,
)
from judgelab.analysis.ratings import numeric_ratings_grouped
from judgelab.analysis.report.blocks import Block, Figure, Glance, Paragraph, Section, Table
from judgelab.analysis.report.data import (
    ProjectData,
    at_extreme,
    first_of,
    is_nan,
    number,
    percent,
    plural,
    section_or_none,
    short_table,
    two_places,
    with_project,
)
from judgelab.analysis.report.plots import drift_cells_png, drift_png
from judgelab.analysis.report.schemas import SCHEMA_SECTIONS

SCHEMA = "augmentation_quality"
T = TypeVar("T")
GUIDELINE_KEYS = ("agreement_targets", "calibration_markers", "drift_block_size")
MEASURES = {
    "cohen_kappa": "Cohen's kappa",
    "exact_agreement": "exact agreement",
    "adjacent_agreement": "adjacent agreement",
}


def declares_guideline(data: ProjectData) -> bool:
    """Another schema whose metadata declares the guideline's targets, markers or drift block."""
    meta = data.schema_meta or {}
    return any(key in meta for key in GUIDELINE_KEYS)


@SCHEMA_SECTIONS.register(SCHEMA, also_when=declares_guideline)
def augmentation_section(data: ProjectData) -> Section | None:
    """Pilot, calibration, disagreement rule and drift, each shown when its data is there."""
    meta = data.schema_meta or {}
    if data.usable_human.empty:
        return None
    subsections = [pilot_section(data), calibration_section(data), disagreement_section(data), drift_section(data)]
    intro = Paragraph(
        "The annotation guideline sets targets for the pilot agreement, expected shares of some scores "
        "(calibration markers), a rule for resolving disagreements, and a self-check every "
        f"{meta.get('drift_block_size') or DEFAULT_BLOCK_SIZE} annotations. Each part below compares the "
        "annotations with the guideline."
    )
    return section_or_none("Guideline checks", [intro], subsections)


def _ratings(data: ProjectData, groups: RowGroups | None) -> pd.DataFrame:
    """The human numeric ratings (latest per task and annotator) of every group (see
    ``ProjectData.per_cell``), computed once for the four checks."""
    key = "numeric_ratings" if groups is None else "numeric_ratings (every cell)"
    return data.cached(key, lambda: numeric_ratings_grouped(data.judgments, groups, None))


def _errors_kept(
    compute: Callable[[ProjectData, RowGroups | None], list[T]],
) -> Callable[[ProjectData, RowGroups | None], list[T | ValueError]]:
    """``compute`` whose ``ValueError`` (a bad target in the schema, say) becomes every group's result,
    for the section to show instead of its table."""

    def kept(data: ProjectData, groups: RowGroups | None) -> list[T | ValueError]:
        try:
            return compute(data, groups)
        except ValueError as exc:
            return [exc] * (1 if groups is None else groups.size)

    return kept


def _pilot_pair_words(tied: int) -> str:
    """How the pilot's two annotators were chosen: ``tied`` pairs share as many tasks as they do."""
    if tied == 0:
        return "the two named"
    if tied == 1:
        return "the pair sharing the most tasks"
    return f"the first by name of the {tied} pairs sharing the most tasks"


def pilot_section(data: ProjectData) -> Section | None:
    """The two pilot annotators' agreement against the targets, pass/fail per measure."""
    meta = data.schema_meta or {}
    if "agreement_targets" not in meta and data.schema_name != SCHEMA:
        return None
    pilot = data.per_cell(
        "pilot_agreement",
        _errors_kept(lambda d, g: pilot_agreement_by_group(d.judgments, meta, g, ratings=_ratings(d, g))),
    )
    if isinstance(pilot, ValueError):
        exc = pilot
        return Section("Pilot agreement against the targets", [Paragraph(f"No pilot agreement yet: {exc}.")])
    table = pilot.table
    if table.empty:
        return None
    first, second = pilot.annotators
    records = table.to_dict("records")  # read once, for the table and the sentences
    size = table["pilot_size"].iloc[0]
    n_shared = len(pilot.units)
    size_text = ""
    if size is not None and not is_nan(size):
        met = "meets" if n_shared >= int(size) else "falls short of"
        size_text = f" They share {plural(n_shared, 'task')}, which {met} the pilot size of {int(size)} samples."
    blocks: list[Block] = [
        Paragraph(
            f"The guideline's pilot has two annotators rate the same samples; here they are {first} and "
            f"{second}, {_pilot_pair_words(pilot.tied_pairs)}, compared on every task both rated.{size_text} Each "
            "row is one measure of one item against its target (the guideline asks for more than the "
            "target); n_units is the tasks both gave a score for that item."
        ),
        Table(
            "pilot_agreement",
            "Pilot agreement against the guideline's targets",
            _pilot_rows(records),
            data=with_project(table, data.project),
        ),  # fmt: skip
    ]
    blocks += [_pilot_item_sentence(record) for record in records]
    blocks.append(Paragraph(f"Overall the pilot {'passes' if pilot.passed else 'fails'}: every item must pass."))
    glance = [_pilot_glance(record) for record in records]
    return Section("Pilot agreement against the targets", blocks, glance=glance)


def _pilot_rows(records: list[dict[str, Any]]) -> pd.DataFrame:
    """The shown table: one row per item and measure, with its target and pass or fail."""
    rows = []
    for record in records:
        for column, name in MEASURES.items():
            rows.append(
                {
                    "item": record["item"],
                    "measure": name,
                    "n_units": record["n_units"],
                    "value": record[column],
                    "target": f"more than {record[column + '_target']:.2f}",
                    "result": "pass" if record[column + "_passed"] else "fail",
                }
            )
    return pd.DataFrame(rows)


def _pilot_item_sentence(record: dict[str, Any]) -> Paragraph:
    """One item's measures against their targets, and whether it passes all of them."""
    verdicts = [
        f"{name} {number(record[column]) if not is_nan(record[column]) else 'undefined, all answers alike'} "
        f"({'pass' if record[column + '_passed'] else 'fail'})"
        for column, name in MEASURES.items()
    ]
    overall = "passes all three targets" if record["passed"] else "misses at least one target"
    return Paragraph(f"{record['item']}, on {record['n_units']} tasks: {'; '.join(verdicts)}; it {overall}.")


def _pilot_glance(record: dict[str, Any]) -> Glance:
    """The front page's finding for one item of the pilot: pass or not, and its measures."""
    return Glance(
        "Targets",
        f"pilot: {record['item']}",
        ("passes" if record["passed"] else "misses a target")
        + ": "
        + ", ".join(f"{name} {number(record[column], 2)}" for column, name in MEASURES.items())
        + f"; {plural(int(record['n_units']), 'task')}",
        1.0 if record["passed"] else 0.0,
    )


def calibration_section(data: ProjectData) -> Section | None:
    """Each calibration marker's share of scores, overall, per model and per augmentation type."""
    markers = (data.schema_meta or {}).get("calibration_markers")
    if not markers:
        return None
    check = data.per_cell(
        "calibration_check",
        lambda d, g: calibration_check_by_group(d.judgments, d.tasks, d.schema_meta, g, ratings=_ratings(d, g)),
    )
    if check.empty:
        return Section("Calibration markers", [Paragraph("No rating matches a calibration marker yet.")])
    records = check.to_dict("records")
    shown = pd.DataFrame(
        {
            "marker": [_marker_text(row) for row in records],
            "scope": check["scope"],
            "group": check["group"],
            "n_ratings": check["n_ratings"],
            "share": check["share"].map(percent),
            "target": [_range_text(row.get("min"), row.get("max")) for row in records],
            "result": check["passed"].map({True: "pass", False: "fail"}),
        }
    )
    overall = check[check["scope"] == "overall"]
    blocks: list[Block] = [
        Paragraph(
            "A calibration marker is the share of one score among the ratings of an item (for example "
            "SP = 3 among rephrased texts) that the guideline expects to fall in a range. share is that "
            "share among n_ratings ratings (every rating of every annotator counts); a marker passes when "
            "the share is inside the target range. Rows of scope 'model' and 'augmentation_type' repeat "
            "the check on each group of tasks."
        ),
        Paragraph(
            f"Overall, {int(overall['passed'].sum())} of {len(overall)} markers pass; per model and per "
            f"augmentation type, {int(check.loc[check['scope'] != 'overall', 'passed'].sum())} of "
            f"{int((check['scope'] != 'overall').sum())} group checks pass."
        ),
    ]
    for row in (record for record, scope in zip(records, check["scope"], strict=True) if scope == "overall"):
        blocks.append(
            Paragraph(
                f"{_marker_text(row)}: {percent(row['share'])} of {row['n_ratings']} ratings "
                f"({row['n_value']} of them), target {_range_text(row.get('min'), row.get('max'))}: "
                f"{'pass' if row['passed'] else 'fail'}."
            )
        )
    blocks += short_table(
        "calibration_markers", "Calibration markers", shown, max(data.options.max_rows, 40),
        data=with_project(check, data.project),
    )  # fmt: skip
    return Section("Calibration markers", blocks)


def _marker_text(row: Mapping[str, Any]) -> str:
    value = row["value"]
    value = int(value) if isinstance(value, float) and value.is_integer() else value
    subset = f" among {row['subset']}" if row.get("subset") else ""
    return f"{row['item']} = {value}{subset}"


def _range_text(low: object, high: object) -> str:
    low = None if low is None or is_nan(low) else float(low)
    high = None if high is None or is_nan(high) else float(high)
    if low is not None and high is not None:
        return f"{low:.0%} to {high:.0%}"
    if high is not None:
        return f"at most {high:.0%}"
    if low is not None:
        return f"at least {low:.0%}"
    return "any"


def disagreement_section(data: ProjectData) -> Section | None:
    """The guideline's rule: average the scores, or list the items to discuss."""
    resolution = data.per_cell(
        "disagreements",
        _errors_kept(
            lambda d, g: resolve_disagreements_by_group(d.judgments, d.schema_meta, g, ratings=_ratings(d, g))
        ),
    )
    if isinstance(resolution, ValueError):
        return None
    if resolution.action == "none":
        return Section(
            "Disagreement rule",
            [Paragraph("The two annotators share no rated sample yet, so the disagreement rule does not apply.")],
        )
    threshold = resolution.threshold
    n_disagreeing = int(round(resolution.share_disagreeing * resolution.n_samples))
    text = (
        f"The guideline averages the two annotators' scores when they disagree on fewer than {threshold:.0%} of "
        f"the samples, and asks them to meet and recalibrate otherwise. They both rated "
        f"{plural(resolution.n_samples, 'sample')} and differ on at least one item in {n_disagreeing} of them "
        f"({percent(resolution.share_disagreeing)}), "
    )
    blocks: list[Block] = []
    if resolution.action == "average":
        text += (
            "so the rule says to average: the averaged score of every sample and item is in averaged_scores.csv "
            f"({plural(len(resolution.averaged), 'row')})."
        )
        blocks.append(Paragraph(text))
        blocks += short_table(
            "averaged_scores",
            "Averaged scores (first rows)",
            resolution.averaged,
            10,
            data=with_project(resolution.averaged, data.project),
        )
    else:
        text += (
            f"so the rule says to meet and discuss: the {plural(len(resolution.to_discuss), 'disagreement')} "
            "to discuss are listed below (the task, the item and each annotator's score)."
        )
        blocks.append(Paragraph(text))
        blocks += short_table(
            "disagreements_to_discuss",
            "Disagreements to discuss",
            resolution.to_discuss,
            data.options.max_rows,
            data=with_project(resolution.to_discuss, data.project),
        )
    return Section("Disagreement rule", blocks)


#: the shifts tied for the largest a sentence names before it points to the table
NAMED_SHIFTS = 4


def _largest_shifts(later: pd.DataFrame, block_size: int) -> str:
    """The sentence on the largest shift of a mean score from an annotator's first block: every
    shift as large at the two decimals it prints (an annotator's two items, or two annotators,
    can move by the same), not the first of them in the table."""
    size = later["change_vs_first_block"].abs()
    tied = later.loc[at_extreme(size, two_places).index]

    def moved(row: pd.Series, opening: str) -> str:
        first = int(row["block"]) * block_size + 1
        return (
            f"{row['annotator']}'s mean {row['item']} moved by {row['change_vs_first_block']:+.2f}{opening} "
            f"between their first block and block {int(row['block']) + 1} (annotations {first}-"
            f"{first + int(row['n_annotations']) - 1}, {int(row['n_ratings'])} ratings)"
        )

    if len(tied) == 1:
        return f"The largest shift: {moved(tied.iloc[0], ' points')}."
    listing = first_of(
        [moved(row, "") for _, row in tied.iterrows()],
        NAMED_SHIFTS,
        lambda more: f"{plural(more, 'other')} as large (annotator_drift.csv)",
    )
    return f"{len(tied)} means shifted the most, by {two_places(float(size.max()))} points each: {listing}."


def drift_section(data: ProjectData) -> Section | None:
    """Mean score per block of annotations per annotator: does an annotator drift over time?"""
    meta = data.schema_meta or {}
    if "drift_block_size" not in meta and data.schema_name != SCHEMA:
        return None
    block_size = int(meta.get("drift_block_size") or DEFAULT_BLOCK_SIZE)
    drift = data.per_cell(
        "annotator_drift",
        lambda d, g: annotator_drift_by_group(d.judgments, meta, g, block_size=block_size, ratings=_ratings(d, g)),
    )
    if drift.empty:
        return None
    blocks: list[Block] = [
        Paragraph(
            f"Each annotator's annotations are taken in the order they were made (created_at) and cut into "
            f"blocks of {block_size}, as in the guideline's self-check; the mean score of each block is "
            "plotted. A line that climbs or falls means the annotator grew more lenient or stricter over time; "
            "change_vs_first_block in the table is the block's mean minus the annotator's first block."
        )
    ]
    n_blocks = drift.groupby("annotator")["block"].max() + 1
    if int(n_blocks.max()) < 2:
        blocks.append(
            Paragraph(
                f"No annotator has more than {block_size} annotations yet, so there is only one block each "
                "and no drift to see."
            )
        )
    else:
        later = drift[drift["block"] > 0].dropna(subset=["change_vs_first_block"])
        if not later.empty:
            blocks.append(Paragraph(_largest_shifts(later, block_size)))
        blocks.append(
            Figure(
                f"Mean score per block of {block_size} annotations",
                render=partial(drift_png, drift, block_size),
                combine=drift_cells_png,
                payload=(drift, block_size),
            )
        )
    shown = drift.drop(columns=["first_annotation", "last_annotation"]).assign(block=drift["block"] + 1)
    blocks += short_table(
        "annotator_drift", "Mean score per block", shown, data.options.max_rows, data=with_project(drift, data.project)
    )
    return Section("Annotator drift", blocks)
