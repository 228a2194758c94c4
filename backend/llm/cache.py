"""The LLM response cache: an answer already received is never requested again.

A :class:`ResponseCache` is two methods (``get``/``put`` of text by key), so the SQLite file
used on one machine (:class:`SQLiteCache`) can be replaced by a shared store (Redis) when
several backend replicas run. :func:`cache_key` hashes what decides the answer (model, messages,
temperature, max_tokens, response_format, and which sample it is when a model is asked several
times) and not where it is served from, so moving a model to another server keeps its cache.

What is worth storing is the annotator's decision (an answer that made a usable draft, not cut
at ``max_tokens``, not huge); the cache only holds it, within a size cap: beyond ``max_bytes``
of answers the oldest are evicted.

A request is also *claimed* while it is in flight, so that processes sharing the cache file pay
for it once: :meth:`SQLiteCache.claim` gives the cached answer, or the claim (the caller asks the
LLM, stores the answer, then releases it with :meth:`~SQLiteCache.release`), or says another process holds
it (the caller polls :meth:`~SQLiteCache.claim_state` until the answer is stored or the claim is
gone, then claims again). A claim lapses at the time its holder gave (the holder's deadline, plus
a margin) or at once when its holder, a process on this machine, has died, so a killed worker
never blocks a prompt; a holder that failed releases its claim and a waiter asks in its place.

>>> key = cache_key("m", [{"role": "user", "content": "hi"}], 0.0, 16, None)
>>> cache = MemoryCache()
>>> cache.get(key) is None
True
>>> cache.put(key, "hello"); cache.get(key)
'hello'
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, Protocol

log = logging.getLogger("judgelab.llm.cache")

ClaimOutcome = Literal["answered", "claimed", "held"]


class ResponseCache(Protocol):
    def get(self, key: str) -> str | None: ...

    def put(self, key: str, text: str) -> None: ...

    def claim(self, key: str, owner: str, seconds: float) -> tuple[ClaimOutcome, str | None]:
        """``("answered", text)`` when the answer is stored, ``("claimed", None)`` when ``owner``
        now holds the request for ``seconds``, ``("held", None)`` when another live owner does."""
        ...

    def claim_state(self, key: str) -> tuple[str | None, bool]:
        """The stored answer (or None) and whether a live claim is held on ``key``."""
        ...

    def release(self, key: str, owner: str) -> None: ...


def claim_owner(token: str) -> str:
    """The name of a claim's holder: this machine, this process and ``token`` (one per annotator)."""
    return f"{socket.gethostname()}:{os.getpid()}:{token}"


