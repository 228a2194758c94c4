"""Find and repair the JSON in a model's answer; nothing here raises.

Models wrap JSON in fences and prose, cut it off at the token limit, use Python literals or
single quotes and leave trailing commas; :func:`extract_json` repairs all of these and says what
it repaired (a lenient recursive-descent parser, bounded in length, candidates and depth).
Kept rather than the ``json-repair`` package, which keeps a truncated answer's half-written last
item (a span cut mid-text, a rating cut from 35 to 3) and reads prose in brackets as a list
(``bench/json_repair_compare.py`` compares both on the hostile answers of the tests).

>>> extract_json('Sure! ```json\\n{"a": [1, 2,], \\'b\\': True}\\n```')[0]
{'a': [1, 2], 'b': True}
"""

from __future__ import annotations

import ast
import json
import math
import re
from typing import Any

MAX_TEXT = 2_000_000  # longer answers are cut before parsing (a model never legitimately sends more)
MAX_CANDIDATES = 40  # opening brackets tried when looking for JSON inside prose
MAX_DEPTH = 200


class _Fail(Exception):
    """The lenient parser cannot make sense of the input."""


class _LenientParser:
    """A forgiving JSON reader: single quotes, Python literals, trailing or missing commas,
    unquoted keys, comments, raw control characters, and truncation at any point.

    On truncation every open string and bracket is closed; the innermost list drops its
    incomplete trailing element (an unfinished object is dropped whole, not kept half-filled);
    when no list is open, the innermost object drops its unfinished key/value pair.
    """

    LITERALS = {
        "true": True,
        "false": False,
        "null": None,
        "True": True,
        "False": False,
        "None": None,
        "NaN": None,
        "nan": None,
        "undefined": None,
    }

    def __init__(self, text: str, start: int) -> None:
        self.s = text
        self.i = start
        self.n = len(text)
        self.repairs: set[str] = set()
        self.truncated = False
        self.handled = False  # the incomplete element has been dropped by the innermost list
        self.dropped_in: list[Any] | None = None  # that list

    def parse(self) -> tuple[Any, int]:
        value, _complete = self.value(0)
        return value, self.i

    def skip(self) -> None:
        s, n = self.s, self.n
        while self.i < n:
            c = s[self.i]
            if c in " \t\r\n\ufeff\u00a0":
                self.i += 1
            elif s.startswith("//", self.i) or c == "#":
                j = s.find("\n", self.i)
                self.repairs.add("comments")
                self.i = n if j < 0 else j + 1
            elif s.startswith("/*", self.i):
                j = s.find("*/", self.i + 2)
                self.repairs.add("comments")
                self.i = n if j < 0 else j + 2
            else:
                break

    def value(self, depth: int) -> tuple[Any, bool]:
        """(value, complete); complete is False when the input ended inside the value."""
        if depth > MAX_DEPTH:
            raise _Fail("nested too deeply")
        self.skip()
        if self.i >= self.n:
            self.truncated = True
            return None, False
        c = self.s[self.i]
        if c == "{":
            return self.obj(depth)
        if c == "[" or c == "(":
            return self.arr(depth, "]" if c == "[" else ")")
        if c in "\"'“”‘’":
            return self.string()
        return self.scalar()

    def string(self) -> tuple[str, bool]:
        s = self.s
        quote = s[self.i]
        closers = {"“": "”", "”": "”", "‘": "’", "’": "’"}
        close = closers.get(quote, quote)
        if quote != '"':
            self.repairs.add("single or typographic quotes")
        self.i += 1
        out: list[str] = []
        while self.i < self.n:
            c = s[self.i]
            if c == close or (close == "”" and c == '"'):
                self.i += 1
                return "".join(out), True
            if c == "\\":
                if self.i + 1 >= self.n:
                    self.i += 1
                    break
                e = s[self.i + 1]
                simple = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/"}
                if e == "u":
                    hexpart = s[self.i + 2 : self.i + 6]
                    if len(hexpart) == 4 and all(h in "0123456789abcdefABCDEF" for h in hexpart):
                        code = int(hexpart, 16)
                        self.i += 6
                        # join a surrogate pair when both halves are present
                        if 0xD800 <= code < 0xDC00 and s.startswith("\\u", self.i):
                            low = s[self.i + 2 : self.i + 6]
                            if len(low) == 4 and all(h in "0123456789abcdefABCDEF" for h in low):
                                low_code = int(low, 16)
                                if 0xDC00 <= low_code < 0xE000:
                                    code = 0x10000 + ((code - 0xD800) << 10) + (low_code - 0xDC00)
                                    self.i += 6
                        out.append(chr(code) if not 0xD800 <= code < 0xE000 else "\ufffd")
                        continue
                    if len(hexpart) < 4 and self.i + 2 + len(hexpart) >= self.n:
                        self.i = self.n
                        break
                out.append(simple.get(e, e))
                self.i += 2
                continue
            out.append(c)
            self.i += 1
        self.truncated = True
        return "".join(out), False

    NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
    WORD = re.compile(r"[A-Za-z_$][\w$-]*")

    def scalar(self) -> tuple[Any, bool]:
        m = self.NUMBER.match(self.s, self.i)
        if m:
            self.i = m.end()
            if self.i >= self.n:  # "3" at the very end may have been "35"
                self.truncated = True
                return None, False
            txt = m.group()
            try:
                if re.fullmatch(r"[+-]?\d+", txt):
                    return int(txt), True
                value = float(txt)
                return (value if math.isfinite(value) else None), True
            except (ValueError, OverflowError):
                return None, True
        m = self.WORD.match(self.s, self.i)
        if m and m.group() in self.LITERALS:
            if m.end() >= self.n:
                self.truncated = True
                self.i = self.n
                return None, False
            self.i = m.end()
            if m.group() not in ("true", "false", "null"):
                self.repairs.add("Python literals")
            return self.LITERALS[m.group()], True
        if m and m.end() >= self.n and any(lit.startswith(m.group()) for lit in self.LITERALS):
            self.truncated = True
            self.i = self.n
            return None, False
        raise _Fail(f"unexpected {self.s[self.i : self.i + 10]!r}")

    def key(self) -> tuple[str | None, bool]:
        self.skip()
        if self.i >= self.n:
            self.truncated = True
            return None, False
        c = self.s[self.i]
        if c in "\"'“”‘’":
            return self.string()
        m = self.WORD.match(self.s, self.i) or self.NUMBER.match(self.s, self.i)
        if not m:
            raise _Fail(f"bad key at {self.s[self.i : self.i + 10]!r}")
        self.repairs.add("unquoted keys")
        self.i = m.end()
        if self.i >= self.n:
            self.truncated = True
            return m.group(), False
        return m.group(), True

    def obj(self, depth: int) -> tuple[dict[str, Any], bool]:
        self.i += 1
        out: dict[str, Any] = {}
        while True:
            self.skip()
            if self.i >= self.n:
                self.truncated = True
                return out, False
            c = self.s[self.i]
            if c == "}":
                self.i += 1
                return out, True
            if c == ",":
                self.i += 1
                self.skip()
                if self.i < self.n and self.s[self.i] == "}":
                    self.repairs.add("trailing commas")
                continue
            if c in "])":
                raise _Fail("mismatched bracket")
            key, ok = self.key()
            if not ok:
                return out, False
            self.skip()
            if self.i >= self.n:
                self.truncated = True
                return out, False
            if self.s[self.i] in ":=":
                self.i += 1
            else:
                raise _Fail("missing colon")
            value, ok = self.value(depth + 1)
            if not ok:
                if self.handled:  # a list deeper down already dropped the broken element
                    out[str(key)] = value
                return out, False
            out[str(key)] = value

    def arr(self, depth: int, close: str) -> tuple[list[Any], bool]:
        self.i += 1
        out: list[Any] = []
        while True:
            self.skip()
            if self.i >= self.n:  # cut between elements: every element read is complete
                self.truncated = True
                self.handled = True
                return out, False
            c = self.s[self.i]
            if c == close:
                self.i += 1
                return out, True
            if c == ",":
                self.i += 1
                self.skip()
                if self.i < self.n and self.s[self.i] == close:
                    self.repairs.add("trailing commas")
                continue
            if c in "]})":
                raise _Fail("mismatched bracket")
            value, ok = self.value(depth + 1)
            if not ok:
                if self.handled:
                    out.append(value)
                else:
                    self.handled = True  # the innermost list drops its incomplete element
                    self.dropped_in = out
                return out, False
            out.append(value)


