"""Every sentence of the report stands on its numbers, on small and odd studies.

A matrix of studies made here (each seeded by its name): 0, 1, 2 and 3 annotators; ratings only
(the Likert rubric, the augmentation scales), spans only (summary flaws), spans with ratings and
a tick box (hotel spans), choices only (story line verdicts); every task annotated by everyone or
each by one (no overlap); 3 to 40 tasks, so that fewer than 30 units are shared; no judge, one
judge, two (and two that give one value throughout); arms of 1 to 4 tasks. Each report is written
as a user gets it and read back as text. The test fails on a sentence that holds 'n/a' or 'nan'
(a verdict standing on a missing number), on a verdict phrase (passes / fails the alt-test, agrees
with, within reach, above / below the annotators, detectable) without a figure in its sentence,
and on the counts the overview and the front page state when they disagree with the tables the
study was made of.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from judgelab.analysis.report import build_report
from judgelab.analysis.report.data import ReportOptions
from judgelab.configs.schema import get_schema

SUMMARY = "The hotel is near the beach. Breakfast is served until ten. Rooms have a balcony."
VERDICT_PHRASES = re.compile(
    r"passes the alt-test|fails the alt-test|agrees with|within reach|above the annotators|below the annotators|"
    r"detectable",
    re.IGNORECASE,
)
#: a quoted name ('agrees with majority' is a column's name, not a verdict); an apostrophe is not a quote
QUOTED = re.compile(r"(?<![A-Za-z])'[^']*'(?![A-Za-z])")
#: 'n/a' as a value (the glossary's quoted 'n/a' is its explanation; 'N/A, just commentary' a label)
MISSING = re.compile(r"(?<!')\bn/a\b(?!')|\b[Nn]a[Nn]\b")


@dataclass(frozen=True)
class Study:
    schema: str
    n_tasks: int
    annotators: int
    overlap: bool  # every annotator on every task, else one annotator per task
    judges: int = 0
    arm_tasks: int = 0  # tasks in each arm (0: no arms)
    review: bool = False  # two tasks in three start from judge 0's suggestion; the first annotator keeps it, fast
    one_value_judges: bool = False  # every judge gives each scale's lowest value: no alpha between judges
    one_value_humans: bool = False  # every annotator too, and marks a span on every task: nothing varies

    @property
    def id(self) -> str:
        return (
            f"{self.schema}-{self.n_tasks}t-{self.annotators}a-{'overlap' if self.overlap else 'single'}"
            f"-{self.judges}j-{self.arm_tasks}arm"
            + ("-review" if self.review else "")
            + ("-one-value-judges" if self.one_value_judges else "")
            + ("-one-value-humans" if self.one_value_humans else "")
        )


STUDIES = [
    Study("likert_rubric_es", 12, 0, True, judges=1),
    Study("likert_rubric_es", 12, 1, True),
    Study("likert_rubric_es", 12, 2, True, judges=1),
    Study("likert_rubric_es", 40, 3, True, judges=2),
    Study("likert_rubric_es", 12, 3, False, judges=1),
    Study("augmentation_quality", 9, 2, True, judges=1, arm_tasks=2),
    Study("augmentation_quality", 8, 3, True, judges=2, arm_tasks=4),
    Study("augmentation_quality", 8, 3, True, judges=2, one_value_judges=True),
    Study("augmentation_quality", 8, 3, True, judges=1, one_value_humans=True),
    Study("hotel_spans", 12, 2, True, judges=1, one_value_humans=True),
    Study("likert_rubric_es", 12, 2, True, judges=1, arm_tasks=3, one_value_humans=True),
    Study("summary_flaws", 12, 2, True, judges=1, one_value_humans=True),
    Study("story_consistency", 12, 2, True, judges=1, one_value_humans=True),
    Study("summary_flaws", 12, 2, True, judges=1),
    Study("summary_flaws", 3, 3, True),
    Study("summary_flaws", 12, 1, False, judges=1),
    Study("hotel_spans", 12, 2, True, judges=1, arm_tasks=1),
    Study("hotel_spans", 40, 3, True, judges=2, arm_tasks=3),
    Study("hotel_spans", 6, 0, True, judges=2),
    Study("story_consistency", 12, 2, True, judges=1),
    Study("story_consistency", 5, 3, False, judges=2),
    Study("likert_rubric_es", 30, 3, True, judges=1, review=True),
    Study("story_consistency", 12, 2, True, judges=1, review=True),
    Study("likert_rubric_es", 12, 2, False, judges=2, review=True),
]


def _judgment(study: Study, task: int, who: str, item: str, value: object, annotation: str) -> dict:
    return {
        "project": 1,
        "task_id": task,
        "annotation_id": annotation,
        "annotator": who if not who.startswith("model:") else None,
        "source": "human" if not who.startswith("model:") else who,
        "item": item,
        "value": str(value),
        "created_at": f"2025-05-0{1 + task % 3}T10:00:00Z",
        "updated_at": None,
        "lead_time": 20.0 + task,
        "was_cancelled": False,
        "ground_truth": False,
    }


def make_study(study: Study, seed: int | None = None) -> tuple[dict[str, pd.DataFrame], dict[str, int]]:
    """The study's tidy tables and the counts a reader should find in the report. The answers are
    drawn from a seed fixed by the study's name (``hash`` of a string changes with each interpreter)."""
    rng = np.random.default_rng(zlib.crc32(study.id.encode()) if seed is None else seed)
    meta = get_schema(study.schema).meta
    humans = [f"ann{k}" for k in range(study.annotators)]
    judges = [f"model:judge-{k}" for k in range(study.judges)]
    tasks, judgments, spans = [], [], []
    annotated: dict[str, set[int]] = {h: set() for h in humans}
    for task in range(1, study.n_tasks + 1):
        row = {"project": 1, "task_id": task, "schema": study.schema, "summary": SUMMARY, "model": f"m{task % 2}"}
        if study.schema == "story_consistency":
            row |= {"lines": SUMMARY.split(". "), "story": "A story."}
        if study.schema == "hotel_spans":
            row |= {"descriptions": "Near the beach.", "group": "A"}
        if study.arm_tasks and task <= 2 * study.arm_tasks:
            row["arm"] = "suggested" if task <= study.arm_tasks else "blind"
        tasks.append(row)
        raters = humans if study.overlap else humans[task % len(humans) : task % len(humans) + 1]
        suggestion: list[dict] = []
        for who in [*judges, *raters] if study.review else [*raters, *judges]:
            if who.startswith("model:") and row.get("arm") == "blind":
                continue
            annotation = f"{who}-{task}"
            if study.review and who == judges[0]:
                annotation = f"prediction:{task}"
            if not who.startswith("model:"):
                annotated[who].add(task)
            rows = _answers(study, meta, rng, task, who, annotation)
            if study.review and who == judges[0]:
                suggestion = rows[0]
            elif study.review and task % 3 and suggestion:  # started from judge 0's suggestion
                if who == humans[0]:  # kept unchanged, in a few seconds
                    copied = [r | {"annotation_id": annotation, "annotator": who, "source": "human", "lead_time": 3.0}
                              for r in suggestion]  # fmt: skip
                    rows = (copied, rows[1])
                rows = ([r | {"parent_prediction": task} for r in rows[0]],
                        [s | {"parent_prediction": task} for s in rows[1]])  # fmt: skip
            judgments += rows[0]
            spans += rows[1]
    columns = list(_judgment(study, 0, "x", "i", 0, "a")) + (["parent_prediction"] if study.review else [])
    frames = {
        "tasks": pd.DataFrame(tasks),
        "judgments": pd.DataFrame(judgments, columns=columns),
        "spans": pd.DataFrame(spans),
    }
    n_annotations = sum(len(t) for t in annotated.values())
    n_annotators = sum(1 for t in annotated.values() if t)
    covered = set().union(*annotated.values()) if annotated else set()
    return frames, {
        "tasks": study.n_tasks,
        "annotators": n_annotators,
        "annotations": n_annotations,
        "unannotated": study.n_tasks - len(covered),
    }


