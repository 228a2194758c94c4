"""Our answer-JSON repair (``backend/llm/json_repair.py``) against the ``json-repair`` package.

Corpus: the hostile answers of ``tests/test_llm_answers.py`` (every ``text`` its parametrized tests
feed to ``extract_json``, with the value the test expects: fences, prose, Python literals, trailing
commas, unquoted keys, comments, truncation at many points, nothing usable), read from the test
module's marks so the bench follows the tests. For each answer and each parser:

- ``value``: the parsed value equals the one the test expects (``None`` expected: nothing usable;
  json-repair's ``""`` or a non-container counts as nothing);
- ``draft``: ``parse_json_answer`` (spans, fields, none-identified, dropped) built on that parser's
  value equals the one built on the expected value.

Speed: each parser over the corpus and over long answers (200 spans: valid, fenced in prose,
truncated), the best of ``--repeat`` runs, printed as json-repair's time over ours in the same run.

    python bench/json_repair_compare.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import json_repair  # noqa: E402
import test_llm_answers  # noqa: E402

from judgelab.backend.llm import answers  # noqa: E402
from judgelab.backend.llm.json_repair import answer_text, extract_json  # noqa: E402

FOUND = test_llm_answers.ANSWER


def corpus() -> list[tuple[str, str, Any]]:
    """(test, answer, expected value) for every answer the extract_json tests feed in."""
    cases: list[tuple[str, str, Any]] = []
    for name in dir(test_llm_answers):
        test = getattr(test_llm_answers, name)
        if not name.startswith("test_extract_json") or not callable(test):
            continue
        for mark in getattr(test, "pytestmark", []):
            if mark.name != "parametrize":
                continue
            argnames = [a.strip() for a in (mark.args[0].split(",") if isinstance(mark.args[0], str) else mark.args[0])]
            for values in mark.args[1]:
                row = dict(zip(argnames, values if len(argnames) > 1 else (values,), strict=True))
                if not isinstance(row["text"], str):
                    continue  # None, bytes, 42: answer_text's business, not a parser's
                expected = row.get("expected", FOUND if name.endswith("finds_the_answer") else None)
                cases.append((name.removeprefix("test_extract_json_"), row["text"], expected))
    cases.append(("prefers_an_object", 'Scores [1, 2] then {"annotations": []}', {"annotations": []}))
    return cases


def ours(text: str) -> Any:
    return extract_json(text)[0]


def theirs(text: str) -> Any:
    try:
        value = json_repair.loads(answer_text(text, []))
    except Exception:  # noqa: BLE001 - a parser that raises has parsed nothing
        return None
    return value if isinstance(value, dict | list) else None


def draft(value: Any) -> tuple:
    """The draft parse_json_answer makes from ``value`` (the answer's JSON already parsed)."""
    original = answers.extract_json_noting
    answers.extract_json_noting = lambda text, problems, info: (value, problems)
    try:
        parsed = answers.parse_json_answer("{}")
    finally:
        answers.extract_json_noting = original
    return (parsed.spans, parsed.fields, parsed.none_identified, parsed.dropped)


def long_answers() -> dict[str, str]:
    items = [
        {"reason": f"the data says {i}", "text": f"span number {i} of the output", "annotation_type": i % 3}
        for i in range(200)
    ]
    valid = json.dumps({"annotations": items})
    fenced = "Here is my analysis.\n```json\n" + json.dumps({"annotations": items}, indent=2) + "\n```"
    prose = "Here is my analysis [of the output]:\n" + valid + "\nLet me know if you need more."
    return {"valid": valid, "fenced in prose": fenced, "in prose": prose, "truncated": valid[:-700]}


def best_time(parse, texts: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for text in texts:
            parse(text)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    cases = corpus()
    print(f"{len(cases)} hostile answers from tests/test_llm_answers.py; json-repair {version('json-repair')}")
    print(f"{'case':<22} {'answer':<42} {'ours':>9} {'json-repair':>12}")
    totals = {"ours": [0, 0], "json-repair": [0, 0]}
    for group, text, expected in cases:
        marks = []
        for label, parse in (("ours", ours), ("json-repair", theirs)):
            value = parse(text)
            value_ok = value == expected
            draft_ok = value_ok or draft(value) == draft(expected)
            totals[label][0] += value_ok
            totals[label][1] += draft_ok
            marks.append(("value" if value_ok else "-----") + " " + ("draft" if draft_ok else "-----"))
        shown = json.dumps(text)[:40]
        print(f"{group:<22} {shown:<42} {marks[0]:>9} {marks[1]:>12}")
        if marks[1] != "value draft":
            print(f"{'':<22}   json-repair gave {json.dumps(theirs(text))[:90]}")
    for label, (values, drafts) in totals.items():
        print(f"{label}: value as expected {values}/{len(cases)}, draft as expected {drafts}/{len(cases)}")

    texts = [text for _group, text, _expected in cases]
    batches = [("the corpus", texts, args.repeat)]
    batches += [(f"a long answer (200 spans), {kind}", [text], args.repeat) for kind, text in long_answers().items()]
    for what, batch, repeat in batches:
        ours_s = best_time(ours, batch, repeat)
        theirs_s = best_time(theirs, batch, repeat)
        print(
            f"speed on {what}: ours {ours_s * 1e3:.2f} ms, json-repair {theirs_s * 1e3:.2f} ms,"
            f" json-repair/ours {theirs_s / ours_s:.2f}"
        )


if __name__ == "__main__":
    main()
