"""The repair loop: generate, check, feed the diagnostics back, until a stop rule fires.

Stop rules, checked after every attempt in this order:

- ``success``: the candidate passed the operational checks;
- ``unchanged``: the candidate equals the previous one (up to whitespace) — the backend ignored
  the feedback, so asking again would loop;
- ``no-feedback``: no diagnostic is actionable (e.g. only a planner timeout);
- ``max-attempts``: the attempt budget is spent.

With ``check_rewrites`` a backend that offers several rewrites of a rejected candidate
(``rewrites(description, domain_text, feedback) -> list[str]``, e.g. the local generator's
resampled continuations) has each of them checked; the attempt keeps the first that passes, else
the one that gets furthest through the checks (:func:`check_rank`). One attempt then costs up to
that many checks, and the ground truth stays where it was: the checks, never the backend.
``rewrite_order="critic"`` checks them in the order the critic prefers (its score, highest first),
so the rewrite kept is the passing one the critic believes most, not the first one sampled: the
generator + verifier idea, with the critic as verifier. ``"sampled"`` keeps the backend's order.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from plansuite.errors import ConfigError
from plansuite.nl2pddl.decoding.generators import Feedback, ProblemGenerator
from plansuite.nl2pddl.judging.problem_checks import FLAGS, CheckReport, OperationalChecker
from plansuite.pddl.checks import Diagnostic

STOP_RULES = ("success", "unchanged", "no-feedback", "max-attempts")
REWRITE_ORDERS = ("sampled", "critic")
# nothing in the text to fix (a note accompanies a plan that was found and validated; a critic
# that gave no verdict doubted nothing)
NOT_ACTIONABLE = frozenset({"planner-timeout", "planner-error", "planner-note", "critic-no-verdict"})


@dataclass(frozen=True)
class RepairRound:
    """One round of the repair loop: the generated text, its checks, the feedback it answered."""

    number: int  # 1-based
    text: str
    report: CheckReport
    feedback: str | None  # the feedback message this attempt answered (None for the first)
    seconds: float
    checks: int = 1  # candidates checked for this attempt (check_rewrites: up to the rewrites)

    def as_dict(self) -> dict:
        return {"attempt": self.number, "text": self.text, "feedback": self.feedback,
                "seconds": round(self.seconds, 3), "checks": self.checks, **self.report.as_dict()}


@dataclass(frozen=True)
class RepairResult:
    attempts: tuple[RepairRound, ...]
    stop: str  # one of STOP_RULES

    @property
    def final(self) -> RepairRound:
        return self.attempts[-1]


def describe_diagnostic(d: Diagnostic) -> str:
    """One feedback line.

    >>> describe_diagnostic(Diagnostic("arity", "p.pddl", "init (on a)", "'on' takes 2 argument(s), got 1", 4))
    "- line 4, init (on a): 'on' takes 2 argument(s), got 1 [arity]"
    """
    where = f"line {d.line}, {d.construct}" if d.line else d.construct
    return f"- {where}: {d.message} [{d.kind}]"


def build_feedback(text: str, report: CheckReport) -> Feedback | None:
    """Feedback from the actionable diagnostics of a failed candidate; ``None`` if there are none."""
    useful = tuple(d for d in report.diagnostics if d.kind not in NOT_ACTIONABLE)
    if not useful:
        return None
    lines = "\n".join(describe_diagnostic(d) for d in useful)
    message = (f"Your problem has {len(useful)} issue(s):\n{lines}\n"
               "Fix them and reply with the complete corrected problem.pddl only.")
    return Feedback(text, useful, message)


def _same(a: str, b: str) -> bool:
    return a.split() == b.split()


def check_rank(report: CheckReport) -> tuple[bool, int, int]:
    """How far a candidate got: success first, then the checks it passed, then fewer diagnostics.

    >>> passed = CheckReport(True, True, False, None, True)
    >>> failed = CheckReport(True, True, False, None, False, (Diagnostic("critic-goal", "c", "goal", ""),))
    >>> check_rank(passed) > check_rank(failed)
    True
    """
    passed = sum(bool(getattr(report, f)) for f in FLAGS)
    return report.success, passed, -len(report.diagnostics)


def critic_order(texts: list[str], scores: list[float | None]) -> list[str]:
    """``texts`` by descending critic score (unscored last; ties keep their order).

    >>> critic_order(["a", "b", "c", "d"], [0.2, None, 0.9, 0.2])
    ['c', 'a', 'd', 'b']
    """
    ranked = sorted(range(len(texts)), key=lambda i: -scores[i] if scores[i] is not None else float("inf"))
    return [texts[i] for i in ranked]


def _best_rewrite(description: str, generator, checker: OperationalChecker, feedback: Feedback,
                  order: str = "critic") -> tuple[str, CheckReport | None, int]:
    """The checked rewrite to keep and how many were checked (the previous text, unchecked, when
    the backend offers none)."""
    best: tuple[str, CheckReport] | None = None
    checks = 0
    texts = list(generator.rewrites(description, checker.domain_text, feedback))
    if order == "critic" and checker.critic is not None and len(texts) > 1:
        texts = critic_order(texts, [checker.judge(description, t).score for t in texts])
    for text in texts:
        report = checker.check(text, description)
        checks += 1
        if best is None or check_rank(report) > check_rank(best[1]):
            best = (text, report)
        if report.success:
            break
    return (*best, checks) if best is not None else (feedback.previous, None, 0)


def check_max_attempts(max_attempts) -> None:
    """Refuse an attempt budget the loop cannot spend, before any model loads.

    >>> check_max_attempts(0)
    Traceback (most recent call last):
    plansuite.errors.ConfigError: max_attempts=0: must be an integer >= 1
    """
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
        raise ConfigError(f"max_attempts={max_attempts!r}: must be an integer >= 1")


def check_rewrite_order(rewrite_order: str) -> None:
    if rewrite_order not in REWRITE_ORDERS:
        raise ConfigError(f"rewrite_order={rewrite_order!r}: choose {' or '.join(REWRITE_ORDERS)}")


def repair(description: str, generator: ProblemGenerator, checker: OperationalChecker,
           max_attempts: int = 4, on_attempt: Callable[[RepairRound, str | None], None] | None = None,
           check_rewrites: bool = False, rewrite_order: str = "critic") -> RepairResult:
    """Run the loop for one description; ``on_attempt(attempt, stop_or_None)`` sees each attempt."""
    check_max_attempts(max_attempts)
    check_rewrite_order(rewrite_order)
    if check_rewrites and not callable(getattr(generator, "rewrites", None)):
        raise ConfigError(f"check_rewrites=true: backend {type(generator).__name__} offers no "
                          "rewrites(description, domain_text, feedback)")
    attempts: list[RepairRound] = []
    feedback: Feedback | None = None
    while True:
        start = time.perf_counter()
        report: CheckReport | None = None
        checks = 0
        if check_rewrites and feedback is not None:
            text, report, checks = _best_rewrite(description, generator, checker, feedback, rewrite_order)
        else:
            text = generator.generate(description, checker.domain_text, feedback)
        previous = attempts[-1] if attempts else None
        if previous is not None and _same(text, previous.text):
            report = previous.report  # same text, same verdict: no need to run the checks again
        elif report is None:
            report, checks = checker.check(text, description), 1
        attempt = RepairRound(len(attempts) + 1, text, report, feedback.message if feedback else None,
                          time.perf_counter() - start, checks)
        attempts.append(attempt)
        feedback = None if report.success else build_feedback(text, report)
        if report.success:
            stop = "success"
        elif previous is not None and _same(text, previous.text):
            stop = "unchanged"
        elif feedback is None:
            stop = "no-feedback"
        elif len(attempts) >= max_attempts:
            stop = "max-attempts"
        else:
            stop = None
        if on_attempt is not None:
            on_attempt(attempt, stop)
        if stop is not None:
            return RepairResult(tuple(attempts), stop)