def _answers(study: Study, meta: dict, rng, task: int, who: str, annotation: str) -> tuple[list, list]:
    judgments, spans = [], []
    for item, scale in (meta.get("scales") or {}).items():
        value = int(rng.integers(scale["min"], scale["max"] + 1))
        if study.one_value_judges and who.startswith("model:") or study.one_value_humans and who.startswith("ann"):
            value = scale["min"]
        judgments.append(_judgment(study, task, who, item, value, annotation))
    if study.schema == "story_consistency":
        values = ["Consistent", "Inconsistent", "N/A, just commentary"]
        for line in range(3):
            verdict = values[0] if study.one_value_humans and who.startswith("ann") else values[int(rng.integers(0, 3))]
            judgments.append(_judgment(study, task, who, f"line_{line}", verdict, annotation))
    for control in (meta.get("span_controls") or {}).values():
        labels = control["labels"]
        if "{" in control["field"]:
            continue
        one_value = study.one_value_humans and who.startswith("ann")
        for _ in range(1 if one_value else int(rng.integers(0, 3))):
            start, end = (0, 10) if one_value else (int(rng.integers(0, 40)), 0)
            end = end or start + int(rng.integers(3, 15))
            spans.append({"project": 1, "task_id": task, "annotation_id": annotation,
                          "annotator": None if who.startswith("model:") else who,
                          "source": who if who.startswith("model:") else "human", "field": control["field"],
                          "start": start, "end": end, "text": SUMMARY[start:end],
                          "label": labels[0 if one_value else int(rng.integers(0, len(labels)))],
                          "note": None})  # fmt: skip
    if study.schema in ("summary_flaws", "hotel_spans") and not any(s["annotation_id"] == annotation for s in spans):
        item = "none_identified" if study.schema == "summary_flaws" else "no_errors"
        value = "None identified" if study.schema == "summary_flaws" else "I did not find any errors in the summary"
        judgments.append(_judgment(study, task, who, item, value, annotation))
    return judgments, spans


