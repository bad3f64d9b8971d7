"""The OpenAI-compatible backend against a local HTTP server started here (never the network),
and the ``plansuite-nl2pddl task=repair`` experiment end to end through it."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from plansuite.domains import builtin_path, load_builtin
from plansuite.nl2pddl.data.dataset import NL2PDDLSpec, build_nl2pddl, load_pairs
from plansuite.nl2pddl.decoding.generators import BackendError, Feedback, OpenAIChatGenerator
from plansuite.pddl.checks import Diagnostic


class ChatServer:
    """A tiny chat-completions server; ``respond(body) -> (status, json)`` decides each reply."""

    def __init__(self, respond):
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "body": body,  # header names as sent, any case
                                        "headers": {k.title(): v for k, v in self.headers.items()}})
                status, payload = respond(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def chat(content: str) -> tuple[int, dict]:
    return 200, {"choices": [{"message": {"role": "assistant", "content": content}}]}


@pytest.fixture
def serve():
    servers = []

    def start(respond):
        servers.append(ChatServer(respond))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


PROBLEM = "(define (problem p) (:domain gripper) (:objects r - room) (:init (at-robby r)) (:goal (and (at-robby r))))"


def test_request_format_key_and_reply_extraction(serve, monkeypatch):
    server = serve(lambda body: chat(f"Here you go:\n```pddl\n{PROBLEM}\n```\nAnything else?"))
    monkeypatch.setenv("PLANSUITE_TEST_KEY", "sk-local")
    gen = OpenAIChatGenerator(server.url, "my-model", api_key_env="PLANSUITE_TEST_KEY", temperature=0.3,
                              max_tokens=77)
    assert gen.generate("one room", "(define (domain gripper))", None) == PROBLEM
    [req] = server.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["Authorization"] == "Bearer sk-local"
    assert req["headers"]["X-Stainless-Lang"] == "python"  # sent by the official openai SDK
    body = req["body"]
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("my-model", 0.3, 77)
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "one room" in body["messages"][1]["content"] and "(define (domain gripper))" in body["messages"][1]["content"]


def test_feedback_becomes_a_follow_up_turn(serve):
    server = serve(lambda body: chat(PROBLEM))
    gen = OpenAIChatGenerator(server.url, "m", api_key_env=None)
    feedback = Feedback("(define (problem old))", (Diagnostic("arity", "c.pddl", "init (on a)", "bad", 3),),
                        "Fix line 3.")
    gen.generate("desc", "dom", feedback)
    body = server.requests[0]["body"]
    assert "Authorization" not in server.requests[0]["headers"]
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
    assert body["messages"][2]["content"] == "(define (problem old))"
    assert body["messages"][3]["content"] == "Fix line 3."


def test_transient_errors_are_retried_and_others_raise_one_line(serve):
    replies = iter([(503, {"error": "busy"}), chat(PROBLEM)])
    server = serve(lambda body: next(replies))
    gen = OpenAIChatGenerator(server.url, "m", api_key_env=None)
    assert gen.generate("d", "dom", None) == PROBLEM and len(server.requests) == 2

    bad = serve(lambda body: (400, {"error": {"message": "unknown model"}}))
    with pytest.raises(BackendError, match="HTTP 400.*unknown model"):
        OpenAIChatGenerator(bad.url, "m", api_key_env=None).generate("d", "dom", None)
    empty = serve(lambda body: (200, {"id": "x"}))
    with pytest.raises(BackendError, match="no choices"):
        OpenAIChatGenerator(empty.url, "m", api_key_env=None).generate("d", "dom", None)

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(BackendError, match="cannot reach"):
        OpenAIChatGenerator(f"http://127.0.0.1:{port}/v1", "m", api_key_env=None,
                            retries=1).generate("d", "dom", None)


def test_a_slow_server_times_out_after_the_sdk_retries(serve):
    import time

    server = serve(lambda body: (time.sleep(1.5), chat(PROBLEM))[1])
    gen = OpenAIChatGenerator(server.url, "m", api_key_env=None, timeout_s=0.3, retries=1)
    with pytest.raises(BackendError, match="cannot reach"):
        gen.generate("d", "dom", None)
    assert len(server.requests) == 2  # the first try and one retry


# ---- the CLI experiment through the HTTP backend ----------------------------------------------
def cli(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("plansuite-nl2pddl", path=str(Path(sys.executable).parent))
    cmd = [exe] if exe else [sys.executable, "-m", "plansuite.cli.nl2pddl"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PLANSUITE_DEBUG": "", "OPENAI_API_KEY": ""})


def test_cli_repair_then_score_through_a_served_model(serve, tmp_path):
    data = tmp_path / "data"
    spec = NL2PDDLSpec(name="nl2pddl_blocksworld", random_problems=40, abstract_sizes=[3, 4], max_objects=4)
    build_nl2pddl(spec, load_builtin("blocksworld"), builtin_path("blocksworld").read_text(), data,
                  seed=1, progress=lambda _: None)
    references = {p.description: p.problem for p in load_pairs(data, "test")}

    def oracle(body):  # a "model" that misspells a predicate first, then follows the feedback
        user = body["messages"][1]["content"]
        description = user.split("Task description:\n", 1)[1].split("\n\nWrite the problem", 1)[0]
        reference = references[description]
        return chat(reference.replace("(on-table", "(ontable") if len(body["messages"]) == 2 else reference)

    server = serve(oracle)
    run = tmp_path / "run"
    proc = cli("task=repair", f"data_dir={data}", "limit=3", "max_attempts=3", f"out_dir={run}",
               "backend=openai", f"backend.base_url={server.url}", "backend.model=oracle")
    assert proc.returncode == 0, proc.stderr
    assert "| 1 | 3 |" in proc.stdout and "| 2 | 3 |" in proc.stdout
    metrics = json.loads((run / "metrics.json").read_text())
    first, second = metrics["overall"]
    assert first["parsed"] == 1.0 and first["domain_consistent"] == 0.0
    assert second["success"] == 1.0 and second["structural"] == 1.0 and second["semantic"] == 1.0
    assert metrics["stops"] == {"success": 3}
    assert json.loads((run / "run.json").read_text())["backend"]["model"] == "oracle"

    proc = cli("task=score", f"data_dir={data}", f"out_dir={run}")  # re-score without the server
    assert proc.returncode == 0 and "op. success but wrong" in proc.stdout

    # resumed under another attempt budget: refused before any request, the log untouched
    proc = cli("task=repair", f"data_dir={data}", "limit=4", f"out_dir={run}", "max_attempts=2",
               "backend=openai", f"backend.base_url={server.url}", "backend.model=oracle")
    assert proc.returncode == 1 and "cannot resume" in proc.stderr and "max_attempts: 3 -> 2" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "resuming" not in proc.stdout

    server.close()  # the backend disappears: one clear line, exit 1, the log kept
    proc = cli("task=repair", f"data_dir={data}", "limit=4", f"out_dir={run}", "max_attempts=3",
               "backend=openai", f"backend.base_url={server.url}", "backend.model=oracle", "backend.timeout_s=2")
    assert proc.returncode == 1 and proc.stderr.strip().startswith("error:") and "cannot reach" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "resuming: 3 items already done" in proc.stdout
