"""The suite's error types: every user-facing failure is one line naming the file and the problem."""

from __future__ import annotations


class PlansuiteError(Exception):
    """Base class: its ``str`` is the one-line message shown to the user (no traceback)."""


class ConfigError(PlansuiteError):
    """A configuration value is missing, unknown or inconsistent."""


class PDDLError(PlansuiteError):
    """Malformed, inconsistent or unsupported PDDL.

    >>> str(PDDLError("dom.pddl", "action stack", "unknown predicate 'onn'"))
    "dom.pddl: action stack: unknown predicate 'onn'"
    """

    def __init__(self, source: str, construct: str, problem: str, kind: str = "semantic"):
        self.source, self.construct, self.problem, self.kind = source, construct, problem, kind
        super().__init__(f"{source}: {construct}: {problem}")


class ValidatorError(PlansuiteError):
    """VAL is missing or failed to run: never to be read as "plan invalid"."""


class PlannerError(PlansuiteError):
    """Fast Downward is missing or crashed."""
