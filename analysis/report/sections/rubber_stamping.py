"""Report section "Rubber-stamping": annotators who keep nearly every suggestion much faster
than they label from scratch (:mod:`analysis.rubber_stamping`).

One sentence per annotator with the numbers behind its verdict, the table (``rubber_stamping.csv``:
every column of :data:`~analysis.rubber_stamping.RUBBER_STAMPING_COLUMNS`), a front-page finding
for each flagged annotator, and which annotators the study's estimates leave out and why.

:func:`left_out_annotators` is what an estimate reads: ``{annotator: why}`` for the project,
from the report's options (``exclude_annotators`` by name; with ``exclude_rubber_stampers``, the
annotators this project's rule flags). An estimates section passes ``set(left_out_annotators(data))``
as its ``exclude_annotators`` and can show :func:`left_out_sentence`.
"""

from __future__ import annotations

import pandas as pd

from judgelab.analysis.report.blocks import Block, Glance, Paragraph, Section
from judgelab.analysis.report.data import (
    ProjectData,
    ReportOptions,
    is_nan,
    percent,
    plural,
    short_table,
    whole_project,
)
from judgelab.analysis.report.sections.suggestions import project_review
from judgelab.analysis.rubber_stamping import (
    FLAGGED,
    MIN_SUGGESTED,
    MIN_TIMED,
    NOT_FLAGGED,
    NOT_JUDGED,
    OTHERS,
    OWN,
    rubber_stamping,
)
from judgelab.analysis.suggestions import annotation_times

TITLE = "Rubber-stamping: suggestions kept without a look?"
TOPIC = "Rubber-stamping"
MAX_SENTENCES = 12  # per-annotator sentences of annotators not flagged (the table has every one)
OPTION = "--exclude-rubber-stampers"


def project_stamping(data: ProjectData) -> pd.DataFrame:
    """The project's rubber-stamping table (every cell's rows), computed once per report."""
    whole = data.all_cells

    def compute() -> pd.DataFrame:
        times = whole.cached("annotation_times", lambda: annotation_times(whole.judgments, whole.spans))
        return rubber_stamping(
            whole.judgments,
            whole.spans,
            review=project_review(whole),
            times=times,
            kept_share_min=whole.options.stamp_kept_share,
            time_ratio_max=whole.options.stamp_time_ratio,
        )

    return whole.cached("rubber_stamping", compute)


def left_out_annotators(data: ProjectData) -> dict[str, str]:
    """``{annotator: why}``: who the project's estimates leave out, by the report's options."""
    out = {name: "named with --exclude-annotator" for name in sorted(data.options.exclude_annotators)}
    if data.options.exclude_rubber_stampers:
        table = project_stamping(data)
        for row in table[table["status"] == FLAGGED].to_dict("records"):
            out.setdefault(str(row["annotator"]), f"flagged as a rubber-stamper: {row['reason']}")
    return out


def left_out_sentence(data: ProjectData) -> str | None:
    """Which annotators the estimates leave out and why, in one sentence (None when the report
    leaves nobody out and was not asked to)."""
    left = left_out_annotators(data)
    asked = data.options.exclude_rubber_stampers or data.options.exclude_annotators
    if not asked:
        return None
    if not left:
        return (
            f"The study's estimates were asked to leave rubber-stampers out ({OPTION}), but no annotator of this "
            "project is flagged, so they keep every annotator."
        )
    listed = "; ".join(f"{name} ({why})" for name, why in left.items())
    return (
        f"Left out of the study's estimates ({plural(len(left), 'annotator')}): {listed}. Every other section of "
        "the report still counts their annotations."
    )


def _seconds(value: float) -> str:
    return f"{value:.0f} s" if value >= 10 else f"{value:.1f} s"


def _interval(row: dict) -> str:
    return f"95% interval {percent(row['kept_low'])}-{percent(row['kept_high'])}"


def _kept(row: dict) -> str:
    return (
        f"{row['annotator']} kept {row['n_kept']} of {plural(row['n_suggested'], 'suggestion')} unchanged "
        f"({percent(row['kept_share'])}, {_interval(row)})"
    )


def _time(row: dict) -> str:
    """'in a median 4.0 s each, against 21 s on 30 tasks they labelled from scratch (ratio 0.19)'."""
    text = f"in a median {_seconds(row['kept_seconds'])} each ({row['n_kept_timed']} with a lead time), against "
    if row["baseline"] == OWN:
        text += f"{_seconds(row['baseline_seconds'])} on {plural(row['n_baseline'], 'task')} they labelled from scratch"
    else:
        text += (
            f"{_seconds(row['baseline_seconds'])}, the median of the other annotators on "
            f"{plural(row['n_baseline'], 'task')} labelled from scratch (they labelled fewer than {MIN_TIMED} "
            "from scratch themselves)"
        )
    return text + f" (ratio {row['time_ratio']:.2f})"


def annotator_sentence(row: dict) -> str:
    """The verdict on one annotator with its numbers (a row of the rubber-stamping table)."""
    status = row["status"]
    if status == NOT_JUDGED and row["n_suggested"] < MIN_SUGGESTED:
        return f"{row['annotator']}: not enough annotations to judge ({row['reason']})."
    if status == NOT_JUDGED:
        return f"{_kept(row)}; not enough annotations to judge the time ({row['reason']})."
    timed = row["baseline"] in (OWN, OTHERS) and not is_nan(row["time_ratio"])
    text = f"{_kept(row)} {_time(row)}" if timed else _kept(row)
    return f"{text}: {status}" + (f" ({row['reason']})." if status == NOT_FLAGGED else ".")


