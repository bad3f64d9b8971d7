"""A chat model as the critic (``critic=llm``): the same OpenAI-compatible endpoint that generates
can judge, so a domain nobody trained a critic for still gets the critic check.

Each question shows the domain, the description and the candidate problem, and asks for one
line ``match`` or ``mismatch: <objects|init|goal>`` then a reason; the system message shows a few
solved questions first (:data:`SHOTS`, in a small domain of their own: the answer's form, not the
user's domain). They sit in the system message, not in turns of their own, so that the one user
turn is the real question: a server that reads the first user turn as its task (``plansuite-serve``
reads it as a description to write a problem for) reads this one.
:func:`parse_verdict` reads the answer; an answer without that line (prose, a PDDL problem from a
server that only generates) is *no verdict*: ``CriticVerdict(accepted=None)``, which the checks
record (``critic_accepted: null`` and a ``critic-no-verdict`` diagnostic) and which blocks nothing.
Only a failure of the endpoint itself raises (:class:`~plansuite.nl2pddl.decoding.generators.BackendError`).
"""

from __future__ import annotations

import re
from pathlib import Path

from plansuite.errors import ConfigError
from plansuite.nl2pddl.decoding.generators import ChatClient
from plansuite.nl2pddl.judging.critic import CriticVerdict
from plansuite.pddl.parse import read_text

SYSTEM_PROMPT = ("You check whether a PDDL problem says exactly what a natural-language task "
                 "description says: the same objects, the same initial state, the same goal. "
                 "Answer with one line, `match` or `mismatch: objects`, `mismatch: init` or "
                 "`mismatch: goal` (the first section that differs), then one line giving the reason.")
SHOT_DOMAIN = """(define (domain lamps)
  (:requirements :strips :typing)
  (:types lamp room)
  (:predicates (in ?l - lamp ?r - room) (lit ?l - lamp))
  (:action switch-on :parameters (?l - lamp) :precondition (not (lit ?l)) :effect (lit ?l)))"""
SHOT_DESCRIPTION = "Lamp l1 is in the hall and lamp l2 in the kitchen; both are off. Switch l2 on."
_SHOT_PROBLEM = """(define (problem p)
  (:domain lamps)
  (:objects l1 l2 - lamp hall kitchen - room)
  (:init (in l1 hall) (in l2 kitchen))
  (:goal (and (lit {lamp}))))"""
SHOTS = (  # (description, problem, answer)
    (SHOT_DESCRIPTION, _SHOT_PROBLEM.format(lamp="l2"),
     "match\nEvery object, initial fact and goal fact is the one the description states."),
    (SHOT_DESCRIPTION, _SHOT_PROBLEM.format(lamp="l1"),
     "mismatch: goal\nThe description asks for l2 to be lit; the goal lights l1."),
)
_VERDICT = re.compile(r"^[\s*`>#-]*(?:verdict|answer)?\s*:?\s*[*`]*\s*(match|mismatch)\b[*`]*"
                      r"(?:\s*[:(\-–—,]?\s*(objects?|init(?:ial state)?|goals?)\b)?", re.IGNORECASE)
KINDS = {"object": "object", "objects": "object", "init": "init", "initial state": "init", "goal": "goal",
         "goals": "goal"}


def question(domain_text: str, description: str, problem_text: str) -> str:
    """One user turn: the domain, the description and the problem in fences."""
    return (f"Domain:\n```pddl\n{domain_text.strip()}\n```\n\nDescription:\n{description.strip()}\n\n"
            f"Problem:\n```pddl\n{problem_text.strip()}\n```\n\nDoes the problem match the description?")


def critic_messages(domain_text: str, description: str, problem_text: str) -> list[dict]:
    """The system prompt with the solved :data:`SHOTS`, then the question.

    >>> [m["role"] for m in critic_messages("(define (domain d))", "A.", "(define (problem p))")]
    ['system', 'user']
    """
    shots = "\n\n".join(f"Example {i}.\n{question(SHOT_DOMAIN, d, p)}\nAnswer:\n{a}"
                         for i, (d, p, a) in enumerate(SHOTS, start=1))
    return [{"role": "system", "content": f"{SYSTEM_PROMPT}\n\n{shots}"},
            {"role": "user", "content": question(domain_text, description, problem_text)}]


def parse_verdict(reply: str) -> CriticVerdict:
    """The verdict in a reply: the first line that starts with ``match`` or ``mismatch`` (markdown
    and a ``Verdict:`` label tolerated); the next non-empty line, or the rest of that one, is the
    reason. No such line: no verdict (``accepted=None``), the reply quoted in the message.

    >>> parse_verdict("mismatch: goal\\nThe goal lights l1.")
    CriticVerdict(accepted=False, kind='goal', score=None, message='The goal lights l1.', quote=None, line=None, related=())
    >>> v = parse_verdict("**Verdict:** Match — all facts agree")
    >>> v.accepted, v.kind, v.message
    (True, None, 'all facts agree')
    >>> parse_verdict("Mismatch (initial state): b1 is not on b2.").kind, parse_verdict("mismatch: goals").kind
    ('init', 'goal')
    >>> parse_verdict("It does not match the description.").accepted is None  # no verdict line
    True
    >>> parse_verdict("(define (problem p) (:domain d))").message
    "no verdict in the critic's reply: '(define (problem p) (:domain d))'"
    """
    lines = [line.strip() for line in reply.splitlines() if line.strip()]
    for i, line in enumerate(lines):
        m = _VERDICT.match(line)
        if m:
            rest = line[m.end():].strip(" :.-–—*`)")
            reason = rest or next(iter(lines[i + 1:i + 2]), "")
            reason = re.sub(r"^(reason|because)\s*:\s*", "", reason, flags=re.IGNORECASE)[:300]
            if m.group(1).lower() == "match":
                return CriticVerdict(True, message=reason)
            return CriticVerdict(False, KINDS.get((m.group(2) or "").lower()), message=reason)
    shown = " ".join(reply.split())
    return CriticVerdict(None, message=f"no verdict in the critic's reply: {shown[:160]!r}")


class ChatCritic:
    """The critic protocol (``judge(description, problem_text)``) over a chat endpoint."""

    def __init__(self, base_url: str, model: str | None, domain_file: str | Path | None,
                 api_key_env: str | None = "OPENAI_API_KEY", max_tokens: int = 256,
                 timeout_s: float = 120.0, retries: int = 2):
        if not model:
            raise ConfigError("critic.model: required (the served model's name; with backend=openai "
                              "it defaults to backend.model)")
        if not domain_file:
            raise ConfigError("critic.domain_file: required (the domain the problems are written for)")
        self.domain_text = read_text(Path(domain_file), "domain")
        self.chat = ChatClient(base_url, model, api_key_env, 0.0, max_tokens, timeout_s, retries)

    def judge(self, description: str, problem_text: str) -> CriticVerdict:
        return parse_verdict(self.chat.complete(critic_messages(self.domain_text, description, problem_text)))
