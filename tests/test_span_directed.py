"""HotelCheckSpan Table 6's directed rows on a hand-computed fixture.

Two examples, each annotated by a1 (group A, stage 1), b1 (B, 1), a2 (A, 2), b2 (B, 2) and the
model m. Spans (start, end, label), I = Incorrect, M = Misleading:

    e1: a1 (0,10,I)   b1 (0,10,M) (20,30,I)   a2 (0,10,I)   b2 (0,5,I)   m (20,30,I)
    e2: a1 -          b1 (0,4,M)              a2 (0,4,M)    b2 -         m -

Per-span form, pooled over the two examples, the left side the reference (per pair P, R, F1):

- A → B, stage 1 (a1 → b1): hypothesis spans (0,10,M) (20,30,I) (0,4,M): soft credits 1, 0, 0
  -> P 1/3; the one reference span is fully covered -> R 1, F1 0.5. Hard: no label matches: 0.
- A → B, stage 2 (a2 → b2): P 5/5 = 1; R (5/10 + 0) / 2 = 0.25; F1 0.4; hard the same (I = I).
- Stage 1 → Stage 2, four pairs:
    a1 → a2: P (1 + 0)/2 = 0.5, R 1, F1 2/3 (hard the same)
    a1 → b2: P 1, R 0.5, F1 2/3 (hard the same)
    b1 → a2: soft P 1, R 2/3, F1 0.8; hard P 1/2, R 1/3, F1 0.4
    b1 → b2: soft P 1, R (0.5 + 0 + 0)/3 = 1/6, F1 2/7; hard 0, 0, 0
  means: soft P 0.875, R 7/12, F1 (2/3 + 2/3 + 0.8 + 2/7) / 4; hard P 0.5, R 11/24, F1 13/30.
- Human → m, four pairs: only b1 → m scores (P 1, R 1/3, F1 0.5, hard the same):
  means P 0.25, R 1/12, F1 0.125.
"""

from __future__ import annotations

import pandas as pd
import pytest

from judgelab.analysis.span_directed import directed_span_table, role_rater

ROLES = {"a1": ("A", 1), "b1": ("B", 1), "a2": ("A", 2), "b2": ("B", 2)}
SPANS = {
    "e1": {"a1": [(0, 10, "I")], "b1": [(0, 10, "M"), (20, 30, "I")], "a2": [(0, 10, "I")], "b2": [(0, 5, "I")],
           "m": [(20, 30, "I")]},
    "e2": {"a1": [], "b1": [(0, 4, "M")], "a2": [(0, 4, "M")], "b2": [], "m": []},
}  # fmt: skip


def rater(name: str) -> str:
    return name if name == "m" else role_rater(name, *ROLES[name])


def fixture() -> tuple[pd.DataFrame, pd.DataFrame]:
    annotations, spans = [], []
    for example, marks in SPANS.items():
        for name, marked in marks.items():
            group, stage = ROLES.get(name, (None, None))
            source = "model:m" if name == "m" else "human"
            annotations.append({"example": example, "rater": rater(name), "source": source, "group": group,
                                "stage": stage})  # fmt: skip
            spans += [{"example": example, "rater": rater(name), "start": s, "end": e, "label": label}
                      for s, e, label in marked]  # fmt: skip
    return pd.DataFrame(spans), pd.DataFrame(annotations)


def test_table_6_directed_rows_by_hand() -> None:
    table, pairwise = directed_span_table(*fixture())
    rows = table.set_index("comparison")
    assert list(rows.index) == [
        "Group A → Group B (stage 1)",
        "Group A → Group B (stage 2)",
        "Stage 1 → Stage 2",
        "Human → m",
    ]
    expected = {  # P soft, R soft, F1 soft, P hard, R hard, F1 hard, pairs
        "Group A → Group B (stage 1)": (1 / 3, 1, 0.5, 0, 0, 0, 1),
        "Group A → Group B (stage 2)": (1, 0.25, 0.4, 1, 0.25, 0.4, 1),
        "Stage 1 → Stage 2": (0.875, 7 / 12, (2 / 3 + 2 / 3 + 0.8 + 2 / 7) / 4, 0.5, 11 / 24, 13 / 30, 4),
        "Human → m": (0.25, 1 / 12, 0.125, 0.25, 1 / 12, 0.125, 4),
    }
    for name, values in expected.items():
        row = rows.loc[name]
        got = (row["precision_soft"], row["recall_soft"], row["f1_soft"], row["precision_hard"], row["recall_hard"],
               row["f1_hard"], row["n_pairs"])  # fmt: skip
        assert got == pytest.approx(values), name
    assert rows.loc["Group A → Group B (stage 1)", ["reference", "hypothesis"]].tolist() == ["group A", "group B"]
    # the left side is the reference: a1 is the reference of the stage-1 A/B pair
    pair = pairwise[(pairwise["comparison"] == "Group A → Group B (stage 1)") & (pairwise["match"] == "soft")]
    assert pair[["reference", "hypothesis"]].values.tolist() == [[rater("a1"), rater("b1")]]


