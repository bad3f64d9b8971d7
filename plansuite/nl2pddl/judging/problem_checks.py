"""Online operational checks of a candidate problem, each returning located diagnostics.

1. parse — the ``pddl`` parser (kinds ``parse``, ``unsupported``, ``requirement``);
2. domain consistency — :func:`plansuite.pddl.checks.check_problem` (``undeclared-object``,
   ``undeclared-predicate``, ``arity``, ``type``, ``undeclared-type``, ``requirement``,
   ``domain-name``, ``duplicate``);
3. solvability with the planner the domain needs (Fast Downward, ENHSP for numeric fluents, TAMER
   for durative actions: :mod:`plansuite.pddl.planners`) and validity of its plan with VAL (``unsolvable``,
   ``planner-timeout``, ``planner-error``, ``plan-invalid``); a plan found with a caveat (TAMER
   planned without a ``maximize (total-time)`` metric it cannot read) adds a ``planner-note``
   diagnostic that does not fail the check;
4. the critic, when one is configured (``critic-object``, ``critic-init``, ``critic-goal``,
   ``critic``; ``critic-no-verdict`` when it gave none: ``critic_accepted`` stays ``None``).

A candidate is operationally successful when every check that ran passed and all of 1–3 ran;
the critic is part of it when configured (``critic_accepted`` is ``None`` when it is not).
These checks never look at the reference problem.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from plansuite.errors import PDDLError
from plansuite.nl2pddl.judging.critic import Critic, CriticVerdict, critic_diagnostic
from plansuite.pddl import fast_downward, planners, val
from plansuite.pddl.checks import Diagnostic, check_problem
from plansuite.pddl.parse import load_domain, parse_problem, read_text

Planner = Callable[[Path, Path], fast_downward.PlanResult]
Validator = Callable[[Path, Path, list[str]], val.ValResult]
PLANNER_NAMES = {"fast-downward": "Fast Downward", "enhsp": "ENHSP", "tamer": "TAMER"}
FLAGS = ("parsed", "domain_consistent", "solvable", "plan_valid", "critic_accepted")


@dataclass(frozen=True)
class CheckReport:
    parsed: bool
    domain_consistent: bool | None  # None: not run (an earlier check failed)
    solvable: bool | None
    plan_valid: bool | None
    critic_accepted: bool | None  # None: no critic configured, or the text did not parse
    diagnostics: tuple[Diagnostic, ...] = ()
    plan: tuple[str, ...] | None = None

    @property
    def success(self) -> bool:
        return (self.parsed and bool(self.domain_consistent) and bool(self.solvable)
                and bool(self.plan_valid) and self.critic_accepted is not False)

    def flags(self) -> dict[str, bool | None]:
        return {f: getattr(self, f) for f in FLAGS} | {"success": self.success}

    def as_dict(self) -> dict:
        return {**self.flags(), "diagnostics": [d.as_dict() for d in self.diagnostics],
                "plan": list(self.plan) if self.plan is not None else None}


def parse_diagnostic(exc: PDDLError) -> Diagnostic:
    """A parser error as a diagnostic; the line comes from the ``(line N, column M)`` note."""
    m = re.search(r"\(line (\d+)", exc.construct)
    return Diagnostic(exc.kind if exc.kind != "semantic" else "parse", exc.source,
                      re.sub(r"\s*\(line \d+, column \d+\)", "", exc.construct), exc.problem,
                      int(m.group(1)) if m else None)


def section_line(text: str, construct: str) -> int | None:
    """1-based line where a ``(:section ...)`` construct starts in ``text``.

    >>> section_line("(define (problem p)\\n  (:init (a))\\n  (:goal (and)))", "(:goal ...)")
    3
    """
    m = re.match(r"\((:[a-z-]+)", construct)
    found = re.search(r"\(\s*" + re.escape(m.group(1)) + r"\b", text, re.IGNORECASE) if m else None
    return text.count("\n", 0, found.start()) + 1 if found else None


class OperationalChecker:
    """Runs the checks against one domain file; planner, validator and critic can be swapped."""

    def __init__(self, domain_file: str | Path, *, critic: Critic | None = None,
                 mode: str = "satisficing", time_limit: float = 20.0,
                 planner: Planner | None = None, validator: Validator | None = None,
                 source: str = "candidate.pddl"):
        self.domain_file = Path(domain_file)
        self.domain_text = read_text(self.domain_file, "domain")
        self.domain = load_domain(self.domain_file)
        self.critic, self.source = critic, source
        if planner is None:  # a bad search setting is one line now, not an empty check per candidate
            planners.check_search(self.domain, mode, time_limit)
        self.planner = planner or (lambda d, p: planners.solve(d, p, mode, time_limit,
                                                               domain=self.domain))
        self.validator = validator or val.validate
        self._verdicts: dict[tuple[str, str], CriticVerdict] = {}

    def judge(self, description: str, text: str) -> CriticVerdict:
        """The critic's verdict on ``text`` (requires a critic), remembered for the next
        :meth:`check` of the same text: a repair that orders its rewrites by the critic scores
        each one first."""
        assert self.critic is not None
        key = (description, text)
        if key not in self._verdicts:
            if len(self._verdicts) >= 256:
                self._verdicts.clear()
            self._verdicts[key] = self.critic.judge(description, text)
        return self._verdicts[key]

    def check(self, text: str, description: str | None = None) -> CheckReport:
        try:
            problem = parse_problem(text, self.domain, source=self.source, check=False)
        except PDDLError as exc:
            return CheckReport(False, None, None, None, None, (parse_diagnostic(exc),))
        diagnostics = list(check_problem(problem, self.domain, text))
        consistent = not diagnostics
        solvable = valid = None
        plan = None
        if consistent:
            solvable, valid, plan, found = self._solve(text)
            diagnostics += [replace(d, line=section_line(text, d.construct)) for d in found]
        accepted = None
        if self.critic is not None and description is not None:
            verdict = self.judge(description, text)
            accepted = verdict.accepted
            if accepted is None:  # no verdict (a chat critic's unreadable reply): recorded, blocks nothing
                diagnostics.append(Diagnostic("critic-no-verdict", self.source, "critic", verdict.message))
            elif not accepted:
                d = critic_diagnostic(verdict, self.source)
                diagnostics.append(replace(d, line=section_line(text, d.construct)))
        return CheckReport(True, consistent, solvable, valid, accepted, tuple(diagnostics), plan)

    def _solve(self, text: str):
        with tempfile.TemporaryDirectory(prefix="plansuite-nl2pddl-") as tmp:
            problem_file = Path(tmp) / self.source
            problem_file.write_text(text)
            result = self.planner(self.domain_file, problem_file)
            if not result.solved:
                kind = {"unsolvable": "unsolvable", "timeout": "planner-timeout"}.get(result.status,
                                                                                      "planner-error")
                name = PLANNER_NAMES[planners.planner_for(self.domain)]
                message = {"unsolvable": f"{name} proved that the goal cannot be reached from the "
                                         "initial state (is :init complete and :goal consistent?)"
                           }.get(kind, result.message)
                # An error of the planner says nothing about the candidate's goal: blame no section.
                construct = "planner" if kind == "planner-error" else "(:goal ...)"
                return (False if kind == "unsolvable" else None), None, None, [
                    Diagnostic(kind, self.source, construct, message)]
            verdict = self.validator(self.domain_file, problem_file, list(result.plan))
        plan = tuple(result.plan)
        # the planner's caveat on a plan it found (e.g. a metric it planned without) is reported,
        # not failed: the verdict itself is sound
        notes = [Diagnostic("planner-note", self.source, "(:metric ...)" if "metric" in result.message
                            else "planner", f"{PLANNER_NAMES[planners.planner_for(self.domain)]} "
                            f"{result.message}")] if result.message else []
        if verdict.valid:
            return True, True, plan, notes
        return True, False, plan, [*notes, Diagnostic("plan-invalid", self.source, "plan",
                                                      f"VAL rejects the planner's plan: {verdict.message}")]
