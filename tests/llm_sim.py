"""A simulated OpenAI-compatible LLM server for tests and benchmarks: a real HTTP server on
127.0.0.1 (a free port, a background thread), speaking ``POST /v1/chat/completions`` and
``GET /v1/models``.

What it answers is scripted: ``answer`` is a text, or a function of the request's messages
returning a text, a :class:`Reply` (a text with its ``finish_reason`` and ``usage``) or a
:class:`Failure`; a function of two arguments also gets a :class:`SimCall` (the model asked
for, and which sample of this prompt this answer is), so it can answer per model and give
different samples. ``script`` lists what the next requests get, in order, before the ``answer``
applies (``None`` in it: a normal answer). It records every request (time, headers, body, the
``usage`` it answered), counts them, and tracks how many are in flight at once.

Like the OpenAI API it reports ``usage`` (``prompt_tokens``: a quarter of the characters of the
messages, ``completion_tokens``: a quarter of the characters of each choice, at least 1 each;
``report_usage=False`` leaves it out, as some servers do; ``usage_every=4`` reports it on the
first answer of every four only, as a server that reports it for some answers; every request
records the ``tokens`` it used, reported or not), answers ``n`` choices for ``n`` > 1
(``supports_n=False``: one, as Ollama does) and, given ``models``, serves only those names
(another model is a 404, as OpenAI answers).

    with LLMSim(answer='{"rating": 3}', latency=0.2) as sim:
        ...  # point the client at sim.url ("http://127.0.0.1:<port>/v1")

It also speaks OpenAI's Batch API: ``POST /v1/files`` (a JSONL of requests, ``purpose=batch``),
``POST /v1/batches``, ``GET /v1/batches/{id}`` and ``GET /v1/files/{id}/content``. A batch is
``validating`` when created; each look at it moves it on (``in_progress`` until it has been looked at
``batch_polls`` times), then it ends as ``batch_end`` says: ``completed`` (every line answered as a
chat request would be, by ``answer``), ``expired`` (the first half answered, the rest in the error
file as ``batch_expired``), ``failed`` (refused whole, with a line's error, nothing answered) or
``cancelled``. ``batch_failed_lines`` (indices) are answered with an HTTP 500 in the error file,
``batch_missing_lines`` are in neither file. The answered lines are in :attr:`LLMSim.batch_answers`.

Run it as a separate process (for benchmarks, so it does not share the measured process):
``python tests/llm_sim.py --latency 0.2 --answer '{}'`` prints its URL, then serves until
stdin closes or it is terminated.
"""

from __future__ import annotations

import argparse
import email.parser
import email.policy
import inspect
import json
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAILURE_KINDS = (
    "500",
    "503",
    "429",
    "html",
    "empty",
    "garbage",
    "no_choices",
    "hang",
    "echo_auth",
    "reject_format",
    "status",
)


@dataclass
class Failure:
    """A scripted misbehaviour.

    ``500``/``503``: that status with a JSON error; ``429``: rate limited, with ``retry_after``
    as the ``Retry-After`` header if given; ``html``: 200 with an HTML page; ``empty``: 200
    with an empty body; ``garbage``: 200 with broken JSON; ``no_choices``: 200 with JSON
    lacking ``choices``; ``hang``: wait ``seconds`` before answering normally; ``echo_auth``:
    ``status`` with the request's Authorization header in the body (a careless proxy);
    ``reject_format``: 400 saying ``response_format`` is not supported; ``status``: any
    ``status`` with a JSON error body.
    """

    kind: str
    retry_after: str | None = None
    seconds: float = 30.0
    status: int = 400

    def __post_init__(self) -> None:
        if self.kind not in FAILURE_KINDS:
            raise ValueError(f"unknown failure kind {self.kind!r}; one of {FAILURE_KINDS}")


@dataclass
class Reply:
    """A normal answer with control over its details: ``finish_reason`` (``"length"``: cut at
    ``max_tokens``) and ``usage`` (``None``: computed as usual; ``False``: left out)."""

    text: str
    finish_reason: str = "stop"
    usage: dict[str, int] | bool | None = None


