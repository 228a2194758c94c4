"""JSON of requests and answers in pieces, so that no single C call holds the interpreter for long.

``json.loads`` of an 80 MB "Retrieve predictions" body runs about 1.7 s in one C call without
releasing the GIL: meanwhile the event loop cannot answer ``/health`` (Label Studio allows 1 s).
:func:`loads_object` reads a large top-level object one member at a time and a list member (the
``tasks``) one item at a time; :func:`dumps` encodes a list member item by item. Small bodies take
the plain path. Either way the result is what ``json.loads``/``json.dumps`` give; anything the
piecewise reader does not expect goes to ``json.loads``, which reports the error.

>>> loads_object(b' {"tasks": [{"id": 1}, {"id": 2}], "project": "3.1"} ', piece_above=0)
{'tasks': [{'id': 1}, {'id': 2}], 'project': '3.1'}
>>> dumps({"results": [{"a": "é"}, {"b": None}], "model_version": "v"}, items_above=0)
b'{"results":[{"a":"\\xc3\\xa9"},{"b":null}],"model_version":"v"}'
"""

from __future__ import annotations

import json
import re
from typing import Any

#: Bodies above this size are read in pieces; answers with more list items than this, written so.
PIECE_ABOVE = 1024 * 1024
ITEMS_ABOVE = 1000
_DECODER = json.JSONDecoder()
_WHITESPACE = re.compile(r"[ \t\n\r]*")


class _Unexpected(Exception):
    """The piecewise reader met something it does not handle: json.loads decides."""


def _skip(text: str, i: int) -> int:
    return _WHITESPACE.match(text, i).end()


def _value(text: str, i: int) -> tuple[Any, int]:
    """A member's value at ``i``; a list item by item."""
    if text[i] != "[":
        return _DECODER.raw_decode(text, i)
    items: list[Any] = []
    i = _skip(text, i + 1)
    if text[i] == "]":
        return items, i + 1
    while True:
        item, i = _DECODER.raw_decode(text, i)
        items.append(item)
        i = _skip(text, i)
        if text[i] == "]":
            return items, i + 1
        if text[i] != ",":
            raise _Unexpected
        i = _skip(text, i + 1)


def _object_in_pieces(text: str) -> Any:
    i = _skip(text, 0)
    if text[i] != "{":
        raise _Unexpected
    out: dict[str, Any] = {}
    i = _skip(text, i + 1)
    if text[i] == "}":
        i += 1
    else:
        while True:
            if text[i] != '"':
                raise _Unexpected
            key, i = _DECODER.raw_decode(text, i)
            i = _skip(text, i)
            if text[i] != ":":
                raise _Unexpected
            out[key], i = _value(text, _skip(text, i + 1))
            i = _skip(text, i)
            if text[i] == "}":
                i += 1
                break
            if text[i] != ",":
                raise _Unexpected
            i = _skip(text, i + 1)
    if _skip(text, i) != len(text):
        raise _Unexpected
    return out


def loads_object(raw: bytes, piece_above: int = PIECE_ABOVE) -> Any:
    """``json.loads(raw)``, a large top-level object read member by member."""
    if len(raw) <= piece_above:
        return json.loads(raw)
    text = raw.decode(json.detect_encoding(raw), "surrogatepass")  # as json.loads decodes bytes
    try:
        return _object_in_pieces(text)
    except (_Unexpected, IndexError, ValueError):
        return json.loads(text)


def _encode(value: Any, ascii_only: bool) -> str:
    return json.dumps(value, ensure_ascii=ascii_only, separators=(",", ":"))


def _dumps(payload: Any, items_above: int, ascii_only: bool) -> str:
    items = sum(len(v) for v in payload.values() if isinstance(v, list)) if isinstance(payload, dict) else 0
    if items <= items_above:
        return _encode(payload, ascii_only)
    parts = []
    for key, value in payload.items():
        if isinstance(value, list):
            encoded = "[" + ",".join(_encode(item, ascii_only) for item in value) + "]"
        else:
            encoded = _encode(value, ascii_only)
        parts.append(f"{_encode(str(key), ascii_only)}:{encoded}")
    return "{" + ",".join(parts) + "}"


def dumps(payload: Any, items_above: int = ITEMS_ABOVE) -> bytes:
    """Compact UTF-8 JSON of ``payload``; the lists of a dict with more than ``items_above`` items
    in all are encoded item by item. A lone surrogate in a text (which UTF-8 cannot hold) makes
    the whole answer ASCII-escaped, still valid JSON."""
    try:
        return _dumps(payload, items_above, ascii_only=False).encode("utf-8")
    except UnicodeEncodeError:
        return _dumps(payload, items_above, ascii_only=True).encode("ascii")
