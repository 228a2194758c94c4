"""002 story_consistency: verdict per line, swaps, ambiguous portions."""

from __future__ import annotations

import re
from typing import Any

from judgelab.backend.draft import Draft, SpanDraft
from judgelab.backend.llm.contracts import ParsedAnswer
from judgelab.backend.llm.tasks.api import Tally, align, free_text, list_index, lookup, raw_spans
from judgelab.backend.llm.tasks.base import SchemaTask
from judgelab.backend.llm.tasks.schemas import LLM_TASKS
from judgelab.configs.items import expand
from judgelab.configs.story_lines import story_lines, task_alternates
from judgelab.configs.story_words import (
    AMBIGUOUS,
    CONSISTENT,
    INCONSISTENT,
    KEEP,
    LINE_ITEM,
    NOT_APPLICABLE,
    STORY,
    SWAP,
)

VERDICTS = STORY.item_values(LINE_ITEM)
VERDICT_CONTROL, EXPLANATION_CONTROL, SWAP_CONTROL, SWAP_EXPLANATION_CONTROL = (
    STORY.item_control(STORY.constant(k))
    for k in ("line_item", "line_explanation_item", "swap_item", "swap_explanation_item")
)
AMBIGUOUS_CONTROL = STORY.span_control(LINE_ITEM)


def verdict_of(value: Any) -> str | None:
    """``Consistent`` / ``Inconsistent`` / ``N/A, just commentary`` from the ways models say it.

    >>> [verdict_of(v) for v in ("yes", "NO", True, "not consistent", "N/A", "commentary", "maybe")]
    ['Consistent', 'Inconsistent', 'Consistent', 'Inconsistent', 'N/A, just commentary', 'N/A, just commentary', None]
    """
    if isinstance(value, bool):
        return CONSISTENT if value else INCONSISTENT
    if not isinstance(value, str):
        return None
    words = re.sub(r"[^a-z/]+", " ", value.casefold()).split()
    if not words:
        return None
    phrase = " ".join(words)
    if words[0] in ("n/a", "na", "n/a,") or phrase.startswith("not applicable") or "commentary" in words:
        return NOT_APPLICABLE
    if words[0] in ("inconsistent", "no", "false", "incorrect", "unsupported") or phrase.startswith("not consistent"):
        return INCONSISTENT
    if words[0] in ("consistent", "yes", "true", "correct", "supported"):
        return CONSISTENT
    return None


def yes_no_of(value: Any) -> str | None:
    if isinstance(value, bool):
        return SWAP if value else KEEP
    if isinstance(value, str):
        words = re.sub(r"[^a-z]+", " ", value.casefold()).split()
        if words and words[0] in ("yes", "y", "true", "swap"):
            return SWAP
        if words and words[0] in ("no", "n", "false", "keep"):
            return KEEP
    return None