def sentences(markdown: str) -> list[str]:
    """The report's prose: paragraphs and bullet findings (tables, headings and images left out)."""
    out = []
    for line in markdown.splitlines():
        text = line.strip()
        if not text or text.startswith(("|", "#", "!", "```", "<")) or text.startswith("**") and "csv" in text:
            continue
        out.append(text.removeprefix("- "))
    return out


@pytest.mark.parametrize("study", STUDIES, ids=lambda s: s.id)
def test_every_sentence_stands_on_its_numbers(study: Study, tmp_path: Path) -> None:
    tables, expected = make_study(study)
    schemas = {study.schema: get_schema(study.schema).meta}
    paths = build_report(tables, schemas, tmp_path, options=ReportOptions(n_boot=20))
    markdown = paths.markdown.read_text(encoding="utf-8")
    prose = sentences(markdown)
    missing = [s for s in prose if MISSING.search(s)]
    assert not missing, "sentences on a missing number:\n" + "\n".join(missing)
    bare = [s for s in prose if VERDICT_PHRASES.search(QUOTED.sub("", s)) and not re.search(r"\d", s)]
    assert not bare, "verdicts without a figure:\n" + "\n".join(bare)

    overview = re.search(r"It has (\d+) tasks?\. (\d+) human annotators? submitted (\d+) annotations?", markdown)
    assert overview, markdown[:2000]
    assert [int(g) for g in overview.groups()] == [expected["tasks"], expected["annotators"], expected["annotations"]]
    completion = re.search(r"Completion: of the (\d+) tasks?, (\d+) have no human annotation yet", markdown)
    assert completion and [int(g) for g in completion.groups()] == [expected["tasks"], expected["unannotated"]]