@dataclass(frozen=True)
class SimCall:
    """What an ``answer`` function of two arguments learns about the answer it gives."""

    model: str
    sample: int  # how many answers this model gave to these messages before this one (0, 1, ...)
    n: int  # choices asked for in this request


Behaviour = str | Reply | Failure
Answer = str | Callable[..., Behaviour]


def tokens_of(text: str) -> int:
    """The simulated tokenizer: a token per four characters, at least one."""
    return max(1, len(text) // 4)


def prompt_tokens(messages: list[dict[str, Any]]) -> int:
    return tokens_of("".join(str(m.get("content", "")) for m in messages if isinstance(m, dict)))


@dataclass
class SimRequest:
    at: float  # time.monotonic() when the request arrived
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    wall: float = 0.0  # time.time() when it arrived
    usage: dict[str, int] | None = None  # what the answer reported (None: no usage, or no answer)
    tokens: dict[str, int] | None = None  # what the answer used, reported or not (None: no answer)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages", []) if isinstance(self.body, dict) else []

    @property
    def last_user_text(self) -> str:
        users = [m.get("content", "") for m in self.messages if m.get("role") == "user"]
        return users[-1] if users else ""


@dataclass
class LLMSim:
    answer: Answer = "{}"
    latency: float = 0.0  # seconds before every chat answer
    script: deque = field(default_factory=deque)  # Behaviour | None per coming chat request
    reject_response_format: bool = False  # 400 naming response_format when a request has one
    model: str = "sim-model"
    models: tuple[str, ...] = ()  # served model names (empty: any name is answered)
    report_usage: bool = True  # False: answers carry no ``usage``
    usage_every: int = 1  # k: only the 1st, (k+1)th, (2k+1)th... answer carries ``usage``
    supports_n: bool = True  # False: one choice whatever ``n`` asks
    batch_api: bool = True  # False: no Batch API (404), as vLLM's own server
    batch_polls: int = 2  # looks at a batch before it ends
    batch_end: str = "completed"  # completed, expired, failed, cancelled
    batch_failed_lines: tuple[int, ...] = ()  # line indices answered with an HTTP 500
    batch_missing_lines: tuple[int, ...] = ()  # line indices in neither output file
    host: str = "127.0.0.1"
    port: int = 0

    def __post_init__(self) -> None:
        self.script = deque(self.script)
        self.requests: list[SimRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.answered = 0  # chat completions answered (a failure or a dropped request is not one)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._samples: dict[tuple[str, str], int] = {}  # (model, messages) -> answers given so far
        self._answers = 0  # chat answers given (for ``usage_every``)
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_answers: list[dict[str, Any]] = []  # per answered batch line: custom_id, body, usage

    # ------------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        """The base URL a client is configured with (``.../v1``)."""
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> LLMSim:
        sim = self

        class Handler(_Handler):
            pass

        Handler.sim = sim
        self._server = _Server((self.host, self.port), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="llm-sim", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # releases hanging handlers
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LLMSim:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ observations

    @property
    def chat_requests(self) -> list[SimRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def count(self) -> int:
        return len(self.chat_requests)

    def reset_samples(self) -> None:
        """Forget how many answers each prompt got: the next asking of a prompt is its sample 0 again
        (so two routes asking the same prompts get the same scripted samples)."""
        with self._lock:
            self._samples.clear()

    def reset_counts(self) -> None:
        with self._lock:
            self.requests.clear()
            self.max_in_flight = self.in_flight
            self._answers = 0

    # ------------------------------------------------------------------ behaviour

    @property
    def served(self) -> tuple[str, ...]:
        return self.models or (self.model,)

    def _behaviours(self, body: Any) -> list[Behaviour]:
        """One behaviour per choice (a failure: the whole request's)."""
        with self._lock:
            scripted = self.script.popleft() if self.script else None
        body = body if isinstance(body, dict) else {}
        model = str(body.get("model") or self.model)
        n = body.get("n") if isinstance(body.get("n"), int) and body.get("n") > 1 and self.supports_n else 1
        if self.models and model not in self.models:
            return [Failure("status", status=404)]
        if scripted is not None:
            return [scripted] if isinstance(scripted, Failure) else [scripted] * n
        if self.reject_response_format and "response_format" in body:
            return [Failure("reject_format")]
        if not callable(self.answer):
            return [self.answer] * n
        messages = body.get("messages", [])
        key = (model, json.dumps(messages, sort_keys=True))
        with self._lock:
            first = self._samples.get(key, 0)
            self._samples[key] = first + n
        if _arity(self.answer) >= 2:
            return [self.answer(messages, SimCall(model, first + i, n)) for i in range(n)]
        return [self.answer(messages) for _ in range(n)]

    def completion(self, replies: str | Reply | list[str | Reply], body: Any = None) -> dict[str, Any]:
        """A chat completion with one choice per reply, and its ``usage`` unless left out."""
        return self.completion_and_tokens(replies, body)[0]

    def completion_and_tokens(
        self, replies: str | Reply | list[str | Reply], body: Any = None
    ) -> tuple[dict[str, Any], dict[str, int]]:
        """:meth:`completion`, and the tokens it used (reported or not)."""
        replies = [
            r if isinstance(r, Reply) else Reply(r) for r in (replies if isinstance(replies, list) else [replies])
        ]
        body = body if isinstance(body, dict) else {}
        payload: dict[str, Any] = {
            "id": f"chatcmpl-sim-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model") or self.model),
            "choices": [
                {"index": i, "message": {"role": "assistant", "content": r.text}, "finish_reason": r.finish_reason}
                for i, r in enumerate(replies)
            ],
        }
        given = [r.usage for r in replies if r.usage is not None]
        if given and isinstance(given[0], dict):
            usage = dict(given[0])
        else:
            completion = sum(tokens_of(r.text) for r in replies)
            usage = {"prompt_tokens": prompt_tokens(body.get("messages", [])), "completion_tokens": completion}
        usage.setdefault("total_tokens", usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0))
        with self._lock:
            turn, self._answers = self._answers, self._answers + 1
        if self.report_usage and False not in given and turn % max(1, self.usage_every) == 0:
            payload["usage"] = usage
        return payload, dict(usage)


BATCH_ENDS = ("completed", "expired", "failed", "cancelled")


def _jsonl(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


class _Batches:
    """The Batch API's state changes (on the sim's lock-free paths: one handler at a time per batch)."""

    def __init__(self, sim: LLMSim):
        self.sim = sim

    def upload(self, content: bytes, purpose: str) -> dict[str, Any]:
        with self.sim._lock:
            file_id = f"file-sim-{len(self.sim.files) + 1}"
            self.sim.files[file_id] = content
        return {"id": file_id, "object": "file", "bytes": len(content), "purpose": purpose, "filename": "input.jsonl"}

    def create(self, body: Any) -> tuple[int, dict[str, Any]]:
        body = body if isinstance(body, dict) else {}
        file_id = body.get("input_file_id")
        if file_id not in self.sim.files:
            return 400, {"error": {"message": f"no file {file_id!r}", "type": "invalid_request_error"}}
        if body.get("endpoint") != "/v1/chat/completions":
            return 400, {"error": {"message": f"endpoint {body.get('endpoint')!r} is not supported"}}
        lines = [json.loads(line) for line in self.sim.files[file_id].decode().splitlines() if line.strip()]
        with self.sim._lock:
            batch_id = f"batch_sim_{len(self.sim.batches) + 1}"
            batch = {
                "id": batch_id,
                "object": "batch",
                "endpoint": body["endpoint"],
                "input_file_id": file_id,
                "completion_window": body.get("completion_window"),
                "status": "validating",
                "output_file_id": None,
                "error_file_id": None,
                "errors": None,
                "created_at": int(time.time()),
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "metadata": body.get("metadata"),
                "_lines": lines,
                "_looks": 0,
            }
            self.sim.batches[batch_id] = batch
        return 200, self.public(batch)

    @staticmethod
    def public(batch: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    def look(self, batch_id: str) -> tuple[int, dict[str, Any]]:
        batch = self.sim.batches.get(batch_id)
        if batch is None:
            return 404, {"error": {"message": f"no batch {batch_id!r}"}}
        if batch["status"] in BATCH_ENDS:
            return 200, self.public(batch)
        batch["_looks"] += 1
        total = len(batch["_lines"])
        if batch["_looks"] < self.sim.batch_polls:
            batch["status"] = "in_progress"
            batch["request_counts"] = {"total": total, "completed": total // 2, "failed": 0}
            return 200, self.public(batch)
        self.finish(batch)
        return 200, self.public(batch)

    def finish(self, batch: dict[str, Any]) -> None:
        sim, lines, end = self.sim, batch["_lines"], self.sim.batch_end
        if end == "failed":
            batch["status"] = "failed"
            batch["errors"] = {
                "object": "list",
                "data": [{"code": "invalid_request", "message": "scripted: the batch is refused", "line": 1}],
            }
            return
        answered, errors = [], []
        for index, line in enumerate(lines):
            custom_id, body = line.get("custom_id"), line.get("body")
            if index in sim.batch_missing_lines:
                continue
            if (end in ("expired", "cancelled") and index >= len(lines) // 2) or index in sim.batch_failed_lines:
                code = {"expired": "batch_expired", "cancelled": "batch_cancelled"}.get(end)
                if code and index >= len(lines) // 2:
                    errors.append(
                        {
                            "id": f"batch_req_{index}",
                            "custom_id": custom_id,
                            "response": None,
                            "error": {"code": code, "message": "This request could not be executed in time."},
                        }
                    )
                else:
                    errors.append(
                        {
                            "id": f"batch_req_{index}",
                            "custom_id": custom_id,
                            "error": None,
                            "response": {"status_code": 500, "body": {"error": {"message": "scripted line failure"}}},
                        }
                    )
                continue
            behaviours = sim._behaviours(body)
            if any(isinstance(b, Failure) for b in behaviours):
                errors.append(
                    {
                        "id": f"batch_req_{index}",
                        "custom_id": custom_id,
                        "error": None,
                        "response": {"status_code": 500, "body": {"error": {"message": "scripted failure"}}},
                    }
                )
                continue
            payload, tokens = sim.completion_and_tokens(list(behaviours), body)  # type: ignore[arg-type]
            with sim._lock:
                sim.batch_answers.append(
                    {"custom_id": custom_id, "body": body, "usage": payload.get("usage"), "tokens": tokens}
                )
            answered.append(
                {
                    "id": f"batch_req_{index}",
                    "custom_id": custom_id,
                    "error": None,
                    "response": {"status_code": 200, "request_id": f"req_{index}", "body": payload},
                }
            )
        if answered:
            batch["output_file_id"] = self.upload(_jsonl(answered), "batch_output")["id"]
        if errors:
            batch["error_file_id"] = self.upload(_jsonl(errors), "batch_output")["id"]
        batch["status"] = end
        batch["request_counts"] = {"total": len(lines), "completed": len(answered), "failed": len(errors)}


def _multipart(content_type: str, raw: bytes) -> dict[str, bytes]:
    """The parts of a multipart/form-data body, by field name."""
    message = email.parser.BytesParser(policy=email.policy.default).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + raw
    )
    parts = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        parts[str(name)] = part.get_payload(decode=True) or b""
    return parts


def _arity(function: Callable[..., Any]) -> int:
    try:
        return len(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return 1


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # the listen backlog (5 by default drops bursts of new connections)
    daemon_threads = True
    block_on_close = False


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers
    disable_nagle_algorithm = True  # TCP_NODELAY, as real servers: no 40 ms delayed-ACK stalls
    sim: LLMSim

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _send(self, status: int, body: bytes, content_type: str = "application/json", headers: dict | None = None):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self._headers_buffer.append(b"\r\n" + body)  # headers and body in one write
        self.wfile.write(b"".join(self._headers_buffer))
        self._headers_buffer = []

    def _json(self, status: int, payload: Any, headers: dict | None = None) -> None:
        self._send(status, json.dumps(payload).encode(), headers=headers)

    def _record(self, body: Any) -> SimRequest:
        request = SimRequest(time.monotonic(), self.command, self.path, dict(self.headers.items()), body, time.time())
        with self.sim._lock:
            self.sim.requests.append(request)
        return request

    def do_GET(self) -> None:
        self._record(None)
        path = self.path.rstrip("/")
        if "/batches/" in path:
            self._json(*_Batches(self.sim).look(path.rsplit("/", 1)[1]))
        elif path.endswith("/content") and "/files/" in path:
            file_id = path.split("/files/", 1)[1].split("/")[0]
            content = self.sim.files.get(file_id)
            if content is None:
                self._json(404, {"error": {"message": f"no file {file_id!r}"}})
            else:
                self._send(200, content, "application/octet-stream")
        elif self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in self.sim.served]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = None
        request = self._record(body)
        path = self.path.rstrip("/")
        if not self.sim.batch_api and (path.endswith("/files") or path.endswith("/batches")):
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        if path.endswith("/files"):
            parts = _multipart(self.headers.get("Content-Type", ""), raw)
            if "file" not in parts:
                self._json(400, {"error": {"message": "no file part"}})
            else:
                self._json(200, _Batches(self.sim).upload(parts["file"], parts.get("purpose", b"").decode()))
            return
        if path.endswith("/batches"):
            self._json(*_Batches(self.sim).create(body))
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        sim = self.sim
        with sim._lock:
            sim.in_flight += 1
            sim.max_in_flight = max(sim.max_in_flight, sim.in_flight)
        try:
            if sim.latency:
                sim._stopping.wait(sim.latency)
            self._answer(sim._behaviours(body), request)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up
            pass
        finally:
            with sim._lock:
                sim.in_flight -= 1

    def _answer(self, behaviours: list[Behaviour], request: SimRequest) -> None:
        sim = self.sim
        failure = next((b for b in behaviours if isinstance(b, Failure)), None)
        if failure is None:
            payload, request.tokens = sim.completion_and_tokens(list(behaviours), request.body)  # type: ignore[arg-type]
            request.usage = payload.get("usage")
            with sim._lock:
                sim.answered += 1
            self._json(200, payload)
            return
        behaviour = failure
        kind = behaviour.kind
        if kind in ("500", "503"):
            self._json(int(kind), {"error": {"message": "internal error", "type": "server_error"}})
        elif kind == "429":
            headers = {"Retry-After": behaviour.retry_after} if behaviour.retry_after is not None else {}
            self._json(429, {"error": {"message": "rate limit reached", "type": "rate_limit"}}, headers)
        elif kind == "html":
            self._send(200, b"<!DOCTYPE html><html><body><h1>Welcome to nginx!</h1></body></html>", "text/html")
        elif kind == "empty":
            self._send(200, b"")
        elif kind == "garbage":
            self._send(200, b'{"choices": [{"message": {"content": "trunc')
        elif kind == "no_choices":
            self._json(200, {"id": "x", "object": "chat.completion", "model": sim.model})
        elif kind == "hang":
            sim._stopping.wait(behaviour.seconds)
            payload, request.tokens = sim.completion_and_tokens("{}", request.body)
            request.usage = payload.get("usage")
            self._json(200, payload)
        elif kind == "echo_auth":
            echoed = request.headers.get("Authorization", "")
            self._json(behaviour.status, {"error": {"message": f"bad request with header {echoed}"}})
        elif kind == "reject_format":
            self._json(400, {"error": {"message": "response_format is not supported by this server"}})
        else:
            self._json(behaviour.status, {"error": {"message": f"scripted HTTP {behaviour.status}"}})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--answer", default="{}")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--model", action="append", default=[], help="a served model name (repeatable)")
    parser.add_argument("--no-usage", action="store_true", help="answers carry no usage")
    parser.add_argument("--usage-every", type=int, default=1, help="only one answer in this many carries usage")
    args = parser.parse_args(argv)
    models = tuple(args.model)
    with LLMSim(
        answer=args.answer,
        latency=args.latency,
        port=args.port,
        model=models[0] if models else "sim-model",
        models=models,
        report_usage=not args.no_usage,
        usage_every=args.usage_every,
    ) as sim:
        print(sim.url, flush=True)
        try:
            sys.stdin.read()  # until the parent closes our stdin
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
