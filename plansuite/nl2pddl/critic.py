"""The critic check: does a candidate problem say what the description says?

A critic is anything with ``judge(description, problem_text) -> CriticVerdict``. The learned
critic (phase 2) is a sequence classifier over :func:`critic_input` with the labels
:data:`CRITIC_LABELS`, trained on the corruptions of :mod:`plansuite.nl2pddl.corrupt`.
There is deliberately no rule-based default: without a configured critic the check is not run
and the reports say so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from plansuite.pddl.checks import Diagnostic

CRITIC_LABELS = ("match", "object", "init", "goal")  # class ids 0..3 of the classifier
MISMATCH_HINTS = {
    "object": "the objects do not match the description (missing, extra or wrongly typed objects)",
    "init": "the initial state does not match the description",
    "goal": "the goal does not match the description",
    None: "the problem does not match the description",
}


@dataclass(frozen=True)
class CriticVerdict:
    accepted: bool
    kind: str | None = None  # suspected mismatch: object | init | goal (None: unknown or accepted)
    score: float | None = None  # the critic's probability that the problem matches
    message: str = ""


class Critic(Protocol):
    def judge(self, description: str, problem_text: str) -> CriticVerdict:
        ...


def critic_input(description: str, problem_text: str) -> str:
    """The classifier's input text: description, then the problem on one line.

    >>> critic_input("Two blocks.", "(define (problem p)\\n  (:objects a b))")
    'DESCRIPTION: Two blocks.\\nPROBLEM: (define (problem p) (:objects a b))'
    """
    return f"DESCRIPTION: {' '.join(description.split())}\nPROBLEM: {' '.join(problem_text.split())}"


def critic_diagnostic(verdict: CriticVerdict, source: str) -> Diagnostic:
    """A rejected verdict as a located diagnostic (kind ``critic-<mismatch>``)."""
    kind = f"critic-{verdict.kind}" if verdict.kind else "critic"
    construct = {"object": "(:objects ...)", "init": "(:init ...)", "goal": "(:goal ...)"}.get(
        verdict.kind or "", "problem")
    message = verdict.message or MISMATCH_HINTS.get(verdict.kind, MISMATCH_HINTS[None])
    if verdict.score is not None:
        message += f" (critic match probability {verdict.score:.2f})"
    return Diagnostic(kind, source, construct, message)
