"""``plansuite-serve``: a local problem generator over the OpenAI-compatible HTTP API, talked to by
the official ``openai`` client and by ``plansuite-nl2pddl backend=openai`` (the repair loop)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from serve_process import serve_command, served

from plansuite.domains import builtin_path, load_builtin
from plansuite.errors import ConfigError
from plansuite.nl2pddl.chat_server import (
    ChatService,
    RequestError,
    ServerLimits,
    make_server,
    parse_chat,
)
from plansuite.nl2pddl.data.dataset import NL2PDDLSpec, build_nl2pddl, load_pairs
from plansuite.nl2pddl.decoding.generators import Feedback, OpenAIChatGenerator, chat_messages
from plansuite.nl2pddl.judging.problem_checks import OperationalChecker
from plansuite.nl2pddl.loop.repair import build_feedback, describe_diagnostic, repair
from plansuite.nl2pddl.models.learned import LocalGenerator
from plansuite.pddl.checks import Diagnostic


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    out = tmp_path_factory.mktemp("serve") / "data"
    spec = NL2PDDLSpec(random_problems=30, max_objects=4, abstract_sizes=[3, 4])
    build_nl2pddl(spec, load_builtin("blocksworld"), builtin_path("blocksworld").read_text(), out,
                  seed=5, progress=lambda _: None)
    return out


@pytest.fixture(scope="module")
def export(data, tmp_path_factory, train_problem_generator):
    return train_problem_generator(data, tmp_path_factory.mktemp("pg"), steps=4, max_new_tokens=48)


@pytest.fixture(scope="module")
def server(export):
    with served(f"bw={export}", "--port", "0") as url:
        yield url


def post(url: str, body: object) -> tuple[int, dict]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_parse_chat_reads_the_backend_layout_few_shot_turns_and_feedback():
    d = (Diagnostic("arity", "x.pddl", "init (on a)", "'on' takes 2 argument(s), got 1", 4),
         Diagnostic("critic-goal", "x.pddl", "(:goal ...)", "goal seems wrong", None))
    message = "Your problem has 2 issue(s):\n" + "\n".join(map(describe_diagnostic, d)) + "\nFix them."
    shots = chat_messages("Example task.", "(define (domain bw))", None)[1:] + [
        {"role": "assistant", "content": "(define (problem example))"}]
    messages = chat_messages("Three blocks.", "(define (domain bw)\n (:predicates))",
                             Feedback("(define (problem old))", d, message))
    task = parse_chat([messages[0], *shots, *messages[1:]])
    assert (task.description, task.domain_text) == ("Three blocks.", "(define (domain bw)\n (:predicates))")
    assert task.feedback.previous == "(define (problem old))" and task.feedback.message == message
    assert [(x.kind, x.construct, x.message, x.line) for x in task.feedback.diagnostics] == \
        [(x.kind, x.construct, x.message, x.line) for x in d]
    assert parse_chat(messages[:2]).feedback is None
    for bad in (None, [], [{"role": "system", "content": "hi"}], [{"role": "user", "content": 3}]):
        with pytest.raises(RequestError):
            parse_chat(bad)


def test_service_answers_exactly_like_the_local_backend_first_and_on_repair(export, data):
    pair = load_pairs(data, "test")[0]
    domain_text = (data / "domain.pddl").read_text()
    local, served = LocalGenerator(export, samples=2), ChatService({"bw": LocalGenerator(export, samples=2)})
    first = local.generate(pair.description, domain_text, None)
    body = {"model": "bw", "messages": chat_messages(pair.description, domain_text, None)}
    reply = served.complete(body)
    assert reply["choices"][0]["message"]["content"] == first and reply["object"] == "chat.completion"
    report = OperationalChecker(data / "domain.pddl").check(first)
    feedback = build_feedback(first, report) or Feedback(first, (), "Try again.")
    body["messages"] = chat_messages(pair.description, domain_text, feedback)
    assert served.complete(body)["choices"][0]["message"]["content"] == \
        local.generate(pair.description, domain_text, feedback)
    for bad, status in (({"model": "nope", "messages": body["messages"]}, 404),
                        ({**body, "stream": True}, 400), ([], 400)):
        with pytest.raises(RequestError) as err:
            served.complete(bad)
        assert err.value.status == status


def test_http_models_errors_and_the_openai_client(server, export, data):
    with urllib.request.urlopen(server + "/models", timeout=30) as r:
        assert [m["id"] for m in json.loads(r.read())["data"]] == ["bw"]
    status, out = post(server + "/chat/completions", b"{not json")
    assert status == 400 and "not JSON" in out["error"]["message"]
    status, out = post(server + "/completions", {"model": "bw"})
    assert status == 404
    status, out = post(server + "/chat/completions", {"model": "gpt-9", "messages": []})
    assert status == 404 and out["error"]["code"] == "model_not_found"
    pair = load_pairs(data, "test")[1]
    domain_text = (data / "domain.pddl").read_text()
    client = OpenAIChatGenerator(server, "bw", api_key_env=None, timeout_s=60, retries=0)
    assert client.generate(pair.description, domain_text, None) == \
        LocalGenerator(export).generate(pair.description, domain_text, None)


def test_repair_loop_end_to_end_through_the_served_model(server, export, data, tmp_path):
    exe = shutil.which("plansuite-nl2pddl", path=str(Path(sys.executable).parent))
    cmd = [exe] if exe else [sys.executable, "-m", "plansuite.cli.nl2pddl"]
    run = tmp_path / "run"
    proc = subprocess.run([*cmd, "task=repair", f"data_dir={data}", "limit=2", "max_attempts=2",
                           f"out_dir={run}", "backend=openai", f"backend.base_url={server}",
                           "backend.model=bw", "backend.timeout_s=60"],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PLANSUITE_DEBUG": "", "OPENAI_API_KEY": "",
                               "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr
    logged = [json.loads(line) for line in (run / "attempts.jsonl").read_text().splitlines()]
    metrics = json.loads((run / "metrics.json").read_text())
    assert sum(metrics["stops"].values()) == 2 and metrics["overall"]
    # The served loop is the local loop: the same candidates, attempt by attempt.
    local = LocalGenerator(export)
    checker = OperationalChecker(data / "domain.pddl")
    for pair in load_pairs(data, "test")[:2]:
        texts = [a.text for a in repair(pair.description, local, checker, 2).attempts]
        assert [r["text"] for r in logged if r["item"] == pair.id] == texts


def test_cli_errors_are_one_line(tmp_path, server, export):
    cmd = serve_command()
    busy = server.rsplit(":", 1)[1].split("/")[0]  # the module's server holds this port
    for args, words in (([str(tmp_path / "missing"), "--port", "0"], "missing"),
                        (["a=x", "a=y", "--port", "0"], "repeated"),
                        ([str(export), "--port", busy], "cannot listen"),
                        ([str(export), "--max-body", "0", "--port", "0"], "--max-body")):
        proc = subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PLANSUITE_DEBUG": "", "OMP_NUM_THREADS": "1"})
        assert proc.returncode == 1 and proc.stderr.startswith("error:"), proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and words in proc.stderr, proc.stderr


def test_few_shot_turns_come_from_the_training_split_and_the_server_answers_the_task(server, export, data):
    train = load_pairs(data, "train")[:2]
    client = OpenAIChatGenerator(server, "bw", api_key_env=None, few_shot=2, examples_dir=data)
    assert client.examples == [(p.description, p.problem) for p in train]
    messages = chat_messages("Some task.", "(define (domain d))", None, client.examples)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert messages[2]["content"] == train[0].problem and parse_chat(messages).description == "Some task."
    pair = load_pairs(data, "test")[0]
    domain_text = (data / "domain.pddl").read_text()
    assert client.generate(pair.description, domain_text, None) == \
        LocalGenerator(export).generate(pair.description, domain_text, None)
    with pytest.raises(ConfigError, match="examples_dir"):
        OpenAIChatGenerator(server, "bw", few_shot=1)
    with pytest.raises(ConfigError, match="training pairs"):
        OpenAIChatGenerator(server, "bw", few_shot=10_000, examples_dir=data)


# ---- limits and bad requests: the HTTP layer around a stand-in model (loopback, bounded) ---------

class Slow:
    """A stand-in model that takes ``seconds`` per answer and records how many ran at once."""

    def __init__(self, seconds: float = 0.0):
        self.seconds, self.running, self.most = seconds, 0, 0
        self._count = threading.Lock()

    def generate(self, description, domain_text, feedback):
        with self._count:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(self.seconds)
        with self._count:
            self.running -= 1
        return f"(define (problem p)) ; {description}"


@contextlib.contextmanager
def stand_in(model, **limits):
    server = make_server(ChatService({"m": model}), port=0, limits=ServerLimits(**limits))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
        assert not thread.is_alive()  # the server stops by itself


def raw(port: int, head: bytes, body: bytes = b"", timeout: float = 10) -> tuple[int, dict, float]:
    """Send ``head`` (request line and headers) then ``body`` on one loopback connection; the reply's
    status, JSON body and how long it took. The server closes each of these connections."""
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(head + b"\r\n" + body)
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    status_line, _, rest = reply.partition(b"\r\n")
    return int(status_line.split()[1]), json.loads(rest.partition(b"\r\n\r\n")[2]), time.monotonic() - start


def request(body: bytes, *headers: bytes) -> bytes:
    names = b"".join(h.split(b":")[0].lower() for h in headers)
    length = b"" if b"content-length" in names or b"transfer-encoding" in names else \
        b"Content-Length: %d\r\n" % len(body)
    return b"POST /v1/chat/completions HTTP/1.1\r\nHost: test\r\nConnection: close\r\n" + length + \
        b"".join(h + b"\r\n" for h in headers)


USER = [{"role": "user", "content": "a on b"}]
BAD = {  # name: (body, status, words in the error)
    "model is a list": ({"model": ["m"], "messages": USER}, 400, "model: a string"),
    "content part not a string": ({"model": "m", "messages": [
        {"role": "user", "content": [{"type": "text", "text": 5}]}]}, 400, "messages.0.content"),
    "content part a bare string": ({"model": "m", "messages": [{"role": "user", "content": ["x"]}]},
                                   400, "messages.0.content"),
    "role not a string": ({"model": "m", "messages": [{"role": 1, "content": "x"}]}, 400, "messages.0.role"),
    "stream not a boolean": ({"model": "m", "messages": USER, "stream": "yes"}, 400, "stream"),
    "deeply nested JSON": (b"[" * 50_000 + b"]" * 50_000, 400, "nested"),
    "nested in an extra field": (b'{"model": "m", "messages": [{"role": "user", "content": "x", "x": '
                                 + b"[" * 40 + b"]" * 40 + b"}]}", 400, "nested"),
    "not JSON": (b"{not json", 400, "not JSON"),
    "not UTF-8": (b'{"model": "\xff"}', 400, "not JSON"),
    "empty body": (b"", 400, "missing body"),
}


@pytest.mark.parametrize("name", BAD)
def test_a_bad_request_is_a_4xx_json_error_never_a_500(name):
    body, status, words = BAD[name]
    body = body if isinstance(body, bytes) else json.dumps(body).encode()
    model = Slow()
    with stand_in(model, max_body=200_000) as port:  # the deepest body above is 100 kB
        got, out, _ = raw(port, request(body), body)
        assert (got, out["error"]["type"]) == (status, "invalid_request_error") and words in out["error"]["message"]
        assert raw(port, request(json.dumps({"model": "m", "messages": USER}).encode()),
                   json.dumps({"model": "m", "messages": USER}).encode())[0] == 200  # still serving
    assert model.most <= 1


def test_malformed_http_and_oversize_streams_are_refused_before_reading_on():
    with stand_in(Slow(), max_body=1000) as port:
        status, out, _ = raw(port, request(b"{}", b"Content-Length: abc"), b"{}")
        assert status == 400 and "Content-Length" in out["error"]["message"]
        # refused on its declared length, nothing read (nor sent here: unread bytes would reset the reply)
        for length in (b"1001", b"99999999999"):
            status, out, _ = raw(port, request(b"", b"Content-Length: " + length))
            assert status == 413 and out["error"]["code"] == "request_too_large"
        chunked = b"7d0\r\n" + b"x" * 2000 + b"\r\n0\r\n\r\n"  # no Content-Length: counted as it streams
        status, out, _ = raw(port, request(chunked, b"Transfer-Encoding: chunked"), chunked)
        assert status == 413
        status, out, _ = raw(port, b"GET /v1/nowhere HTTP/1.1\r\nHost: t\r\nConnection: close\r\n")
        assert status == 404 and out["error"]["code"] == "not_found"


def test_a_short_body_behind_a_larger_content_length_times_out_and_blocks_no_one():
    body = json.dumps({"model": "m", "messages": USER}).encode()
    with stand_in(Slow(), read_timeout=0.5) as port:
        stalled = {}
        thread = threading.Thread(target=lambda: stalled.update(
            zip(("status", "out", "took"), raw(port, request(b"", b"Content-Length: 500"), b"{"), strict=True)))
        thread.start()
        time.sleep(0.1)  # the stalled body is being waited for: others are still answered
        assert raw(port, request(body), body)[0] == 200
        thread.join(timeout=10)
        assert stalled["status"] == 408 and stalled["out"]["error"]["code"] == "request_timeout"
        assert 0.4 < stalled["took"] < 5  # the read timeout, not the client's socket timeout


def test_generation_is_serialised_and_the_queue_is_bounded():
    model = Slow(seconds=0.4)
    body = json.dumps({"model": "m", "messages": USER}).encode()
    with stand_in(model, max_waiting=2) as port:
        replies = []
        threads = [threading.Thread(target=lambda: replies.append(raw(port, request(body), body)[:2]))
                   for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
    statuses = sorted(status for status, _ in replies)
    assert len(statuses) == 6 and set(statuses) <= {200, 503} and statuses.count(200) >= 3
    assert all(out["error"]["code"] == "server_busy" for status, out in replies if status == 503)
    assert model.most == 1  # never two generations at once
