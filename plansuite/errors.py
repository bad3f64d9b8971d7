"""The suite's error types: every user-facing failure is one line naming the file and the problem."""

from __future__ import annotations

import re


def clip(text: str, limit: int = 80) -> str:
    """``text`` on one line, each long name cut to 40 characters and the whole to about
    ``limit``: errors echo user input, and a 10 MB token must not become a 10 MB error line.
    Runs with dots, slashes or colons are cut at those, so paths and class names stay whole.

    >>> clip("x" * 500, 60)
    'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...(500 chars)'
    >>> clip("object '" + "y" * 99 + "' is not declared", 200)
    "object 'yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy...(99 chars)' is not declared"
    """
    text = re.sub(r"[^\s'\"()./:]{41,}", lambda m: f"{m.group()[:40]}...({len(m.group())} chars)",
                  text.replace("\r", " ").replace("\n", " "))
    return text if len(text) <= limit else f"{text[:limit]}...({len(text)} chars)"


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
        construct, problem = clip(construct, 160), clip(problem, 400)
        self.source, self.construct, self.problem, self.kind = source, construct, problem, kind
        super().__init__(f"{source}: {construct}: {problem}")


class ValidatorError(PlansuiteError):
    """VAL is missing or failed to run: never to be read as "plan invalid"."""


class PlannerError(PlansuiteError):
    """Fast Downward is missing or crashed."""
