"""The critic check: does a candidate problem say what the description says?

A critic is anything with ``judge(description, problem_text) -> CriticVerdict``. The learned
critic (:class:`plansuite.nl2pddl.models.learned.LearnedCritic`, ``critic=learned``) is a sequence
classifier over :func:`critic_input`, trained on a dataset's corruptions
(``plansuite-train model=critic``): :mod:`plansuite.nl2pddl.data.corrupt` for the classical domains
(labels :data:`CRITIC_LABELS`), :mod:`plansuite.nl2pddl.data.scenes21` for the PDDL 2.1 ones (value,
direction, fluent, duration). The label set is the dataset's (:func:`critic_labels`) and travels
with the export;
:func:`critic_report` scores any critic's labels (``plansuite-nl2pddl task=critic``).
There is deliberately no rule-based default: without a configured critic the check is not run
and the reports say so.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from plansuite.pddl.checks import Diagnostic
from plansuite.report.tables import markdown

CRITIC_LABELS = ("match", "object", "init", "goal")  # the classical datasets' class ids 0..3
# Every mismatch kind a dataset can label, in class-id order (classical, then PDDL 2.1 kinds).
MISMATCH_KINDS = ("object", "init", "goal", "value", "direction", "fluent", "duration")
MISMATCH_HINTS = {
    "object": "the objects do not match the description (missing, extra or wrongly typed objects)",
    "init": "the initial state does not match the description",
    "goal": "the goal does not match the description",
    "value": "an initial numeric value does not match the description",
    "direction": "the metric's direction (minimize/maximize) does not match the description",
    "fluent": "a numeric fluent the description gives a value is missing from :init",
    "duration": "a duration-related value does not match the description",
    None: "the problem does not match the description",
}
# The section a rejection points at, so that a repair rewrites from there.
KIND_SECTION = {"object": "(:objects ...)", "init": "(:init ...)", "goal": "(:goal ...)",
                "value": "(:init ...)", "fluent": "(:init ...)", "duration": "(:init ...)",
                "direction": "(:metric ...)"}
SECTION_OF_KIND = {"object": "objects", "init": "init", "goal": "goal"}


def critic_labels(labels: Iterable[str]) -> tuple[str, ...]:
    """The classifier's labels for a dataset with these example labels: ``match`` first, then
    the mismatch kinds present, in :data:`MISMATCH_KINDS` order (classical data: exactly
    :data:`CRITIC_LABELS`). Anything else (``mismatch``, a critic's unnamed rejection) goes last.

    >>> critic_labels(["goal", "match", "init", "object"]) == CRITIC_LABELS
    True
    >>> critic_labels(["duration", "fluent", "match", "direction"])
    ('match', 'direction', 'fluent', 'duration')
    """
    present = set(labels)
    known = ("match", *MISMATCH_KINDS)
    return (*(k for k in known if k in present), *sorted(present - set(known)))


@dataclass(frozen=True)
class CriticVerdict:
    accepted: bool | None  # None: no verdict (a chat critic's reply without one; blocks nothing)
    kind: str | None = None  # suspected mismatch, one of MISMATCH_KINDS (None: unknown or accepted)
    score: float | None = None  # the critic's probability that the problem matches
    message: str = ""
    quote: str | None = None  # what it doubts, e.g. "(on b1 b2)" (None: the section as a whole)
    line: int | None = None  # the line of the problem text where ``quote`` is
    related: tuple[str, ...] = ()  # objects the description relates and no fact does (mention check)


class Critic(Protocol):
    def judge(self, description: str, problem_text: str) -> CriticVerdict:
        ...


def critic_input(description: str, problem_text: str) -> str:
    """The classifier's input text: description, then the problem on one line.

    >>> critic_input("Two blocks.", "(define (problem p)\\n  (:objects a b))")
    'DESCRIPTION: Two blocks.\\nPROBLEM: (define (problem p) (:objects a b))'
    """
    return f"DESCRIPTION: {' '.join(description.split())}\nPROBLEM: {' '.join(problem_text.split())}"


def verdict_label(verdict: CriticVerdict) -> str:
    """The label a verdict amounts to: ``match`` if accepted, else its kind (``mismatch`` if none;
    ``no-verdict`` when the critic gave none).

    >>> verdict_label(CriticVerdict(True)), verdict_label(CriticVerdict(False, "goal")), verdict_label(CriticVerdict(False))
    ('match', 'goal', 'mismatch')
    """
    if verdict.accepted is None:
        return "no-verdict"
    return CRITIC_LABELS[0] if verdict.accepted else (verdict.kind or "mismatch")


def critic_report(truth: list[str], predicted: list[str],
                  labels: Iterable[str] = ()) -> dict:
    """Accuracy of critic predictions, overall and per true kind; ``labels``: the classifier's
    label set (rows and columns are ordered as :func:`critic_labels`).

    ``accuracy``: the exact label; ``detection``: match/mismatch only (a corrupted problem
    rejected, whatever kind was named; a matching one accepted). Per kind: ``n``, ``accuracy``
    (the kind named exactly: the kind's recall), ``precision`` (of the predictions naming the
    kind, the share that were that kind; None if never named) and ``detection``.
    ``confusion[true][predicted]`` counts.

    >>> r = critic_report(["match", "goal", "goal", "init"], ["match", "goal", "init", "match"])
    >>> r["accuracy"], r["detection"], r["per_kind"]["goal"], r["confusion"]["init"]["match"]
    (0.5, 0.75, {'n': 2, 'accuracy': 0.5, 'detection': 1.0, 'precision': 1.0}, 1)
    >>> r["per_kind"]["match"]["precision"], r["per_kind"]["init"]["precision"]
    (0.5, 0.0)
    """
    if len(truth) != len(predicted) or not truth:
        raise ValueError("critic_report: need as many predictions as labels, at least one")
    match = CRITIC_LABELS[0]
    # the classifier's labels (confusion columns even when never predicted) plus any seen
    labels = critic_labels([*labels, *truth, *predicted])

    def rates(pairs: list[tuple[str, str]]) -> dict:
        exact = sum(t == p for t, p in pairs) / len(pairs)
        detected = sum((t == match) == (p == match) for t, p in pairs) / len(pairs)
        return {"n": len(pairs), "accuracy": round(exact, 6), "detection": round(detected, 6)}

    pairs = list(zip(truth, predicted, strict=True))
    overall = rates(pairs)
    return {"n": overall["n"], "accuracy": overall["accuracy"], "detection": overall["detection"],
            "per_kind": {k: {**rates([x for x in pairs if x[0] == k]),
                             "precision": _precision(pairs, k)} for k in labels
                         if any(t == k for t in truth)},
            "confusion": {t: {p: sum(1 for x in pairs if x == (t, p)) for p in labels}
                          for t in labels if t in truth}}


def _precision(pairs: list[tuple[str, str]], kind: str) -> float | None:
    named = [t for t, p in pairs if p == kind]
    return round(sum(t == kind for t in named) / len(named), 6) if named else None


def report_table(report: dict) -> str:
    """Markdown table of a :func:`critic_report`: one row per true kind, then all.

    >>> print(report_table(critic_report(["match", "goal"], ["match", "init"])), end="")
    | true kind | n | recall (kind named) | precision (kind named) | detection (match vs. mismatch) |
    |---|---|---|---|---|
    | match | 1 | 1.000 | 1.000 | 1.000 |
    | goal | 1 | 0.000 | – | 1.000 |
    | all | 2 | 0.500 | – | 1.000 |
    """
    def precision(r: dict) -> str:
        value = r.get("precision")  # none for the "all" row
        return "–" if value is None else f"{value:.3f}"

    header = ["true kind", "n", "recall (kind named)", "precision (kind named)",
              "detection (match vs. mismatch)"]
    rows = [[k, str(r["n"]), f"{r['accuracy']:.3f}", precision(r), f"{r['detection']:.3f}"]
            for k, r in [*report["per_kind"].items(), ("all", report)]]
    return markdown(header, rows) + "\n"


def critic_diagnostic(verdict: CriticVerdict, source: str) -> Diagnostic:
    """A rejected verdict as a located diagnostic (kind ``critic-<mismatch>``)."""
    kind = f"critic-{verdict.kind}" if verdict.kind else "critic"
    construct = KIND_SECTION.get(verdict.kind or "", "problem")
    if verdict.quote and verdict.kind in SECTION_OF_KIND:  # e.g. "init (on b1 b2)"
        construct = f"{SECTION_OF_KIND[verdict.kind]} {verdict.quote}"
    elif verdict.related:  # e.g. "relation e h": a rewrite can seed a fact over them
        construct = "relation " + " ".join(verdict.related)
    message = verdict.message or MISMATCH_HINTS.get(verdict.kind, MISMATCH_HINTS[None])
    if verdict.score is not None:
        message += f" (critic match probability {verdict.score:.2f})"
    return Diagnostic(kind, source, construct, message, verdict.line)
