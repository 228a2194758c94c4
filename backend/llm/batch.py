"""Batch APIs: the same requests as the live path, answered within a day at a lower price.

OpenAI's Batch API (and the providers that copy it) takes a JSONL file of requests
(``POST {base_url}/files``, ``purpose=batch``), runs it as a batch (``POST {base_url}/batches``),
and gives the answers as a JSONL file when it is done; ``vllm run-batch`` reads and writes the
same files on a team's own machine. Each line of the requests is::

    {"custom_id": "<cache key>", "method": "POST", "url": "/v1/chat/completions", "body": {...}}

``custom_id`` is the request's response-cache key (:func:`judgelab.backend.llm.cache.cache_key`),
so an answer is filed where the live path would have looked for it. The answers are not put in
the cache at once: they wait in the table ``batch_answers`` until a ``/predict`` of a task that
needs them takes them, and then go through the live path's parsing, checks and span alignment (an
answer that makes no usable draft is paid for but never cached, as a live one), with their
usage recorded at the batch price.

:class:`BatchStore` keeps, in the cache's SQLite file: the request lines made (``batch_lines``:
the body of each, and the provider batch it was sent in, if any), the provider batches
(``batch_jobs``) and the answers not yet used (``batch_answers``). :class:`BatchProvider` speaks
the provider's ``/files`` and ``/batches`` endpoints. :func:`read_results` reads a results file,
naming the line of anything it cannot use.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from judgelab.backend.http_tls import tls_context
from judgelab.backend.llm.client import Choice, Completion, Usage, _message_text, _usage, without_surrogates
from judgelab.backend.settings import LLMSettings

#: The endpoint every request line names (as OpenAI and ``vllm run-batch`` spell it).
CHAT_ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
#: Provider statuses of a batch still running.
OPEN_STATUSES = ("validating", "in_progress", "finalizing", "cancelling")
KEY_LENGTH = 64  # a cache key: sha256 in hex


class BatchError(ValueError):
    """A batch request or results file judgelab cannot use; the message names the line or status."""


@dataclass(frozen=True)
class BatchAnswer:
    """One answered request of a batch, waiting for the ``/predict`` that uses it."""

    key: str
    completion: Completion
    batch: str  # the provider's batch id, or ``file`` for a results file


@dataclass
class ResultsRead:
    """What a results file holds: answers by custom_id, and what could not be used."""

    answers: dict[str, Completion] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)  # custom_id -> why (the provider's error)
    bad_lines: list[str] = field(default_factory=list)  # "line N: why"


def request_line(key: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"custom_id": key, "method": "POST", "url": CHAT_ENDPOINT, "body": body}


def _completion_of(body: Any) -> Completion:
    """A chat completion's body as a :class:`Completion`; ``ValueError`` saying what is missing."""
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices:
        raise ValueError("its response has no choices")
    answered = []
    for choice in choices:
        if not isinstance(choice, dict):
            continue
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        text = _message_text(message.get("content"))
        if text is None or not text.strip():
            continue
        reason = choice.get("finish_reason")
        answered.append(Choice(without_surrogates(text), reason if isinstance(reason, str) else None))
    if not answered:
        raise ValueError("its response has no text")
    return Completion(answered, _usage(body))


def _error_text(record: dict[str, Any]) -> str | None:
    """Why a results line failed (None: it did not)."""
    error = record.get("error")
    if error:
        if isinstance(error, dict):
            return str(error.get("message") or error.get("code") or error)
        return str(error)
    response = record.get("response")
    if not isinstance(response, dict):
        return "no response"
    status = response.get("status_code")
    if isinstance(status, int) and status != 200:
        body = response.get("body")
        said = body.get("error") if isinstance(body, dict) else body
        if isinstance(said, dict):
            said = said.get("message") or said
        return f"HTTP {status}: {str(said)[:200]}"
    return None


def read_results(text: str, source: str = "results", first_line: int = 1) -> ResultsRead:
    """The answers of a batch results (or error) file: OpenAI's and ``vllm run-batch``'s format,
    one ``{"custom_id", "response": {"status_code", "body"}, "error"}`` per line (``text``: the
    file from its line ``first_line`` on, for the messages)."""
    read = ResultsRead()
    for number, line in enumerate(text.splitlines(), start=first_line):
        if not line.strip():
            continue
        where = f"{source} line {number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            read.bad_lines.append(f"{where}: not JSON ({exc.msg})")
            continue
        key = record.get("custom_id") if isinstance(record, dict) else None
        if not isinstance(key, str) or not key:
            read.bad_lines.append(f"{where}: no custom_id")
            continue
        why = _error_text(record)
        if why is not None:
            read.failed[key] = f"{where}: {why}"
            continue
        try:
            body = record["response"].get("body")
            if isinstance(body, str):  # some tools write the body as a JSON string
                body = json.loads(body)
            read.answers[key] = _completion_of(body)
        except (ValueError, AttributeError, TypeError) as exc:
            read.bad_lines.append(f"{where} ({key[:12]}...): {exc}")
    return read