@LLM_TASKS.register("story_consistency")
class StoryConsistencyTask(SchemaTask):
    """Seed 002's three formats. Lines and alternates are numbered from 1 in the prompt."""

    TASK_VERSION = "1"

    def variables(self, data: dict[str, Any]) -> dict[str, Any]:
        values = super().variables(data)
        lines = story_lines(data.get("lines"))
        alternates = task_alternates(data)
        values["numbered_lines"] = "\n".join(f"Line {i + 1}: {line.get('text', '')}" for i, line in enumerate(lines))
        values["line_count"] = len(lines)
        if alternates:
            rows = []
            for k, alt in enumerate(alternates):
                line_no = alt.get("line")
                where = f" (summary line {line_no + 1})" if isinstance(line_no, int) else ""
                rows.append(
                    f'Alternate {k + 1}{where}: line "{alt.get("text", "")}" -> alternate "{alt.get("alternate", "")}"'
                )
            values["alternates"] = "\n".join(rows)
        else:
            values["alternates"] = '(none for this summary: give an empty "swaps" list)'
        return values

    def output_schema(self) -> dict[str, Any] | None:
        return {
            "type": "object",
            "properties": {
                "lines": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "line": {"type": "integer", "minimum": 1},
                            "verdict": {"type": "string", "enum": list(VERDICTS)},
                            "explanation": {"type": "string"},
                        },
                        "required": ["line", "verdict"],
                    },
                },
                "swaps": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "alternate": {"type": "integer", "minimum": 1},
                            "swap": {"type": "string", "enum": [SWAP, KEEP]},
                            "explanation": {"type": "string"},
                        },
                        "required": ["alternate", "swap", "explanation"],
                    },
                },
                "ambiguous": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "line": {"type": "integer", "minimum": 1},
                            "text": {"type": "string"},
                            "reason": {"type": "string"},
                        },
                        "required": ["line", "text", "reason"],
                    },
                },
            },
            "required": ["lines", "swaps"],
        }

    @staticmethod
    def _entries(value: Any, number_key: str) -> list[tuple[Any, Any]]:
        """``(number, entry)`` pairs from a list of objects, a list of verdicts, or a mapping."""
        if isinstance(value, dict):
            return [(k, v) for k, v in value.items()]
        if not isinstance(value, list):
            return []
        out = []
        for pos, item in enumerate(value):
            if isinstance(item, dict):
                found, number = lookup(item, number_key, "index", "id")
                out.append((number if found else pos + 1, item))
            else:
                out.append((pos + 1, item))
        return out

    def build(self, answer: ParsedAnswer, data: dict[str, Any], tally: Tally) -> Draft:
        tally.answer(answer)
        draft = Draft()
        lines = story_lines(data.get("lines"))
        alternates = task_alternates(data)
        self._add_verdicts(answer, len(lines), draft, tally)
        self._add_swaps(answer, alternates, len(lines), draft, tally)
        self._add_ambiguous(answer, lines, draft, tally)
        return draft

    def _add_verdicts(self, answer: ParsedAnswer, n: int, draft: Draft, tally: Tally) -> None:
        """Each line's verdict (and an Inconsistent one's explanation) into the draft; verdicts for
        no such line, repeated or unreadable are counted and left out, and so are lines left
        without one."""
        _, given_lines = lookup(answer.fields, "lines", "verdicts")
        for number, entry in self._entries(given_lines, "line"):
            i = list_index(number, n)
            if i is None:
                tally.counts["dropped_items"] += 1
                tally.problems.append(f"verdict for line {number!r}: no such line: dropped")
                continue
            if expand(VERDICT_CONTROL, i) in draft.choices:
                tally.counts["duplicate_verdicts"] += 1
                continue
            if isinstance(entry, dict):
                _, raw_verdict = lookup(entry, "verdict", "consistent", "answer", "label")
                _, explanation = lookup(entry, "explanation", "reason", "note")
            else:
                raw_verdict, explanation = entry, None
            verdict = verdict_of(raw_verdict)
            if verdict is None:
                tally.counts["unreadable_verdicts"] += 1
                tally.problems.append(f"line {i + 1}: verdict {raw_verdict!r} not understood")
                continue
            draft.choices[expand(VERDICT_CONTROL, i)] = [verdict]
            text = free_text(explanation)
            if verdict == INCONSISTENT:
                if text:
                    draft.texts[expand(EXPLANATION_CONTROL, i)] = text
                else:
                    tally.counts["missing_explanations"] += 1
        missing = [i for i in range(n) if expand(VERDICT_CONTROL, i) not in draft.choices]
        if missing:
            tally.counts["missing_verdicts"] = len(missing)
            tally.problems.append("no verdict for line(s) " + ", ".join(str(i + 1) for i in missing))

    def _add_swaps(
        self, answer: ParsedAnswer, alternates: list[dict[str, Any]], n: int, draft: Draft, tally: Tally
    ) -> None:
        """Each alternate's swap answer (and its explanation) into the draft. An entry names its
        alternate by number, or by the line it replaces; unknown, unreadable or repeated ones are
        dropped, and alternates left without an answer counted."""
        _, given_swaps = lookup(answer.fields, "swaps", "swap", "alternates")
        line_to_alt = {a.get("line"): k for k, a in enumerate(alternates) if isinstance(a.get("line"), int)}
        for number, entry in self._entries(given_swaps, "alternate"):
            k = list_index(number, len(alternates))
            has_alternate = isinstance(entry, dict) and lookup(entry, "alternate")[0]
            found, line_no = lookup(entry, "line") if isinstance(entry, dict) else (False, None)
            if found and not has_alternate:  # {"line": 4, "swap": "Yes"}: the alternate of line 4
                li = list_index(line_no, n)
                k = line_to_alt.get(li) if li is not None else None
            if k is None:
                tally.counts["dropped_items"] += 1
                continue
            if isinstance(entry, dict):
                _, raw_swap = lookup(entry, "swap", "answer", "choice")
                _, explanation = lookup(entry, "explanation", "reason", "note")
            else:
                raw_swap, explanation = entry, None
            choice = yes_no_of(raw_swap)
            if choice is None or expand(SWAP_CONTROL, k) in draft.choices:
                tally.counts["dropped_items"] += 1
                continue
            draft.choices[expand(SWAP_CONTROL, k)] = [choice]
            text = free_text(explanation)
            if text:
                draft.texts[expand(SWAP_EXPLANATION_CONTROL, k)] = text
        swapped = sum(1 for k in range(len(alternates)) if expand(SWAP_CONTROL, k) in draft.choices)
        missing_swaps = len(alternates) - swapped
        if missing_swaps:
            tally.counts["missing_swaps"] = missing_swaps

    def _add_ambiguous(self, answer: ParsedAnswer, lines: list[dict[str, Any]], draft: Draft, tally: Tally) -> None:
        """The ambiguous passages the model quoted, aligned on their line's text as spans; entries
        for no such line (or not objects) are dropped."""
        _, given_ambiguous = lookup(answer.fields, "ambiguous", "ambiguities")
        by_line: dict[int, list[Any]] = {}
        for number, entry in self._entries(given_ambiguous, "line"):
            i = list_index(number, len(lines))
            if i is None or not isinstance(entry, dict):
                tally.counts["dropped_items"] += 1
                continue
            by_line.setdefault(i, []).append({k: v for k, v in entry.items() if k not in ("line", "label")})
        for i, items in sorted(by_line.items()):
            text = lines[i].get("text")
            if not isinstance(text, str):
                continue
            for s in align(text, raw_spans(items, tally), "allow", tally):
                draft.spans.append(SpanDraft(expand(AMBIGUOUS_CONTROL, i), s.start, s.end, AMBIGUOUS, note=s.reason))