def _jsonable(value: Any, depth: int = 0) -> Any:
    """Python literal -> JSON-like value (tuples/sets become lists, keys strings)."""
    if depth > MAX_DEPTH:
        raise _Fail("nested too deeply")
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v, depth + 1) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _balanced_end(text: str, start: int) -> int | None:
    """End (exclusive) of the bracketed block opening at ``start``, skipping strings; None if open."""
    stack: list[str] = []
    pairs = {"{": "}", "[": "]"}
    i, n = start, len(text)
    quote: str | None = None
    while i < n:
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "\"'" and (c == '"' or _single_quote_opens(text, i)):
            quote = c
        elif c in pairs:
            stack.append(pairs[c])
        elif c in "}]":
            if not stack or stack.pop() != c:
                return None
            if not stack:
                return i + 1
        i += 1
    return None


def _single_quote_opens(text: str, i: int) -> bool:
    """A ' opens a string only where a JSON value or key could start (not in "don't")."""
    j = i - 1
    while j >= 0 and text[j] in " \t\r\n":
        j -= 1
    return j < 0 or text[j] in "{[,:("


def _parse_candidate(segment: str, problems: list[str], info: dict[str, Any]) -> tuple[Any, bool]:
    """Parse one bracketed segment: strict JSON, then Python literal, then the lenient reader."""
    try:
        return json.loads(segment, strict=False), True
    except (ValueError, RecursionError):
        pass
    if len(segment) < 200_000 and ("'" in segment or "True" in segment or "None" in segment):
        try:
            value = _jsonable(ast.literal_eval(segment))
            problems.append("parsed as a Python literal (single quotes or True/False/None)")
            return value, True
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, _Fail):
            pass
    try:
        parser = _LenientParser(segment, 0)
        value, _end = parser.parse()
    except (_Fail, RecursionError):
        return None, False
    if parser.repairs:
        problems.append("repaired JSON: " + ", ".join(sorted(parser.repairs)))
    _note_truncation(parser, problems, info)
    return value, True