class BatchStore:
    """The batch tables in the cache's SQLite file (shared by the backend's processes)."""

    def __init__(self, path: str | Path, busy_timeout_s: float = 5.0):
        self.path = str(Path(path).expanduser())
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False)
        self._conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
        self._conn.execute("PRAGMA journal_mode=WAL")
        with self._write() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS batch_lines (key TEXT PRIMARY KEY, project TEXT, model TEXT NOT NULL, "
                "body TEXT NOT NULL, batch TEXT, at REAL NOT NULL)"
            )
            conn.execute(
                "CREATE TABLE IF NOT EXISTS batch_jobs (id TEXT PRIMARY KEY, project TEXT, status TEXT NOT NULL, "
                "requests INTEGER NOT NULL, created REAL NOT NULL, closed REAL, outcome TEXT)"
            )
            conn.execute(
                "CREATE TABLE IF NOT EXISTS batch_answers (key TEXT PRIMARY KEY, completion TEXT NOT NULL, "
                "batch TEXT NOT NULL, at REAL NOT NULL)"
            )

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``), this process's threads one at a time."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._conn.execute(sql, args).fetchall()

    # ------------------------------------------------------------------ request lines

    def in_flight(self, keys: Iterable[str]) -> set[str]:
        """Those of ``keys`` in a provider batch that is still open."""
        keys = list(keys)
        found: set[str] = set()
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            marks = ",".join("?" for _ in part)
            found |= {
                row[0]
                for row in self._query(
                    f"SELECT l.key FROM batch_lines l JOIN batch_jobs j ON l.batch = j.id "
                    f"WHERE j.closed IS NULL AND l.key IN ({marks})",
                    tuple(part),
                )
            }
        return found

    def answered(self, keys: Iterable[str]) -> set[str]:
        """Those of ``keys`` with an answer waiting to be used."""
        keys = list(keys)
        found: set[str] = set()
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            marks = ",".join("?" for _ in part)
            found |= {
                row[0] for row in self._query(f"SELECT key FROM batch_answers WHERE key IN ({marks})", tuple(part))
            }
        return found

    def remember_lines(self, project: str | None, lines: list[dict[str, Any]]) -> None:
        """Keep the request lines made (a line already kept keeps its batch)."""
        now = time.time()
        with self._write() as conn:
            conn.executemany(
                "INSERT INTO batch_lines (key, project, model, body, batch, at) VALUES (?, ?, ?, ?, NULL, ?) "
                "ON CONFLICT(key) DO UPDATE SET at = excluded.at",
                [(line["custom_id"], project, line["body"]["model"], json.dumps(line["body"]), now) for line in lines],
            )

    def lines(self, keys: list[str]) -> list[dict[str, Any]]:
        """The kept request lines of ``keys`` (those kept), in the order of ``keys``."""
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            marks = ",".join("?" for _ in part)
            for key, body in self._query(f"SELECT key, body FROM batch_lines WHERE key IN ({marks})", tuple(part)):
                found[key] = request_line(key, json.loads(body))
        return [found[k] for k in keys if k in found]

    def known(self, key: str) -> bool:
        return bool(self._query("SELECT 1 FROM batch_lines WHERE key = ?", (key,)))

    # ------------------------------------------------------------------ provider batches

    def open_job(self, batch_id: str, project: str | None, status: str, keys: list[str]) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO batch_jobs (id, project, status, requests, created) VALUES (?, ?, ?, ?, ?)",
                (batch_id, project, status, len(keys), time.time()),
            )
            conn.executemany("UPDATE batch_lines SET batch = ? WHERE key = ?", [(batch_id, k) for k in keys])

    def jobs(self, project: str | None, *, open_only: bool = False) -> list[dict[str, Any]]:
        where, args = "project IS ?", (project,)
        if open_only:
            where += " AND closed IS NULL"
        rows = self._query(
            f"SELECT id, project, status, requests, created, closed, outcome FROM batch_jobs WHERE {where} "
            "ORDER BY created",
            args,
        )
        names = ("id", "project", "status", "requests", "created", "closed", "outcome")
        return [
            {**dict(zip(names, row, strict=True)), "outcome": json.loads(row[6]) if row[6] else None} for row in rows
        ]

    def job_keys(self, batch_id: str) -> list[str]:
        return [row[0] for row in self._query("SELECT key FROM batch_lines WHERE batch = ?", (batch_id,))]

    def set_status(self, batch_id: str, status: str) -> None:
        with self._write() as conn:
            conn.execute("UPDATE batch_jobs SET status = ? WHERE id = ?", (status, batch_id))

    def close_job(self, batch_id: str, status: str, outcome: dict[str, Any]) -> None:
        """The batch is over: its lines not answered are free to be sent again."""
        with self._write() as conn:
            conn.execute(
                "UPDATE batch_jobs SET status = ?, closed = ?, outcome = ? WHERE id = ?",
                (status, time.time(), json.dumps(outcome), batch_id),
            )
            conn.execute("UPDATE batch_lines SET batch = NULL WHERE batch = ?", (batch_id,))

    # ------------------------------------------------------------------ answers

    def store_answers(self, answers: dict[str, Completion], batch: str) -> int:
        """Keep the answers until a ``/predict`` uses them; their request lines are done with."""
        now = time.time()
        rows = [(key, _dump(completion), batch, now) for key, completion in answers.items()]
        with self._write() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO batch_answers (key, completion, batch, at) VALUES (?, ?, ?, ?)", rows
            )
            conn.executemany("DELETE FROM batch_lines WHERE key = ?", [(key,) for key in answers])
        return len(rows)

    def take(self, keys: list[str]) -> dict[str, BatchAnswer]:
        """The waiting answers of ``keys``, taken (each is used once, by one ``/predict``)."""
        taken: dict[str, BatchAnswer] = {}
        if not keys:
            return taken
        with self._write() as conn:
            for start in range(0, len(keys), 500):
                part = keys[start : start + 500]
                marks = ",".join("?" for _ in part)
                rows = conn.execute(
                    f"DELETE FROM batch_answers WHERE key IN ({marks}) RETURNING key, completion, batch", tuple(part)
                ).fetchall()
                for key, completion, batch in rows:
                    taken[key] = BatchAnswer(key, _load(completion), batch)
        return taken

    def waiting(self) -> int:
        return int(self._query("SELECT COUNT(*) FROM batch_answers")[0][0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _dump(completion: Completion) -> str:
    usage = completion.usage
    return json.dumps(
        {
            "choices": [{"text": c.text, "finish_reason": c.finish_reason} for c in completion.choices],
            "usage": None if usage is None else [usage.prompt_tokens, usage.completion_tokens],
        }
    )


def _load(raw: str) -> Completion:
    payload = json.loads(raw)
    usage = payload.get("usage")
    return Completion(
        [Choice(c["text"], c.get("finish_reason")) for c in payload["choices"]],
        Usage(int(usage[0]), int(usage[1])) if usage else None,
    )


def open_batch_store(path: str | Path | None) -> BatchStore | None:
    """The batch tables in the cache's file; None without a cache file (the batch route needs one)."""
    if path is None:
        return None
    try:
        return BatchStore(path)
    except (OSError, sqlite3.Error):
        return None


class BatchProvider:
    """A provider's batch endpoints at the LLM settings' ``base_url`` (OpenAI's shape), blocking."""

    def __init__(self, settings: LLMSettings, http: httpx.Client | None = None):
        self.base = settings.base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
        self.key = settings.api_key
        self._http = http or httpx.Client(
            headers=headers, timeout=httpx.Timeout(max(settings.timeout, 30.0)), verify=tls_context()
        )

    def close(self) -> None:
        self._http.close()

    def _redact(self, text: str) -> str:
        return text.replace(self.key, "***") if self.key else text

    def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        url = self.base + path
        try:
            response = self._http.request(method, url, **kwargs)
        except httpx.HTTPError as exc:
            raise BatchError(f"{method} {url}: {type(exc).__name__}: {exc}") from None
        if response.status_code != 200:
            said = self._redact(" ".join(response.text.split())[:300])
            hint = (
                " (does this provider have a Batch API? vLLM's server does not: use --batch-file)"
                if (response.status_code in (404, 405))
                else ""
            )
            raise BatchError(f"{method} {url}: HTTP {response.status_code}: {said!r}{hint}")
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        response = self._call(method, path, **kwargs)
        try:
            payload = response.json()
        except ValueError:
            raise BatchError(f"{method} {self.base}{path}: the answer is not JSON") from None
        if not isinstance(payload, dict):
            raise BatchError(f"{method} {self.base}{path}: the answer is not a JSON object")
        return payload

    def submit(self, lines: list[dict[str, Any]], metadata: dict[str, str] | None = None) -> dict[str, Any]:
        """Upload the lines as a batch input file and start the batch; the provider's batch object."""
        content = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode("utf-8")
        uploaded = self._json(
            "POST", "/files", data={"purpose": "batch"}, files={"file": ("judgelab-batch.jsonl", content)}
        )
        if not uploaded.get("id"):
            raise BatchError(f"POST {self.base}/files: the answer names no file id")
        body: dict[str, Any] = {
            "input_file_id": uploaded["id"],
            "endpoint": CHAT_ENDPOINT,
            "completion_window": COMPLETION_WINDOW,
        }
        if metadata:
            body["metadata"] = metadata
        batch = self._json("POST", "/batches", json=body)
        if not batch.get("id"):
            raise BatchError(f"POST {self.base}/batches: the answer names no batch id")
        return batch

    def status(self, batch_id: str) -> dict[str, Any]:
        return self._json("GET", f"/batches/{batch_id}")

    def content(self, file_id: str) -> str:
        return self._call("GET", f"/files/{file_id}/content").text