def test_f1_is_averaged_per_pair_not_recomputed() -> None:
    """Stage 1 → Stage 2 soft: the mean F1 is not 2PR/(P+R) of the mean P and R."""
    row = directed_span_table(*fixture())[0].set_index("comparison").loc["Stage 1 → Stage 2"]
    harmonic = 2 * row["precision_soft"] * row["recall_soft"] / (row["precision_soft"] + row["recall_soft"])
    assert row["f1_soft"] != pytest.approx(harmonic)


def test_only_the_last_stage_examples_count() -> None:
    """An example annotated in stage 1 only (e3) is outside the Stage 2 subset."""
    spans, annotations = fixture()
    extra_annotations = pd.DataFrame([{"example": "e3", "rater": rater("a1"), "source": "human", "group": "A",
                                       "stage": 1}, {"example": "e3", "rater": rater("b1"), "source": "human",
                                       "group": "B", "stage": 1}])  # fmt: skip
    extra_spans = pd.DataFrame([{"example": "e3", "rater": rater("b1"), "start": 0, "end": 9, "label": "I"}])
    table = directed_span_table(pd.concat([spans, extra_spans]), pd.concat([annotations, extra_annotations]))[0]
    row = table.set_index("comparison").loc["Group A → Group B (stage 1)"]
    assert row["precision_soft"] == pytest.approx(1 / 3)  # e3's unmatched span would make it 1/4


def test_report_section_matches_the_hand_computation(tmp_path) -> None:
    """The same design as Label Studio tasks: one task per text and role (copies share their key),
    the model's prediction on the stage-2 group-A copy. The report is cut by group and stage (the
    published data set's cut, as ``judgelab load span_annotation`` keeps it); the directed table
    compares those cells, so it appears once, uncut."""
    from judgelab.analysis.loaders.registry import get_data_set
    from judgelab.analysis.report import build_report
    from judgelab.analysis.report.data import ReportOptions
    from judgelab.configs.schema import get_schema

    tasks, judgments, spans = [], [], []
    task_ids = {}
    for example in SPANS:
        for name, (group, stage) in ROLES.items():
            task_ids[example, name] = task = len(task_ids) + 1
            tasks.append({"project": 7, "task_id": task, "schema": "hotel_spans", "key": example, "group": group,
                          "stage": stage, "summary": "x" * 40})  # fmt: skip
    for example, marks in SPANS.items():
        for name, marked in marks.items():
            task = task_ids[example, "a2" if name == "m" else name]
            source = "model:m" if name == "m" else "human"
            base = {"project": 7, "task_id": task, "annotation_id": f"{name}-{example}", "annotator": name,
                    "source": source, "was_cancelled": False}  # fmt: skip
            judgments.append({**base, "item": "impression", "value": "5"})
            spans += [{**base, "field": "summary", "start": s, "end": e, "text": "x" * (e - s),
                       "label": {"I": "Incorrect", "M": "Misleading"}[label], "note": None}
                      for s, e, label in marked]  # fmt: skip
    tables = {"tasks": pd.DataFrame(tasks), "judgments": pd.DataFrame(judgments), "spans": pd.DataFrame(spans)}
    paths = build_report(tables, {"hotel_spans": get_schema("hotel_spans").meta}, tmp_path,
                         options=ReportOptions(n_boot=0, cuts={"7": get_data_set("span_annotation").cut}))  # fmt: skip
    table = pd.read_csv(paths.csv["directed_span_agreement"]).set_index("comparison")
    assert "group" not in table.columns  # not cut by the cells it compares
    assert table.loc["Group A → Group B (stage 1)", "precision_soft"] == pytest.approx(1 / 3)
    assert table.loc["Stage 1 → Stage 2", "recall_hard"] == pytest.approx(11 / 24)
    assert table.loc["Human → model:m", "f1_soft"] == pytest.approx(0.125)
    markdown = paths.markdown.read_text(encoding="utf-8")
    assert markdown.count("### Directed span agreement (Table 6)") == 1
    assert "Every table and figure below is cut by group and stage" in markdown
