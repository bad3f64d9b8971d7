"""The suite's local NL→PDDL generators behind an OpenAI-compatible HTTP API (``plansuite-serve``).

Endpoints (JSON; a Starlette app served by uvicorn, meant for localhost):

- ``GET /v1/models``: the served model names;
- ``POST /v1/chat/completions``: one non-streamed completion (``choices[0].message.content``).

A request is read the way ``backend=openai`` writes it (:func:`~plansuite.nl2pddl.decoding.generators.
chat_messages`): the last user turn holding ``Task description:`` is the task (its fenced
``pddl`` block the domain; earlier turns, e.g. few-shot examples, are context the local model
does not need), and an assistant turn plus a user turn after it are a repair: the previous
candidate and the feedback. The feedback's diagnostic lines
(:func:`~plansuite.nl2pddl.loop.repair.describe_diagnostic`) are parsed back, so a served model
repairs exactly as ``backend=local`` does (resampling from the flagged section). A user turn
without that layout is taken as the description itself (any chat client works).

Sampling settings are the server's (``plansuite-serve`` options), not the request's: a local
model is deterministic for a given prompt and seed, which keeps served runs reproducible.

Limits (:class:`ServerLimits`): a request body is at most ``max_body`` bytes (413 beyond, read no
further) and must arrive within ``read_timeout`` seconds of its headers (408, connection closed:
a short body behind a larger ``Content-Length`` does not hold the server); JSON nested deeper than
``MAX_DEPTH`` is refused. Every client error is a 4xx with an OpenAI-style JSON error, malformed
HTTP (``Content-Length: abc``) included. Generation is serialised (one model, not thread-safe):
one request generates at a time in a worker thread while the event loop keeps answering; at most
``max_waiting`` more wait for their turn (503 ``server_busy`` beyond, which clients retry), and
uvicorn refuses connections beyond ``max_connections`` with a 503.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import h11
import uvicorn
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    TypeAdapter,
    ValidationError,
    field_validator,
)
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from uvicorn.protocols.http.h11_impl import H11Protocol

from plansuite.nl2pddl.decoding.generators import BackendError, Feedback, ProblemGenerator
from plansuite.pddl.checks import Diagnostic

MAX_BODY = 4 * 1024 * 1024  # bytes; a chat request is a few KB
MAX_DEPTH = 32  # JSON nesting a chat request needs: about 5
_DIAGNOSTIC = re.compile(r"^- (?:line (\d+), )?(.*?): (.*) \[([\w-]+)\]$")


class RequestError(Exception):
    """A request the server refuses: ``status`` and an OpenAI-style error ``code``."""

    def __init__(self, status: int, message: str, code: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.code = status, code


@dataclass(frozen=True)
class ChatTask:
    description: str
    domain_text: str
    feedback: Feedback | None


@dataclass(frozen=True)
class ServerLimits:
    """What one client may ask of the server (module docstring)."""

    max_body: int = MAX_BODY  # bytes
    read_timeout: float = 30.0  # seconds for the body to arrive after its headers
    max_waiting: int = 16  # requests queued behind the one generating
    max_connections: int = 64  # open connections and tasks (uvicorn's limit_concurrency)

    def __post_init__(self):
        for name, low in (("max_body", 1), ("read_timeout", 1e-3), ("max_waiting", 0), ("max_connections", 1)):
            if not getattr(self, name) >= low:
                raise ValueError(f"{name} must be at least {low:g}, got {getattr(self, name)}")


# ---- request validation -------------------------------------------------------------------------

class _Message(BaseModel):
    """One chat turn; other OpenAI fields (``name``, ...) are accepted and ignored."""

    model_config = ConfigDict(extra="allow")
    role: StrictStr
    content: Any = None

    @field_validator("content")
    @classmethod
    def _content(cls, value: Any) -> Any:
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, list) and all(
                isinstance(p, dict) and isinstance(p.get("text", ""), str) for p in value):
            return value
        raise ValueError("content must be a string or a list of content parts "
                         "({\"type\": \"text\", \"text\": STRING})")


class _ChatRequest(BaseModel):
    """A chat-completions body; sampling fields (``temperature``, ...) are the server's, ignored."""

    model_config = ConfigDict(extra="allow")
    model: StrictStr
    messages: list[_Message] = Field(min_length=1)
    stream: StrictBool | None = False


