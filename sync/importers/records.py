"""The one reader of users' files: CSV, TSV, JSON Lines and JSON into ``(where, record)`` pairs.

Records are read one at a time (:func:`iter_records`), so a file of any size takes the memory
of one record, not of the file:

- CSV / TSV: a header line, then one row per line (quoted values may span lines, keep their
  ``\\r\\n`` and may be of any length). The delimiter of a ``.csv`` is sniffed from its header
  (``,``, ``;``, tab or ``|``: Excel writes ``;`` in many locales); a UTF-8 byte order mark is
  dropped and a UTF-16 file with its byte order mark (Excel's "Unicode Text") is read as such.
  A header naming a column twice is an error.
- JSON Lines: one object per line; bare ``NaN`` / ``Infinity`` tokens become missing values;
  raw control characters in strings are accepted; a Hugging Face datasets-style line
  ``{"row_idx": 3, "row": {...}}`` (the datasets-server ``/rows`` shape) is unwrapped.
- JSON: a list of objects (read item by item), one object (one task), an object mapping ids
  to objects (``{"id1": {...}}``: the id becomes ``id`` unless the object has one), or the
  datasets-server answer ``{"rows": [{"row_idx", "row"}, ...]}``.

In JSON an object naming a key twice, or nested deeper than Python can read, is a bad record
(named by its line or item) rather than a silently dropped value or a ``RecursionError``.
Every record keeps where it came from (``file line N`` / ``file item N``); a bad one raises
:class:`SyncError`, or, with ``skip_bad``, is reported in ``bad`` and skipped.
"""

from __future__ import annotations

import codecs
import csv
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from judgelab.sync.client import SyncError

Record = tuple[str, Any]  # (where, raw record)
SUFFIXES = (".csv", ".tsv", ".jsonl", ".json")
DELIMITERS = (",", ";", "\t", "|")
MAX_CELL_CHARS = 1 << 30  # csv's default limit is 131,072 characters: a long post is no reason to fail
JSON_CHUNK_CHARS = 1 << 20
_JSON_WS = " \t\n\r"
csv.field_size_limit(max(csv.field_size_limit(), min(MAX_CELL_CHARS, sys.maxsize)))