def _note_truncation(parser: _LenientParser, problems: list[str], info: dict[str, Any]) -> None:
    if parser.truncated:
        problems.append("truncated JSON: closed open strings/brackets, dropped the incomplete trailing item")
        info["truncated"] = True
        info["dropped_in"] = parser.dropped_in


_DECODER = json.JSONDecoder(strict=False)
# the body runs to the first ``` or the end (a run of characters that are not the start of ```:
# as the shortest match would, without trying the end of the fence at every character)
FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n?((?:[^`]+|`(?!``))*)(?:```|\Z)")


def extract_json(text: str) -> tuple[Any | None, list[str]]:
    """Find and parse the JSON value in a model answer; returns ``(value, problems)``.

    Looks in ```json (or bare) fences first, then for the first balanced ``{...}``/``[...]``
    in the prose (an object is preferred to a list), then for an unbalanced one (a truncated
    answer). ``problems`` lists every repair made; ``value`` is None when nothing usable was
    found. Never raises.

    >>> value, problems = extract_json("Here you go: {'a': True, 'b': [1, 2,],}")
    >>> value, problems[0]
    ({'a': True, 'b': [1, 2]}, 'prose around the JSON ignored')
    >>> extract_json('{"annotations": [{"text": "a", "type": 0}, {"text": "b", "ty')[0]
    {'annotations': [{'text': 'a', 'type': 0}]}
    """
    problems: list[str] = []
    try:
        return extract_json_noting(text, problems, {})
    except Exception as exc:  # noqa: BLE001 - the contract is "never raises"
        problems.append(f"JSON extraction failed: {type(exc).__name__}")
        return None, problems


def answer_text(text: Any, problems: list[str]) -> str:
    if isinstance(text, str):
        out = text
    elif isinstance(text, bytes | bytearray):
        out = bytes(text).decode("utf-8", "replace")
    elif text is None:
        out = ""
    else:
        problems.append(f"answer was {type(text).__name__}, not text")
        out = str(text)
    if len(out) > MAX_TEXT:
        problems.append(f"answer cut to {MAX_TEXT} characters")
        out = out[:MAX_TEXT]
    return out


def extract_json_noting(text: Any, problems: list[str], info: dict[str, Any]) -> tuple[Any | None, list[str]]:
    """:func:`extract_json`; ``info`` receives ``truncated`` and ``dropped_in`` (the list that
    lost its incomplete trailing element)."""
    text = answer_text(text, problems)
    stripped = text.strip().lstrip("\ufeff")
    if not stripped:
        problems.append("empty answer")
        return None, problems
    if stripped[0] in "{[":
        try:
            return json.loads(stripped, strict=False), problems
        except (ValueError, RecursionError):
            pass

    # 1. fenced blocks
    for m in FENCE.finditer(text):
        lang, body = m.group(1).lower(), m.group(2)
        if lang and lang not in ("json", "json5", "jsonc", "javascript", "js", "python", "py"):
            continue
        local: list[str] = []
        value = _search_segments(body, local, info)
        if value is not None:
            problems.append("extracted JSON from a code fence" + ("" if m.group(0).endswith("```") else " (unclosed)"))
            problems.extend(local)
            return value, problems

    # 2. brackets in the prose
    local = []
    value = _search_segments(text, local, info)
    if value is not None:
        if text[: _first_bracket(text)].strip():
            problems.append("prose around the JSON ignored")
        problems.extend(local)
        return value, problems
    problems.append("no JSON found")
    return None, problems


def _first_bracket(text: str) -> int:
    positions = [p for p in (text.find("{"), text.find("[")) if p >= 0]
    return min(positions) if positions else 0


def _search_segments(text: str, problems: list[str], info: dict[str, Any]) -> Any | None:
    """The first bracketed block that parses to an object (else the first list).

    A block left open at the end of the text (a truncated answer) is read by the lenient
    parser, which closes it; it contains every later block, so the search ends there.
    """
    first_list: tuple[Any, list[str]] | None = None
    tried = 0
    i = 0
    n = len(text)
    while i < n and tried < MAX_CANDIDATES:
        positions = [p for p in (text.find("{", i), text.find("[", i)) if p >= 0]
        if not positions:
            break
        start = min(positions)
        tried += 1
        local: list[str] = []
        try:  # valid JSON from here (C speed); else the block's end, and the lenient readers
            value, end = _DECODER.raw_decode(text, start)
            ok = True
        except (ValueError, RecursionError):
            end = _balanced_end(text, start)
            if end is None:
                value, ok = _parse_open(text, start, local, info)
            else:
                value, ok = _parse_candidate(text[start:end], local, info)
        if ok and isinstance(value, dict):
            problems.extend(local)
            return value
        if ok and isinstance(value, list) and first_list is None:
            first_list = (value, local)
        if ok and end is None:
            break
        # skip past a block that parsed (its inner brackets are not separate answers)
        i = end if ok and end is not None else start + 1
    if first_list is not None:
        problems.extend(first_list[1])
        return first_list[0]
    return None


def _parse_open(text: str, start: int, problems: list[str], info: dict[str, Any]) -> tuple[Any, bool]:
    try:
        parser = _LenientParser(text, start)
        value, _end = parser.parse()
    except (_Fail, RecursionError):
        return None, False
    if parser.repairs:
        problems.append("repaired JSON: " + ", ".join(sorted(parser.repairs)))
    if not isinstance(value, dict | list):
        return None, False
    _note_truncation(parser, problems, info)
    return value, True
