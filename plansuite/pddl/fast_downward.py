"""Fast Downward (the driver bundled by ``up-fast-downward``), one temp working dir per call.

FD writes ``output.sas`` and ``sas_plan`` into its working directory, so concurrent calls in one
directory would overwrite each other's files.

A planner that ends with neither a plan, a proof of unsolvability, a resource limit nor one of
FD's own input-error codes is broken (a stand-in that exits 0, a crashed driver): that is a
:class:`~plansuite.errors.PlannerError`, never "no plan", so no verdict is made up or cached.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from plansuite.errors import ConfigError, PlannerError, clip
from plansuite.pddl.plans import parse_plan

ALIASES = {"optimal": "seq-opt-bjolp", "satisficing": "lama-first"}
# FD's exit codes (driver/returncodes.py): 10/11/13 proofs of unsolvability and 12 an exhausted
# search; 20-24 out of time or memory; 30-37 FD's own report of an input or critical error.
UNSOLVABLE_CODES = (10, 11, 12, 13)
RESOURCE_CODES = (20, 21, 22, 23, 24)
ERROR_CODES = tuple(range(30, 38))


@dataclass(frozen=True)
class PlanResult:
    status: str  # solved | unsolvable | timeout | error
    plan: list[str] | None
    seconds: float
    message: str = ""

    @property
    def solved(self) -> bool:
        return self.plan is not None


@functools.cache
def driver() -> Path:
    if os.environ.get("PLANSUITE_FAST_DOWNWARD"):
        chosen = Path(os.environ["PLANSUITE_FAST_DOWNWARD"])
        if not chosen.is_file():
            raise PlannerError(f"PLANSUITE_FAST_DOWNWARD={chosen}: no such file")
        return chosen
    spec = importlib.util.find_spec("up_fast_downward")
    if spec and spec.submodule_search_locations:
        path = Path(list(spec.submodule_search_locations)[0]) / "downward" / "fast-downward.py"
        if path.is_file():
            return path
    raise PlannerError("Fast Downward not found (pip install up-fast-downward, or set "
                       "PLANSUITE_FAST_DOWNWARD=/path/to/fast-downward.py)")


@functools.cache
def identity() -> str:
    """Which planner answers: the driver's path and content digest, the package version and the
    search binary's size and mtime. Cached verdicts are keyed by it, so a verdict of one planner
    (a stand-in, an older build) is never reused for another."""
    path = driver().resolve()
    try:
        version = importlib.metadata.version("up-fast-downward")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    parts = [str(path), version, hashlib.sha256(path.read_bytes()).hexdigest()[:16]]
    search = path.parent / "builds" / "release" / "bin" / "downward"
    if search.is_file():
        stat = search.stat()
        parts.append(f"{stat.st_size}:{stat.st_mtime_ns}")
    return "|".join(parts)


def run_planner(cmd: list[str], cwd: str | None, timeout: float, name: str,
                problem_file: str | Path, env: dict[str, str] | None = None
                ) -> subprocess.CompletedProcess | None:
    """Run one planner process; ``None`` when it was killed at ``timeout``. A planner that cannot
    start is a :class:`PlannerError` (never "no plan")."""
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              env=env)
    except subprocess.TimeoutExpired:
        return None
    except OSError as exc:
        raise PlannerError(f"{problem_file}: {name} failed to start: {exc}") from exc


@functools.cache
def driver_aliases(fd_driver: Path) -> frozenset[str]:
    """The aliases a driver knows (``--show-aliases``); empty when it cannot say (a stand-in)."""
    try:
        proc = subprocess.run([sys.executable, str(fd_driver), "--show-aliases"], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(proc.stdout.split()) if proc.returncode == 0 else frozenset()


def check_search(mode: str, time_limit: float, key: str = "planner") -> None:
    """Refuse a search FD would reject on every call: an unknown alias (FD exits 36, and a loop
    that treats planner errors as no verdict would run on with every solvability check empty)
    or a time limit that is not positive. ``key``: the config group the two settings live in.

    >>> check_search("satisficing", 0)
    Traceback (most recent call last):
    plansuite.errors.ConfigError: planner.time_limit=0: must be a positive number of seconds
    """
    if isinstance(time_limit, bool) or not isinstance(time_limit, int | float) or time_limit <= 0:
        raise ConfigError(f"{key}.time_limit={time_limit!r}: must be a positive number of seconds")
    if mode in ALIASES:
        return
    known = driver_aliases(driver())
    if known and mode not in known:
        raise ConfigError(f"{key}.mode={mode!r}: choose {', '.join(ALIASES)} or a Fast Downward alias "
                          f"({', '.join(sorted(known))})")


def solve(domain_file: str | Path, problem_file: str | Path, mode: str = "optimal",
          time_limit: float = 60.0) -> PlanResult:
    """Plan with FD: ``mode`` is ``optimal``, ``satisficing`` or any FD alias."""
    check_search(mode, time_limit)
    alias = ALIASES.get(mode, mode)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="plansuite-fd-") as tmp:
        cmd = [sys.executable, str(driver()), "--alias", alias,
               "--overall-time-limit", f"{max(1, int(time_limit))}s",
               str(Path(domain_file).resolve()), str(Path(problem_file).resolve())]
        proc = run_planner(cmd, tmp, time_limit + 30, "Fast Downward", problem_file)
        if proc is None:
            return PlanResult("timeout", None, time.perf_counter() - start, "killed")
        seconds = time.perf_counter() - start
        plan_file = Path(tmp) / "sas_plan"
        if plan_file.is_file():
            return PlanResult("solved", parse_plan(plan_file.read_text(), str(plan_file)), seconds)
    code = proc.returncode
    if code in UNSOLVABLE_CODES:
        return PlanResult("unsolvable", None, seconds, "proved unsolvable")
    if code in RESOURCE_CODES:
        return PlanResult("timeout", None, seconds, "time or memory limit")
    lines = [ln.strip() for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
    errors = [ln for ln in lines if "rror" in ln or "xception" in ln]
    detail = clip((errors or lines or ["no output"])[-1], 200)
    if code in ERROR_CODES:
        return PlanResult("error", None, seconds, f"exit {code}: {detail}")
    raise PlannerError(f"{problem_file}: Fast Downward ({driver()}) exited {code} with neither a "
                       f"plan nor a proof of unsolvability: {detail}")