def _shown(table: pd.DataFrame) -> pd.DataFrame:
    def kept(row: dict) -> str:
        return f"{row['n_kept']} of {row['n_suggested']} ({percent(row['kept_share'])}, {_interval(row)})"

    def seconds(value: float) -> str:
        return "" if is_nan(value) else _seconds(value)

    rows = table.to_dict("records")
    return pd.DataFrame(
        {
            "annotator": table["annotator"].astype(str),
            "kept unchanged": [kept(r) for r in rows],
            "median time kept": [seconds(r["kept_seconds"]) for r in rows],
            "from scratch (whose)": [
                f"{seconds(r['baseline_seconds'])} ({r['baseline']}, n {r['n_baseline']})"
                if r["baseline"] in (OWN, OTHERS)
                else f"({r['n_baseline']} timed)"
                for r in rows
            ],  # fmt: skip
            "time ratio": ["" if is_nan(r["time_ratio"]) else f"{r['time_ratio']:.2f}" for r in rows],
            "status": table["status"],
        }
    )


@whole_project
def rubber_stamping_section(data: ProjectData) -> Section | None:
    """The section (None without an annotation started from a suggestion, unless the report was
    asked to leave annotators out: then it says who)."""
    table = project_stamping(data)
    leaving = left_out_sentence(data)
    if table.empty:
        return None if leaving is None else Section(TITLE, [Paragraph(leaving)])
    options = data.options
    blocks: list[Block] = [_method_paragraph(options)]
    order = {FLAGGED: 0, NOT_FLAGGED: 1, NOT_JUDGED: 2}
    ordered = table.assign(_o=table["status"].map(order)).sort_values(["_o", "annotator"], kind="stable")
    flagged = ordered[ordered["status"] == FLAGGED]
    rest = ordered[ordered["status"] != FLAGGED]
    blocks += _annotator_paragraphs(table, flagged, rest)
    blocks += short_table(
        "rubber_stamping",
        "Suggestions kept unchanged and the time they took, per annotator",
        _shown(ordered.drop(columns="_o")),
        options.max_rows,
        data=table,
    )
    if leaving is not None:
        blocks.append(Paragraph(leaving))
    elif len(flagged):
        blocks.append(
            Paragraph(
                f"The study's estimates still count the flagged annotators; {OPTION} (judgelab report) leaves them out."
            )
        )
    return Section(TITLE, blocks, [], _glance(flagged))


def _method_paragraph(options: ReportOptions) -> Paragraph:
    """What the section measures and when it flags an annotator (the report's thresholds)."""
    return Paragraph(
        "Per annotator: how many of the annotations they started from a model's suggestion they submitted "
        "unchanged (every suggested unit kept, nothing added; see Suggestions), with a 95% Wilson interval, and "
        "the median lead time of those kept annotations against the median time of the same annotator's "
        "annotations made from scratch (no suggestion: the blind arm, tasks without a prediction), or, when "
        f"they have fewer than {MIN_TIMED}, the median of the other annotators' from-scratch annotations. An "
        f"annotator is flagged when they kept at least {percent(options.stamp_kept_share)} of the suggestions "
        f"and a kept suggestion took at most {options.stamp_time_ratio:.2f} times the from-scratch time; "
        f"judged only with at least {MIN_SUGGESTED} annotations from a suggestion and {MIN_TIMED} timed "
        "annotations on each side. A flag does not say the labels are wrong (the model may be good, the tasks "
        "easy): it says their kept suggestions cannot be told from no review, so they are not independent "
        "human labels."
    )


def _annotator_paragraphs(table: pd.DataFrame, flagged: pd.DataFrame, rest: pd.DataFrame) -> list[Block]:
    """How many annotators were flagged, then a sentence per flagged annotator and for the first
    :data:`MAX_SENTENCES` others (the rest are in the CSV)."""
    counts = table["status"].value_counts()
    blocks: list[Block] = [
        Paragraph(
            f"Of {plural(len(table), 'annotator')} who started from a suggestion: {int(counts.get(FLAGGED, 0))} "
            f"flagged, {int(counts.get(NOT_FLAGGED, 0))} not flagged, {int(counts.get(NOT_JUDGED, 0))} with too few "
            "annotations to judge."
        )
    ]
    blocks += [Paragraph(annotator_sentence(row)) for row in flagged.to_dict("records")]
    blocks += [Paragraph(annotator_sentence(row)) for row in rest.head(MAX_SENTENCES).to_dict("records")]
    if len(rest) > MAX_SENTENCES:
        blocks.append(Paragraph(f"{len(rest) - MAX_SENTENCES} more annotators are in rubber_stamping.csv."))
    return blocks


def _glance(flagged: pd.DataFrame) -> list[Glance]:
    """An at-a-glance line per flagged annotator: what they kept, and how fast."""
    return [
        Glance(
            TOPIC,
            str(row["annotator"]),
            f"flagged: kept {row['n_kept']} of {row['n_suggested']} ({percent(row['kept_share'])}) in "
            f"{_seconds(row['kept_seconds'])} each against {_seconds(row['baseline_seconds'])} from scratch "
            f"(ratio {row['time_ratio']:.2f})",
            float(row["time_ratio"]),
        )
        for row in flagged.to_dict("records")
    ]


__all__ = ["annotator_sentence", "left_out_annotators", "left_out_sentence", "project_stamping",
           "rubber_stamping_section"]  # fmt: skip
