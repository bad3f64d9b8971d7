"""The suite's error types: every user-facing failure is one line naming the file and the problem."""

from __future__ import annotations

import errno
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


# What to do about an I/O failure that is the machine's, not the input's.
_IO_HINTS = {
    errno.ENOSPC: "the disk is full: free space and rerun (finished work is kept and resumes)",
    errno.EDQUOT: "the disk quota is exceeded: free space and rerun (finished work is kept)",
    errno.EFBIG: "the file size limit was reached (ulimit -f): raise it and rerun",
    errno.EROFS: "the file system is read-only: choose another out_dir",
    errno.EACCES: "permission denied: choose another out_dir or fix its permissions",
}


def os_error_line(exc: OSError, where: str | None = None) -> str:
    """An I/O failure (a full disk, a read-only out_dir) as one line naming the path; ``where``
    names it when the error does not (a failed ``write`` on an open file carries no file name).

    >>> os_error_line(OSError(errno.ENOSPC, "No space left on device", "/out/results.json"))
    '/out/results.json: No space left on device (the disk is full: free space and rerun (finished work is kept and resumes))'
    >>> os_error_line(OSError(errno.EIO, "Input/output error"))
    'I/O error: Input/output error'
    >>> os_error_line(OSError(errno.EFBIG, "File too large"), "out_dir=/out").split(" (")[0]
    'out_dir=/out: File too large'
    """
    where = exc.filename if exc.filename is not None else where or "I/O error"
    what = exc.strerror or str(exc)
    hint = _IO_HINTS.get(exc.errno)
    return clip(f"{where}: {what}" + (f" ({hint})" if hint else ""), 400)


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