_MESSAGES = TypeAdapter(list[_Message])


def _describe(exc: ValidationError) -> str:
    """One line naming the first invalid field, e.g. ``messages.0.role: Input should be ...``."""
    err = exc.errors(include_url=False)[0]
    where = ".".join(str(part) for part in err["loc"]) or "body"
    return f"{where}: {err['msg'].removeprefix('Value error, ')}"


def _messages(messages: object) -> list[_Message]:
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise RequestError(400, "messages: a non-empty list of {role, content} objects is required")
    try:
        return _MESSAGES.validate_python(messages)
    except ValidationError as exc:
        raise RequestError(400, "messages." + _describe(exc)) from exc


def _depth(value: object, limit: int) -> int:
    """How deeply ``value`` nests lists and objects, counting no further than ``limit + 1``.

    >>> _depth({"a": [1, [2]]}, 32), _depth("x", 32), _depth([[[[]]]], 2)
    (3, 0, 3)
    """
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (list, dict)):
            deepest = max(deepest, level)
            if deepest > limit:
                return deepest
            stack.extend((v, level + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def parse_body(data: bytes) -> object:
    """A request body as JSON: not JSON, not UTF-8 or nested past ``MAX_DEPTH`` is a 400.

    >>> parse_body(b'{"model": "m"}')
    {'model': 'm'}
    >>> parse_body(b"[" * 100 + b"]" * 100)
    Traceback (most recent call last):
    ...
    plansuite.nl2pddl.chat_server.RequestError: body is nested more than 32 levels deep
    """
    try:
        body = json.loads(data)
    except RecursionError as exc:
        raise RequestError(400, f"body is nested more than {MAX_DEPTH} levels deep") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise RequestError(400, f"body is not JSON ({exc})") from exc
    if _depth(body, MAX_DEPTH) > MAX_DEPTH:
        raise RequestError(400, f"body is nested more than {MAX_DEPTH} levels deep")
    return body


def parse_diagnostics(message: str) -> tuple[Diagnostic, ...]:
    """The diagnostics listed in a feedback message (inverse of ``describe_diagnostic``).

    >>> from plansuite.nl2pddl.loop.repair import describe_diagnostic
    >>> d = Diagnostic("arity", "<generated>", "init (on a)", "'on' takes 2 argument(s), got 1", 4)
    >>> parse_diagnostics("Your problem has 1 issue(s):\\n" + describe_diagnostic(d) + "\\nFix them.")
    (Diagnostic(kind='arity', source='<generated>', construct='init (on a)', message="'on' takes 2 argument(s), got 1", line=4),)
    """
    out = []
    for line in message.splitlines():
        m = _DIAGNOSTIC.match(line.strip())
        if m:
            out.append(Diagnostic(m.group(4), "<generated>", m.group(2), m.group(3),
                                  int(m.group(1)) if m.group(1) else None))
    return tuple(out)


def _text(message: _Message) -> str:
    content = message.content
    if isinstance(content, list):  # content parts: keep the text ones
        content = "".join(p.get("text", "") for p in content)
    if not isinstance(content, str):
        raise RequestError(400, "messages: each message needs a string 'content'")
    return content


def parse_chat(messages: object) -> ChatTask:
    """Description, domain text and feedback from chat messages (module docstring).

    >>> from plansuite.nl2pddl.decoding.generators import chat_messages
    >>> parse_chat(chat_messages("Two blocks.", "(define (domain bw))", None))
    ChatTask(description='Two blocks.', domain_text='(define (domain bw))', feedback=None)
    >>> parse_chat([{"role": "user", "content": "a on b"}]).description
    'a on b'
    """
    turns = _messages(messages)
    users = [i for i, m in enumerate(turns) if m.role == "user"]
    if not users:
        raise RequestError(400, "messages: no user message")
    tasks = [i for i in users if "Task description:" in _text(turns[i])]
    at = tasks[-1] if tasks else users[0]
    user = _text(turns[at])
    m = re.search(r"Task description:\n(.*?)(?:\n\nWrite the problem\.pddl[^\n]*)?\s*$", user, re.S)
    description = m.group(1).strip() if m else user.strip()
    domain = re.search(r"```(?:pddl)?\n(.*?)\n```", user, re.S)
    after = turns[at + 1:]
    feedback = None
    if len(after) >= 2 and after[-2].role == "assistant" and after[-1].role == "user":
        previous, message = _text(after[-2]), _text(after[-1])
        feedback = Feedback(previous, parse_diagnostics(message), message)
    return ChatTask(description, domain.group(1).strip() if domain else "", feedback)


# ---- the service (no HTTP here) -----------------------------------------------------------------

class ChatService:
    """Named generators answering chat-completion request bodies (no HTTP here)."""

    def __init__(self, models: Mapping[str, ProblemGenerator]):
        if not models:
            raise ValueError("at least one model is required")
        self.models = dict(models)
        self.created = int(time.time())
        self._lock = threading.Lock()  # the models are not thread-safe

    def list_models(self) -> dict:
        return {"object": "list", "data": [{"id": name, "object": "model", "created": self.created,
                                            "owned_by": "plansuite"} for name in self.models]}

    def prepare(self, body: object) -> tuple[str, ChatTask]:
        """The served model's name and the task of a request body, or a :class:`RequestError`."""
        if not isinstance(body, dict):
            raise RequestError(400, "request body must be a JSON object")
        name = body.get("model")
        if not isinstance(name, str):
            raise RequestError(400, f"model: a string is required, got {type(name).__name__}")
        if name not in self.models:
            raise RequestError(404, f"model '{name}' not found (served: {', '.join(self.models)})",
                               "model_not_found")
        try:
            request = _ChatRequest.model_validate({**body, "messages": _messages(body.get("messages"))})
        except ValidationError as exc:
            raise RequestError(400, _describe(exc)) from exc
        if request.stream:
            raise RequestError(400, "stream=true is not supported by plansuite-serve")
        return name, parse_chat(body["messages"])

    def answer(self, name: str, task: ChatTask) -> dict:
        """A chat.completion of ``task`` by model ``name`` (one generation at a time)."""
        with self._lock:
            try:
                content = self.models[name].generate(task.description, task.domain_text, task.feedback)
            except BackendError as exc:  # e.g. a domain the model was not trained on
                raise RequestError(400, str(exc)) from exc
        return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion",
                "created": int(time.time()), "model": name,
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}]}

    def complete(self, body: object) -> dict:
        return self.answer(*self.prepare(body))