class DuplicateKeyError(ValueError):
    """A JSON object names a key twice (Python's json would keep the last value silently)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"key {key!r} appears twice in one object")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(key)
            seen.add(key)
    return obj


def _nan_as_none(token: str) -> None:
    return None


_DECODER = json.JSONDecoder(strict=False, parse_constant=_nan_as_none, object_pairs_hook=_unique_keys)
_LENIENT = json.JSONDecoder(strict=False, parse_constant=_nan_as_none)  # to find where a bad item ends


def loads_lenient(text: str) -> Any:
    """``json.loads`` accepting raw control characters and bare ``NaN``/``Infinity`` (as ``None``);
    a key named twice in one object raises :class:`DuplicateKeyError`."""
    return _DECODER.decode(text)


def _json_problem(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return f"nested too deeply to read (over {sys.getrecursionlimit()} levels of lists or objects)"
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON: {exc.msg} (column {exc.colno})"
    return str(exc)


def unwrap_hf_row(record: Any) -> Any:
    """``{"row_idx": 0, "row": {...}, "truncated_cells": []}`` -> the inner row; else unchanged."""
    if isinstance(record, dict) and isinstance(record.get("row"), dict) and set(record) <= _HF_KEYS:
        return record["row"]
    return record


_HF_KEYS = {"row", "row_idx", "truncated_cells"}


@dataclass
class FileInfo:
    """What reading a file found out about it (filled while its records are read)."""

    name: str
    kind: str  # "csv" | "tsv" | "jsonl" | "json"
    encoding: str = "utf-8-sig"
    delimiter: str | None = None
    columns: list[str] | None = None  # a CSV's header
    one_object: dict[str, Any] | None = None  # a JSON file holding one object: that object
    records: int = 0
    empty: bool = False  # nothing but whitespace (or a header line)
    bad: list[str] = field(default_factory=list)


def file_kind(path: Path) -> str:
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise SyncError(f"{path}: unsupported file type {path.suffix!r} (use .json, .jsonl, .csv or .tsv)")
    return suffix[1:]


def _encoding(path: Path) -> str:
    try:
        with open(path, "rb") as raw:
            head = raw.read(4)
    except FileNotFoundError:
        raise SyncError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise SyncError(f"{path}: is a folder, not a file") from None
    except PermissionError:
        raise SyncError(f"{path}: not readable (permission denied)") from None
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) and not head.startswith(codecs.BOM_UTF32_LE):
        return "utf-16"
    return "utf-8-sig"


def _open(path: Path, info: FileInfo, newline: str) -> IO[str]:
    return open(path, encoding=info.encoding, newline=newline)  # noqa: SIM115 - closed by the caller


def undecodable_line(path: Path | str, encoding: str) -> int | None:
    """The line (from 1) holding the first byte of ``path`` that ``encoding`` cannot decode.

    Text files are decoded in blocks, so a reader meets a bad byte while it is still on an
    earlier line: the line is counted here, from the bytes. ``None`` when the file decodes."""
    decoder = codecs.getincrementaldecoder(encoding)()
    line = 1
    with open(path, "rb") as raw:
        while True:
            block = raw.read(1 << 16)
            try:
                line += decoder.decode(block, final=not block).count("\n")
            except UnicodeDecodeError as exc:
                valid = exc.object[: exc.start]  # whole characters: the bad sequence starts after them
                return line + valid.decode(encoding, errors="replace").count("\n")
            if not block:
                return None


def _not_text(info: FileInfo, exc: UnicodeDecodeError, path: Path | str) -> SyncError:
    """The file is not text in its encoding: named by the line of its first bad byte."""
    try:
        line = undecodable_line(path, info.encoding)
    except OSError:
        line = None
    where = f"{info.name} line {line}" if line else info.name
    bad = " ".join(f"0x{byte:02x}" for byte in exc.object[exc.start : exc.end][:4])
    return SyncError(
        f"{where}: not {'UTF-16' if info.encoding == 'utf-16' else 'UTF-8'} text (byte {bad}: {exc.reason}): "
        "save it as UTF-8 (Excel: 'CSV UTF-8')"
    )


def sniff_delimiter(header: str) -> str:
    """The delimiter a header line uses: the most frequent of ``, ; tab |`` outside quotes."""
    counts = dict.fromkeys(DELIMITERS, 0)
    quoted = False
    for char in header:
        if char == '"':
            quoted = not quoted
        elif not quoted and char in counts:
            counts[char] += 1
    best = max(DELIMITERS, key=lambda d: counts[d])
    return best if counts[best] else ","


def _bad(info: FileInfo, message: str, skip_bad: bool) -> None:
    if not skip_bad:
        raise SyncError(message)
    info.bad.append(message)


def _csv_records(path: Path, info: FileInfo, skip_bad: bool) -> Iterator[Record]:
    with _open(path, info, newline="") as handle:
        line = 0
        try:
            first = handle.readline()
            if info.kind == "tsv":
                info.delimiter = "\t"
            else:
                info.delimiter = sniff_delimiter(first)
            handle.seek(0)
            reader = csv.reader(handle, delimiter=info.delimiter)
            header = next(reader, None)
            while header is not None and not any(cell.strip() for cell in header):
                header = next(reader, None)  # blank lines before the header
            if header is None:
                info.empty = True
                return
            header = [cell.strip() for cell in header]
            info.columns = [c for c in header if c]
            twice = sorted({c for c in info.columns if info.columns.count(c) > 1})
            if twice:
                raise SyncError(f"{info.name} line {reader.line_num}: column {twice[0]!r} appears twice in the header")
            line = reader.line_num
            for values in reader:
                start, line = line + 1, reader.line_num
                if not values or not any(v.strip() for v in values):
                    continue
                where = f"{info.name} line {start}"
                if len(values) > len(header):
                    extra = f" (read with delimiter {info.delimiter!r})" if info.kind == "csv" else ""
                    _bad(info, f"{where}: more values than header columns{extra}", skip_bad)
                    continue
                record = {name: value for name, value in zip(header, values, strict=False) if name}
                for name in header[len(values) :]:
                    if name:
                        record[name] = None
                info.records += 1
                yield where, record
        except UnicodeDecodeError as exc:
            raise _not_text(info, exc, path) from None
        except csv.Error as exc:
            raise SyncError(f"{info.name} line {line + 1}: not readable as CSV: {exc}") from None
    info.empty = info.records == 0 and not info.bad


def _jsonl_records(path: Path, info: FileInfo, skip_bad: bool) -> Iterator[Record]:
    number = 0
    with _open(path, info, newline="\n") as handle:  # only \n ends a line: a raw \r in a string stays
        try:
            for number, line in enumerate(handle, start=1):
                yield from _jsonl_record(info, number, line, skip_bad)
        except UnicodeDecodeError as exc:
            raise _not_text(info, exc, path) from None
    info.empty = info.records == 0 and not info.bad


def _jsonl_record(info: FileInfo, number: int, line: str, skip_bad: bool) -> Iterator[Record]:
    """The record of line ``number`` of a JSON Lines file: none for a blank line or a bad one
    skipped (``skip_bad``; else a bad line raises)."""
    if not line.strip():
        return
    where = f"{info.name} line {number}"
    try:
        record = unwrap_hf_row(loads_lenient(line))
    except (ValueError, RecursionError) as exc:
        _bad(info, f"{where}: {_json_problem(exc)}", skip_bad)
        return
    info.records += 1
    yield where, record


def jsonl_parts(path: Path, info: FileInfo, parts: int) -> list[tuple[int, int, int]] | None:
    """``path`` cut into ``parts`` byte ranges of whole lines, ``(start, end, first line)`` each,
    to be read by :func:`jsonl_part_records` side by side; ``None`` when it cannot be cut so (not
    UTF-8 JSON Lines, or too few lines). Only ``\\n`` ends a line, as in :func:`iter_records`."""
    if info.kind != "jsonl" or info.encoding != "utf-8-sig" or parts < 2:
        return None
    size = Path(path).stat().st_size
    ranges, start, line = [], 0, 1
    with open(path, "rb") as raw:
        for part in range(1, parts + 1):
            end = size
            if part < parts:
                raw.seek(max(start, size * part // parts))
                raw.readline()  # to the end of the line the cut falls in
                end = raw.tell()
            if end <= start:
                continue
            ranges.append((start, end, line))
            raw.seek(start)
            for _ in range(start, end, 1 << 20):
                line += raw.read(min(1 << 20, end - raw.tell())).count(b"\n")
            start = end
    return ranges if len(ranges) > 1 else None


def jsonl_part_records(path: Path, info: FileInfo, part: tuple[int, int, int], skip_bad: bool) -> Iterator[Record]:
    """The records of one range of :func:`jsonl_parts`, as :func:`iter_records` reads them there
    (the same ``where``, the same handling of a bad line)."""
    start, end, number = part
    with open(path, "rb") as raw:
        raw.seek(start)
        position = start
        for chunk in raw:
            if position >= end:
                break
            try:  # a BOM is dropped at the file's start only, as when the file is read whole
                line = chunk.decode(info.encoding if position == 0 else "utf-8")
            except UnicodeDecodeError as exc:
                raise _not_text(info, exc, path) from None
            position += len(chunk)
            yield from _jsonl_record(info, number, line, skip_bad)
            number += 1


class _JsonText:
    """A JSON text read in chunks: ``text[pos:]`` is what is not consumed yet, ``line`` the line at ``pos``."""

    def __init__(self, handle: IO[str], info: FileInfo) -> None:
        self.handle, self.info = handle, info
        self.text, self.pos, self.line, self.eof = "", 0, 1, False

    def more(self, at_least: int = JSON_CHUNK_CHARS) -> bool:
        if self.eof:
            return False
        try:
            chunk = self.handle.read(max(at_least, JSON_CHUNK_CHARS))
        except UnicodeDecodeError as exc:
            raise _not_text(self.info, exc, self.handle.name) from None
        if not chunk:
            self.eof = True
            return False
        self.text = self.text[self.pos :] + chunk
        self.pos = 0
        return True

    def read_all(self) -> None:
        try:
            self.text = self.text[self.pos :] + self.handle.read()
        except UnicodeDecodeError as exc:
            raise _not_text(self.info, exc, self.handle.name) from None
        self.pos, self.eof = 0, True

    def advance(self, to: int) -> None:
        self.line += self.text.count("\n", self.pos, to)
        self.pos = to

    def skip_space(self) -> str:
        """The next character that is not whitespace ('' at the end)."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in _JSON_WS:
                if self.text[self.pos] == "\n":
                    self.line += 1
                self.pos += 1
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more():
                return ""

    def error_line(self, at: int) -> int:
        return self.line + self.text.count("\n", self.pos, at)

    def decode(self, decoder: json.JSONDecoder) -> tuple[Any, int]:
        """The value starting at ``pos`` and where it ends (reading more until it is whole)."""
        while True:
            try:
                value, end = decoder.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                if self.more(len(self.text) - self.pos):  # maybe cut by the chunk: read more, try again
                    continue
                raise SyncError(
                    f"{self.info.name} line {self.error_line(exc.pos)}: invalid JSON: {exc.msg} (column {exc.colno})"
                ) from None
            if end >= len(self.text) and self.more(len(self.text) - self.pos):
                continue  # a number cut by the chunk
            return value, end