def owner_alive(owner: str) -> bool:
    """False only when ``owner`` names a process of this machine that no longer exists."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by another user
        return True
    return True


def cache_key(
    model: str,
    messages: list[dict[str, Any]],
    temperature: float,
    max_tokens: int,
    response_format: dict[str, Any] | None,
    sample: int = 0,
) -> str:
    """sha256 of everything that decides an answer, in a canonical JSON form (text that is not
    valid Unicode, a lone surrogate, is hashed as it is rather than refused). ``sample`` numbers
    the answers of one model to one prompt when it is asked several times (the first, 0, has
    the key a single answer always had)."""
    payload: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "temperature": float(temperature),
        "max_tokens": int(max_tokens),
        "response_format": response_format,
    }
    if sample:
        payload["sample"] = int(sample)
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


class NoCache:
    """Remembers nothing (``JUDGELAB_CACHE_PATH=off``)."""

    def get(self, key: str) -> str | None:
        return None

    def put(self, key: str, text: str) -> None:
        return None

    def claim(self, key: str, owner: str, seconds: float) -> tuple[ClaimOutcome, str | None]:
        return "claimed", None  # nothing shared between processes: each asks

    def claim_state(self, key: str) -> tuple[str | None, bool]:
        return None, False

    def release(self, key: str, owner: str) -> None:
        return None


class MemoryCache:
    """A dict, for tests and one-off runs."""

    def __init__(self) -> None:
        self._items: dict[str, str] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> str | None:
        with self._lock:
            return self._items.get(key)

    def put(self, key: str, text: str) -> None:
        with self._lock:
            self._items[key] = text

    def claim(self, key: str, owner: str, seconds: float) -> tuple[ClaimOutcome, str | None]:
        text = self.get(key)  # one process: its annotator shares requests in flight itself
        return ("answered", text) if text is not None else ("claimed", None)

    def claim_state(self, key: str) -> tuple[str | None, bool]:
        return self.get(key), False

    def release(self, key: str, owner: str) -> None:
        return None

    def count(self) -> int:
        return len(self._items)


def _while_locked(action: Any, seconds: float) -> Any:
    """``action()``, tried again while another process holds the lock it needs. SQLite's busy
    timeout does not cover switching a new file to WAL: several backend workers opening the same
    new cache at once would otherwise see "database is locked" and run without a cache."""
    deadline = time.monotonic() + seconds
    delay = 0.005
    while True:
        try:
            return action()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.1)


class SQLiteCache:
    """A SQLite file in WAL mode: readers never wait for the writer, and several threads and
    processes (backend workers, the bulk pre-annotation CLI) can share one file. Each write is
    one short transaction that also keeps the total size of the answers and, past
    ``max_bytes``, evicts the oldest.

    A cache that cannot be read or written (disk full, a locked or corrupt file) logs a warning
    and behaves as a miss: it never fails a prediction.
    """

    def __init__(self, path: str | Path, busy_timeout_s: float = 5.0, max_bytes: int | None = None):
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.max_bytes = max_bytes
        self._busy_ms = int(busy_timeout_s * 1000)
        self._local = threading.local()
        self._warned = False

        def create_tables() -> None:
            with self._transaction() as conn:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS responses "
                    "(key TEXT PRIMARY KEY, text TEXT NOT NULL, created REAL NOT NULL)"
                )
                if "size" not in {row[1] for row in conn.execute("PRAGMA table_info(responses)")}:
                    conn.execute("ALTER TABLE responses ADD COLUMN size INTEGER")  # a file of an older judgelab
                conn.execute("UPDATE responses SET size = length(CAST(text AS BLOB)) WHERE size IS NULL")
                conn.execute("CREATE INDEX IF NOT EXISTS responses_by_age ON responses (created)")
                conn.execute("CREATE TABLE IF NOT EXISTS cache_meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL)")
                conn.execute(
                    "INSERT OR REPLACE INTO cache_meta (name, value) "
                    "VALUES ('bytes', (SELECT COALESCE(SUM(size), 0) FROM responses))"
                )
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS claims "
                    "(key TEXT PRIMARY KEY, owner TEXT NOT NULL, expires REAL NOT NULL)"
                )

        _while_locked(create_tables, busy_timeout_s)

    def _connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=self._busy_ms / 1000, isolation_level=None)
            conn.execute(f"PRAGMA busy_timeout={self._busy_ms}")
            _while_locked(lambda: conn.execute("PRAGMA journal_mode=WAL"), self._busy_ms / 1000)
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``: the write lock is taken at once, so two
        processes never both read the size and then both write)."""
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _failed(self, action: str, exc: Exception) -> None:
        if not self._warned:  # once: a broken cache on every task would flood the log
            log.warning("response cache %s: %s failed (%s); continuing without it", self.path, action, exc)
            self._warned = True

    def get(self, key: str) -> str | None:
        try:
            row = self._connection().execute("SELECT text FROM responses WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            self._failed("read", exc)
            return None
        return row[0] if row else None

    def put(self, key: str, text: str) -> None:
        try:
            size = len(text.encode("utf-8"))
            with self._transaction() as conn:
                old = conn.execute("SELECT size FROM responses WHERE key = ?", (key,)).fetchone()
                conn.execute(
                    "INSERT OR REPLACE INTO responses (key, text, created, size) VALUES (?, ?, ?, ?)",
                    (key, text, time.time(), size),
                )
                grown = size - (old[0] or 0 if old else 0)
                conn.execute("UPDATE cache_meta SET value = value + ? WHERE name = 'bytes'", (grown,))
                if self.max_bytes is not None:
                    self._evict(conn, self.max_bytes)
        except (sqlite3.Error, UnicodeError) as exc:
            self._failed("write", exc)

    def claim(self, key: str, owner: str, seconds: float) -> tuple[ClaimOutcome, str | None]:
        """The stored answer, or the claim on ``key`` for ``owner`` until ``seconds`` from now
        (taken over when the current holder's claim lapsed or its process died), or ``held``.
        A file that cannot be written gives the claim: the caller asks, as without a cache."""
        try:
            with self._transaction() as conn:
                row = conn.execute("SELECT text FROM responses WHERE key = ?", (key,)).fetchone()
                if row:
                    return "answered", row[0]
                now = time.time()
                held = conn.execute("SELECT owner, expires FROM claims WHERE key = ?", (key,)).fetchone()
                if held and held[0] != owner and held[1] > now and owner_alive(held[0]):
                    return "held", None
                conn.execute("DELETE FROM claims WHERE expires < ?", (now,))
                conn.execute(
                    "INSERT OR REPLACE INTO claims (key, owner, expires) VALUES (?, ?, ?)", (key, owner, now + seconds)
                )
        except sqlite3.Error as exc:
            self._failed("claim", exc)
        return "claimed", None

    def claim_state(self, key: str) -> tuple[str | None, bool]:
        """The stored answer and whether a live claim is held on ``key`` (a read: no lock)."""
        try:
            conn = self._connection()
            row = conn.execute("SELECT text FROM responses WHERE key = ?", (key,)).fetchone()
            if row:
                return row[0], False
            held = conn.execute("SELECT owner, expires FROM claims WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            self._failed("read", exc)
            return None, False
        return None, bool(held and held[1] > time.time() and owner_alive(held[0]))

    def release(self, key: str, owner: str) -> None:
        """Drop ``owner``'s claim on ``key`` (its answer, if worth it, is stored by then)."""
        try:
            with self._transaction() as conn:
                conn.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, owner))
        except sqlite3.Error as exc:
            self._failed("write", exc)

    @staticmethod
    def _evict(conn: sqlite3.Connection, max_bytes: int) -> None:
        """Delete the oldest answers until the total is within ``max_bytes`` (in the caller's
        transaction)."""
        total = conn.execute("SELECT value FROM cache_meta WHERE name = 'bytes'").fetchone()[0]
        while total > max_bytes:
            oldest = conn.execute("SELECT key, size FROM responses ORDER BY created, rowid LIMIT 256").fetchall()
            if not oldest:
                break
            doomed = []
            for key, size in oldest:
                if total <= max_bytes:
                    break
                doomed.append(key)
                total -= size or 0
            conn.executemany("DELETE FROM responses WHERE key = ?", [(k,) for k in doomed])
            conn.execute("UPDATE cache_meta SET value = ? WHERE name = 'bytes'", (total,))

    def count(self) -> int:
        """How many answers are stored (no ``__len__``: an empty cache must not be falsy)."""
        return self._connection().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def size_bytes(self) -> int:
        """The stored answers' total size in bytes (UTF-8)."""
        return int(self._connection().execute("SELECT value FROM cache_meta WHERE name = 'bytes'").fetchone()[0])

    def close(self) -> None:
        """Close this thread's connection (others close when their thread ends)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


def open_cache(path: str | Path | None, max_bytes: int | None = None) -> ResponseCache:
    """The cache at ``path`` (None: no cache), holding at most ``max_bytes`` of answers. A file
    that cannot be opened gives no cache and a warning, so a read-only working directory does
    not stop the backend."""
    if path is None:
        return NoCache()
    try:
        return SQLiteCache(path, max_bytes=max_bytes)
    except (OSError, sqlite3.Error) as exc:
        log.warning("response cache %s cannot be opened (%s); answers will not be cached", path, exc)
        return NoCache()