# ---- HTTP ---------------------------------------------------------------------------------------

def _error(exc: RequestError, close: bool = False) -> JSONResponse:
    return JSONResponse({"error": {"message": str(exc), "type": "invalid_request_error", "code": exc.code}},
                        exc.status, headers={"Connection": "close"} if close else None)


async def _read_body(request: Request, limits: ServerLimits) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and int(declared) > limits.max_body:  # h11 vetted the integer
        raise RequestError(413, f"body of {declared} bytes is over the {limits.max_body}-byte limit",
                           "request_too_large")
    chunks, size = [], 0
    try:
        async with asyncio.timeout(limits.read_timeout):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limits.max_body:
                    raise RequestError(413, f"body is over the {limits.max_body}-byte limit",
                                       "request_too_large")
                chunks.append(chunk)
    except TimeoutError as exc:
        raise RequestError(408, f"body not received within {limits.read_timeout:g} s "
                                f"({size} of {declared or 'unknown'} bytes)", "request_timeout") from exc
    if not size:
        raise RequestError(400, "missing body")
    return b"".join(chunks)


def make_app(service: ChatService, limits: ServerLimits | None = None) -> Starlette:
    """The ASGI application answering for ``service`` (module docstring)."""
    limits = limits or ServerLimits()
    turn = asyncio.Semaphore(1)  # created lazily per loop by asyncio (Python >= 3.10)
    waiting = 0

    async def models(request: Request) -> JSONResponse:
        return JSONResponse(service.list_models())

    async def chat(request: Request) -> JSONResponse:
        nonlocal waiting
        try:
            body = parse_body(await _read_body(request, limits))
            name, task = service.prepare(body)
        except RequestError as exc:
            return _error(exc, close=exc.status in (408, 413))
        except ClientDisconnect:
            return _error(RequestError(400, "client disconnected"), close=True)
        if waiting > limits.max_waiting:
            return _error(RequestError(503, f"server busy ({waiting} requests waiting); retry later",
                                       "server_busy"))
        waiting += 1
        try:
            async with turn:
                return JSONResponse(await run_in_threadpool(service.answer, name, task))
        except RequestError as exc:
            return _error(exc)
        except Exception as exc:  # a model failure: an HTTP 500 the client sees, not a hang
            return _error(RequestError(500, f"{type(exc).__name__}: {exc}", "server_error"))
        finally:
            waiting -= 1

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        code = {404: "not_found", 405: "method_not_allowed"}.get(status, "server_error")
        return _error(RequestError(status, f"no route {request.method} {request.url.path}"
                                   if status in (404, 405) else "internal error", code))

    routes = [Route(path, endpoint, methods=[method])
              for base, endpoint, method in (("/v1/models", models, "GET"),
                                             ("/v1/chat/completions", chat, "POST"))
              for path in (base, base + "/")]
    return Starlette(routes=routes, exception_handlers={HTTPException: http_error, Exception: http_error})