def _json_array_records(text: _JsonText, info: FileInfo, skip_bad: bool) -> Iterator[Record]:
    text.advance(text.pos + 1)  # "["
    index = 0
    if text.skip_space() == "]":
        text.advance(text.pos + 1)
    else:
        while True:
            where = f"{info.name} item {index}"
            try:
                item, end = text.decode(_DECODER)
            except (DuplicateKeyError, RecursionError) as exc:
                if isinstance(exc, RecursionError):
                    raise SyncError(f"{where} (line {text.line}): {_json_problem(exc)}") from None
                _bad(info, f"{where}: {_json_problem(exc)}", skip_bad)
                _, end = text.decode(_LENIENT)
            else:
                info.records += 1
                yield where, unwrap_hf_row(item)
            text.advance(end)
            index += 1
            following = text.skip_space()
            if following == "]":
                text.advance(text.pos + 1)
                break
            if following != ",":
                found = repr(following) if following else "the end of the file"
                raise SyncError(f"{info.name} line {text.line}: invalid JSON: expected ',' or ']', found {found}")
            text.advance(text.pos + 1)
            text.skip_space()
    if text.skip_space():
        raise SyncError(f"{info.name} line {text.line}: invalid JSON: extra data after the list")
    info.empty = info.records == 0 and not info.bad


