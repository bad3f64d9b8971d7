"""The suite's local NL→PDDL generators behind an OpenAI-compatible HTTP API (``plansuite-serve``).

Endpoints (JSON, standard library ``http.server`` only, meant for localhost):

- ``GET /v1/models``: the served model names;
- ``POST /v1/chat/completions``: one non-streamed completion (``choices[0].message.content``).

A request is read the way ``backend=openai`` writes it (:func:`~plansuite.nl2pddl.generators.
chat_messages`): the last user turn holding ``Task description:`` is the task (its fenced
``pddl`` block the domain; earlier turns, e.g. few-shot examples, are context the local model
does not need), and an assistant turn plus a user turn after it are a repair: the previous
candidate and the feedback. The feedback's diagnostic lines
(:func:`~plansuite.nl2pddl.repair.describe_diagnostic`) are parsed back, so a served model
repairs exactly as ``backend=local`` does (resampling from the flagged section). A user turn
without that layout is taken as the description itself (any chat client works).

Sampling settings are the server's (``plansuite-serve`` options), not the request's: a local
model is deterministic for a given prompt and seed, which keeps served runs reproducible.
Generation is serialised by a lock (one CPU model, many HTTP threads).
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from plansuite.nl2pddl.decoding.generators import BackendError, Feedback, ProblemGenerator
from plansuite.pddl.checks import Diagnostic

MAX_BODY = 4 * 1024 * 1024  # bytes; a chat request is a few KB
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


def _text(message: Mapping) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts: keep the text ones
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
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
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise RequestError(400, "messages: a non-empty list of {role, content} objects is required")
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if not users:
        raise RequestError(400, "messages: no user message")
    tasks = [i for i in users if "Task description:" in _text(messages[i])]
    at = tasks[-1] if tasks else users[0]
    user = _text(messages[at])
    m = re.search(r"Task description:\n(.*?)(?:\n\nWrite the problem\.pddl[^\n]*)?\s*$", user, re.S)
    description = m.group(1).strip() if m else user.strip()
    domain = re.search(r"```(?:pddl)?\n(.*?)\n```", user, re.S)
    after = messages[at + 1:]
    feedback = None
    if len(after) >= 2 and after[-2].get("role") == "assistant" and after[-1].get("role") == "user":
        previous, message = _text(after[-2]), _text(after[-1])
        feedback = Feedback(previous, parse_diagnostics(message), message)
    return ChatTask(description, domain.group(1).strip() if domain else "", feedback)


class ChatService:
    """Named generators answering chat-completion request bodies (no HTTP here)."""

    def __init__(self, models: Mapping[str, ProblemGenerator]):
        if not models:
            raise ValueError("at least one model is required")
        self.models = dict(models)
        self.created = int(time.time())
        self._lock = threading.Lock()

    def list_models(self) -> dict:
        return {"object": "list", "data": [{"id": name, "object": "model", "created": self.created,
                                            "owned_by": "plansuite"} for name in self.models]}

    def complete(self, body: object) -> dict:
        if not isinstance(body, dict):
            raise RequestError(400, "request body must be a JSON object")
        name = body.get("model")
        if name not in self.models:
            raise RequestError(404, f"model '{name}' not found (served: {', '.join(self.models)})",
                               "model_not_found")
        if body.get("stream"):
            raise RequestError(400, "stream=true is not supported by plansuite-serve")
        task = parse_chat(body.get("messages"))
        with self._lock:
            try:
                content = self.models[name].generate(task.description, task.domain_text, task.feedback)
            except BackendError as exc:  # e.g. a domain the model was not trained on
                raise RequestError(400, str(exc)) from exc
        return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion",
                "created": int(time.time()), "model": name,
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}]}


def make_server(service: ChatService, host: str = "127.0.0.1", port: int = 8000) -> ThreadingHTTPServer:
    """An HTTP server for ``service`` (port 0: a free one, see ``server_address``)."""

    class Handler(BaseHTTPRequestHandler):
        def _reply(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, exc: RequestError) -> None:
            self._reply(exc.status, {"error": {"message": str(exc), "type": "invalid_request_error",
                                               "code": exc.code}})

        def do_GET(self) -> None:  # noqa: N802 (http.server naming)
            if self.path.rstrip("/") == "/v1/models":
                self._reply(200, service.list_models())
            else:
                self._error(RequestError(404, f"no route {self.path}", "not_found"))

        def do_POST(self) -> None:  # noqa: N802
            try:
                if self.path.rstrip("/") != "/v1/chat/completions":
                    raise RequestError(404, f"no route {self.path}", "not_found")
                length = int(self.headers.get("Content-Length") or 0)
                if not 0 < length <= MAX_BODY:
                    raise RequestError(400 if length <= MAX_BODY else 413, "missing or oversized body")
                try:
                    body = json.loads(self.rfile.read(length))
                except (ValueError, UnicodeDecodeError) as exc:
                    raise RequestError(400, f"body is not JSON ({exc})") from exc
                self._reply(200, service.complete(body))
            except RequestError as exc:
                self._error(exc)
            except Exception as exc:  # a model failure: an HTTP 500 the client sees, not a hang
                self._error(RequestError(500, f"{type(exc).__name__}: {exc}", "server_error"))

        def log_message(self, format: str, *args) -> None:  # noqa: A002 (http.server naming)
            pass  # http.server would write every request to stderr

    return ThreadingHTTPServer((host, port), Handler)
