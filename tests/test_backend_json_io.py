"""The piecewise JSON reader and writer of the backend give exactly what ``json`` gives."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judgelab.backend.json_io import dumps, loads_object

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4)
)
objects = st.dictionaries(st.text(), values | st.lists(values, max_size=6), max_size=5)


@settings(max_examples=150, deadline=None)
@given(objects, st.sampled_from([0, 2]), st.sampled_from(["", " ", "\n\t "]))
def test_reading_in_pieces_gives_what_json_loads_gives(payload, indent, space):
    raw = (space + json.dumps(payload, indent=indent or None, ensure_ascii=bool(indent)) + space).encode()
    assert loads_object(raw, piece_above=0) == json.loads(raw)


@settings(max_examples=150, deadline=None)
@given(objects)
def test_writing_in_pieces_gives_what_json_dumps_gives(payload):
    assert json.loads(dumps(payload, items_above=0)) == payload
    assert dumps(payload, items_above=0) == dumps(payload, items_above=10**9)


@pytest.mark.parametrize(
    "raw",
    [b"", b"{", b'{"tasks": [1, 2', b'{"tasks": [1 2]}', b'{"a": 1} x', b"[1, 2]", b'{"a": 1,}', b"\xff\xfe"],
)
def test_broken_bodies_fail_as_json_loads_fails(raw):
    with pytest.raises(ValueError) as piecewise:
        result = loads_object(raw, piece_above=0)
        if not isinstance(result, dict):  # a list is valid JSON: the caller refuses it
            raise ValueError("not an object")
    if raw != b"[1, 2]":
        with pytest.raises(ValueError) as plain:
            json.loads(raw)
        assert type(piecewise.value) is type(plain.value)


def test_a_lone_surrogate_gives_escaped_but_valid_json():
    payload = {"results": [{"text": "bad \ud800 but kept", "ok": "é"}] * 3}
    encoded = dumps(payload, items_above=0)
    assert json.loads(encoded) == payload
    assert dumps(payload) == encoded


def test_a_large_body_is_read_in_pieces_with_the_same_result():
    tasks = [{"id": i, "data": {"text": f"task {i} " * 20, "n": i / 3}} for i in range(20000)]
    raw = json.dumps({"tasks": tasks, "project": "1.2", "params": {"context": None}}).encode()
    assert len(raw) > 1024 * 1024
    assert loads_object(raw) == json.loads(raw)