def _json_records(path: Path, info: FileInfo, skip_bad: bool) -> Iterator[Record]:
    with _open(path, info, newline="") as handle:
        text = _JsonText(handle, info)
        first = text.skip_space()
        if first == "":
            info.empty = True
            return
        if first == "[":
            yield from _json_array_records(text, info, skip_bad)
            return
        text.read_all()  # one object (or a scalar): read whole
        try:
            loaded, end = _DECODER.raw_decode(text.text, text.pos)
        except json.JSONDecodeError as exc:
            raise SyncError(
                f"{info.name} line {text.error_line(exc.pos)}: invalid JSON: {exc.msg} (column {exc.colno})"
            ) from None
        except (DuplicateKeyError, RecursionError) as exc:
            raise SyncError(f"{info.name}: {_json_problem(exc)}") from None
        text.advance(end)
        if text.skip_space():
            raise SyncError(f"{info.name} line {text.line}: invalid JSON: extra data after the value")
    if isinstance(loaded, dict) and isinstance(loaded.get("rows"), list):
        loaded = loaded["rows"]  # datasets-server answer
    elif isinstance(loaded, dict) and loaded and all(isinstance(v, dict) for v in loaded.values()):
        if "data" not in loaded:  # an id -> object mapping, not one task
            for key, value in loaded.items():
                info.records += 1
                yield f"{info.name} item {key!r}", {"id": str(key), **value}
            return
    if isinstance(loaded, dict):
        info.one_object = loaded
        loaded = [loaded]
    if not isinstance(loaded, list):
        raise SyncError(f"{info.name}: expected a JSON list of records, got {type(loaded).__name__}")
    for i, item in enumerate(loaded):
        info.records += 1
        yield f"{info.name} item {i}", unwrap_hf_row(item)
    info.empty = info.records == 0


_READERS = {"csv": _csv_records, "tsv": _csv_records, "jsonl": _jsonl_records, "json": _json_records}


def iter_records(path: Path, *, skip_bad: bool = False, info: FileInfo | None = None) -> Iterator[Record]:
    """``(where, record)`` for every record of a CSV, TSV, JSONL or JSON file, one at a time.

    A bad record raises :class:`SyncError` naming the file and line (or item), unless
    ``skip_bad``: then its message goes to ``info.bad`` and reading goes on. ``info`` (a
    :class:`FileInfo` of the file, see :func:`file_info`) collects what reading finds out.
    """
    path = Path(path)
    info = info if info is not None else file_info(path)
    yield from _READERS[info.kind](path, info, skip_bad)


def file_info(path: Path) -> FileInfo:
    """A fresh :class:`FileInfo` for ``path`` (its kind and encoding; raises for unreadable files)."""
    path = Path(path)
    kind = file_kind(path)
    return FileInfo(name=path.name, kind=kind, encoding=_encoding(path))


def read_records(path: Path, *, skip_bad: bool = False, bad: list[str] | None = None) -> list[Record]:
    """Every record of a file at once (:func:`iter_records` into a list); with ``skip_bad`` the
    messages of skipped records are appended to ``bad``."""
    info = file_info(Path(path))
    records = list(iter_records(path, skip_bad=skip_bad, info=info))
    if bad is not None:
        bad.extend(info.bad)
    return records