class _Protocol(H11Protocol):
    """uvicorn's h11 protocol, answering malformed HTTP with a JSON error instead of plain text."""

    def send_400_response(self, msg: str) -> None:
        message = "malformed HTTP request: its request line or a header (e.g. Content-Length) is not HTTP/1.1"
        data = json.dumps({"error": {"message": message,
                                     "type": "invalid_request_error", "code": "bad_request"}}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                   (b"connection", b"close")]
        for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                      h11.Data(data=data), h11.EndOfMessage()):
            self.transport.write(self.conn.send(event))
        self.transport.close()


class ChatServer:
    """``service`` over HTTP on a socket bound at construction (``server_address``: the port chosen
    for port 0). ``serve_forever`` runs uvicorn until ``shutdown`` (from another thread) or a
    signal; the methods are named as ``http.server``'s."""

    def __init__(self, service: ChatService, host: str = "127.0.0.1", port: int = 8000,
                 limits: ServerLimits | None = None):
        limits = limits or ServerLimits()
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = socket.create_server((host, port), family=family)  # OSError: a busy port
        self.server_address = self.socket.getsockname()
        config = uvicorn.Config(make_app(service, limits), http=_Protocol, lifespan="off",
                                log_config=None, log_level="error", access_log=False,
                                limit_concurrency=limits.max_connections, timeout_keep_alive=5,
                                timeout_graceful_shutdown=5)
        self._server = uvicorn.Server(config)
        self._stopped = threading.Event()

    def serve_forever(self, poll_interval: float = 0.5) -> None:  # noqa: ARG002 (http.server's signature)
        self._stopped.clear()
        try:
            self._server.run(sockets=[self.socket])
        finally:
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop ``serve_forever`` (called from another thread) and wait for it."""
        self._server.should_exit = True
        self._stopped.wait(timeout=30)

    def server_close(self) -> None:
        self.socket.close()


def make_server(service: ChatService, host: str = "127.0.0.1", port: int = 8000,
                limits: ServerLimits | None = None) -> ChatServer:
    """An HTTP server for ``service`` (port 0: a free one, see ``server_address``)."""
    return ChatServer(service, host, port, limits)
