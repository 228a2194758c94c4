"""A story summary's lines: the one parser every layer uses (import, backend, loaders).

A summary's ``lines`` may be given as

- a list, of strings or of ``{"text", "alternate"}`` objects;
- the JSON (or Python) text of such a list: ``'["He ran.", "She stopped."]'``;
- plain text: one line per line break, and a text on one line is split into its sentences
  (:func:`split_sentences`), so ``'He ran. She stopped.'`` is two lines wherever it is read.

:func:`parse_lines` gives the raw items and how they were read; :func:`story_lines` the lines as
``{"text", "alternate"?}`` dicts (what the label config's ``$lines`` shows).
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

# a space after . ! ? (or after one followed by a closing quote or bracket), not before a lower-case word
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"”’')]))\s+(?![a-zà-ÿ])")


def split_sentences(text: str) -> list[str]:
    """Sentences of a text: split after ``.``, ``!`` or ``?`` and a space, unless the next word
    starts in lower case.

    >>> split_sentences('He ran. "Stop!" she said. Done?  Yes')
    ['He ran.', '"Stop!" she said.', 'Done?', 'Yes']
    """
    return [part.strip() for part in _SENTENCE_END.split(text.strip()) if part.strip()]


def parse_lines(value: object) -> tuple[list[Any] | None, str]:
    """A summary's line items from a list, the text of a list, or plain text.

    Returns ``(items, how)`` with ``how`` one of ``list``, ``repr`` (the text of a list),
    ``text`` (plain text), or ``(None, reason)`` when the value is none of these. Items are
    what the value holds (strings, or ``{text, alternate}`` objects).

    >>> parse_lines(["A.", "B."])
    (['A.', 'B.'], 'list')
    >>> parse_lines("['A.', 'B.']")
    (['A.', 'B.'], 'repr')
    >>> parse_lines("He ran. She stopped.")
    (['He ran.', 'She stopped.'], 'text')
    >>> parse_lines("First line\\nSecond. Still the second")
    (['First line', 'Second. Still the second'], 'text')
    """
    if isinstance(value, list):
        return list(value), "list"
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            parsed = _literal(stripped)
            if isinstance(parsed, list):
                return parsed, "repr"
        if "\n" in stripped:
            return [line.strip() for line in stripped.splitlines() if line.strip()], "text"
        return split_sentences(stripped), "text"
    return None, f"expected a list of lines or a string, got {type(value).__name__}"


def looks_like_a_list(value: object) -> bool:
    """A string that starts like the text of a list (and should parse as one)."""
    return isinstance(value, str) and value.strip().startswith("[")


def _literal(text: str) -> Any:
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return None


def line_text(item: Any) -> str | None:
    """The text of one line item (a string or ``{"text": ...}``), ``None`` when it has none."""
    if isinstance(item, dict):
        item = item.get("text")
    return item if isinstance(item, str) else None


def line_texts(value: object) -> tuple[list[str] | None, str]:
    """Like :func:`parse_lines`, with each item as its text (``str`` of what has no text).

    >>> line_texts('[{"text": "A."}, "B."]')
    (['A.', 'B.'], 'repr')
    """
    items, how = parse_lines(value)
    if items is None:
        return None, how
    return [text if (text := line_text(item)) is not None else str(item) for item in items], how


def story_lines(value: object) -> list[dict[str, str]]:
    """The lines as ``{"text", "alternate"?}`` dicts; items without text become empty lines, so
    line numbers stay those of the input. Nothing parseable gives ``[]``.

    >>> story_lines('[{"text": "A.", "alternate": "A!"}, "B."]')
    [{'text': 'A.', 'alternate': 'A!'}, {'text': 'B.'}]
    """
    items, _ = parse_lines(value)
    lines = []
    for item in items or []:
        line = {"text": line_text(item) or ""}
        alternate = item.get("alternate") if isinstance(item, dict) else None
        if isinstance(alternate, str) and alternate.strip():
            line["alternate"] = alternate
        lines.append(line)
    return lines


def line_alternates(lines: list[dict[str, str]]) -> list[dict[str, Any]]:
    """The lines that have an alternate, with their index as ``line`` (the swap question's items;
    the schema's ``derived_fields`` rule ``select_with: alternate``)."""
    return [
        {"line": i, "text": line["text"], "alternate": line["alternate"]}
        for i, line in enumerate(lines)
        if line.get("alternate")
    ]


def task_alternates(data: dict[str, Any]) -> list[dict[str, Any]]:
    """A task's swap items: its ``alternates`` field when given (as a prepared task has it), else
    derived from the lines that carry an alternate."""
    given = data.get("alternates")
    if isinstance(given, list):
        return [a if isinstance(a, dict) else {} for a in given]
    return line_alternates(story_lines(data.get("lines")))
