"""One planning interface for every PDDL level: Fast Downward, ENHSP (numeric), TAMER (temporal).

:func:`solve` has Fast Downward's signature and result (:class:`~.fast_downward.PlanResult`) and
picks the planner from the domain's requirements (:func:`planner_for`):

* classical STRIPS -> Fast Downward (:mod:`.fast_downward`);
* numeric fluents -> ENHSP, the jar shipped by ``up-enhsp``, run with ``java -jar`` directly;
* durative actions -> TAMER through ``up-tamer`` / ``unified-planning``, in a child process:
  TAMER ignores time limits, so only killing its process bounds it.

unified-planning reads ``minimize (total-time)`` but not ``maximize (total-time)``; TAMER never
optimises a metric anyway (it is satisficing), so a metric that is only ``total-time`` is dropped
before reading and the result's message says so (:func:`makespan_metric`): the verdict is the
same as for the problem without a metric, instead of a planner error.

Plans of temporal problems keep their times and durations (``0.000: (move r1 ra rb) [3.000]``),
which VAL needs; numeric plans are plain action lists. A planner that is not installed, or that
fails without a verdict, is a :class:`~plansuite.errors.PlannerError`, never "no plan": ENHSP
given an unreadable file prints a Java exception and then "Unsolvable Problem" with exit 0, and
that must not be read as a proof.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from plansuite.errors import PlannerError, clip
from plansuite.pddl import fast_downward
from plansuite.pddl.fast_downward import PlanResult, run_planner
from plansuite.pddl.model import Domain
from plansuite.pddl.plans import parse_plan

PLANNERS = ("fast-downward", "enhsp", "tamer")
_MAKESPAN_METRIC = re.compile(r"\(\s*:metric\s+(minimize|maximize)\s*\(\s*total-time\s*\)\s*\)",
                             re.IGNORECASE)
_STEP = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*:\s*(\([^()]*\))\s*\[\s*(\d+(?:\.\d+)?)\s*\]\s*$")


def planner_for(domain: Domain) -> str:
    """The planner a domain needs: ``tamer`` (durative actions), ``enhsp`` (numeric fluents) or
    ``fast-downward`` (classical)."""
    return {"temporal": "tamer", "numeric": "enhsp"}.get(domain.level, "fast-downward")


def check_search(domain: Domain, mode: str, time_limit: float) -> None:
    """A ConfigError now for a search setting every :func:`solve` call would fail on (``mode``
    only matters to FD)."""
    fast_downward.check_search(mode if planner_for(domain) == "fast-downward" else "satisficing",
                               time_limit)


def solve(domain_file: str | Path, problem_file: str | Path, mode: str = "satisficing",
          time_limit: float = 60.0, *, planner: str | None = None,
          domain: Domain | None = None) -> PlanResult:
    """Plan with the planner the domain needs (or ``planner``); ``mode`` matters only to FD."""
    if planner is None:
        if domain is None:
            from plansuite.pddl.parse import load_domain

            domain = load_domain(domain_file)
        planner = planner_for(domain)
    if planner == "fast-downward":
        return fast_downward.solve(domain_file, problem_file, mode, time_limit)
    if planner == "enhsp":
        return solve_enhsp(domain_file, problem_file, time_limit)
    if planner == "tamer":
        return solve_tamer(domain_file, problem_file, time_limit)
    raise PlannerError(f"unknown planner '{planner}' (choose from {', '.join(PLANNERS)})")


# ---- ENHSP -------------------------------------------------------------------------------------
@functools.cache
def enhsp_command() -> tuple[str, str]:
    """``(java, enhsp.jar)``: $PLANSUITE_ENHSP or up-enhsp's jar, and Java on PATH."""
    if os.environ.get("PLANSUITE_ENHSP"):
        jar = Path(os.environ["PLANSUITE_ENHSP"])
        if not jar.is_file():
            raise PlannerError(f"PLANSUITE_ENHSP={jar}: no such file")
    else:
        spec = importlib.util.find_spec("up_enhsp")
        jar = Path(list(spec.submodule_search_locations)[0]) / "ENHSP" / "enhsp.jar" \
            if spec and spec.submodule_search_locations else Path("/nonexistent")
        if not jar.is_file():
            raise PlannerError("numeric planner ENHSP not found (pip install up-enhsp, or "
                               "`make install`; or set PLANSUITE_ENHSP=/path/to/enhsp.jar)")
    java = shutil.which("java")
    if java is None:
        raise PlannerError("numeric planner ENHSP needs Java 17+ on PATH (`java` not found)")
    return java, str(jar)


def solve_enhsp(domain_file: str | Path, problem_file: str | Path,
                time_limit: float = 60.0) -> PlanResult:
    java, jar = enhsp_command()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="plansuite-enhsp-") as tmp:
        plan_file = Path(tmp) / "plan"
        # hadd + greedy best-first search: ENHSP's own default configuration in up-enhsp
        cmd = [java, f"-Xmx{os.environ.get('PLANSUITE_ENHSP_HEAP', '2g')}", "-jar", jar,
               "-o", str(Path(domain_file).resolve()), "-f", str(Path(problem_file).resolve()),
               "-sp", str(plan_file), "-npm", "-h", "hadd", "-s", "gbfs"]
        proc = run_planner(cmd, tmp, time_limit, "ENHSP", problem_file)  # no limit of its own
        if proc is None:
            return PlanResult("timeout", None, time.perf_counter() - start, "killed")
        seconds = time.perf_counter() - start
        out = proc.stdout + proc.stderr
        failed = "Exception" in out or "rror" in out
        if proc.returncode == 0 and not failed and "Problem Solved" in out and plan_file.is_file():
            return PlanResult("solved", parse_plan(plan_file.read_text(), "ENHSP plan"), seconds)
    if proc.returncode == 0 and not failed and "Problem unsolvable" in out:
        # gbfs with hadd dead-end pruning exhausted the reachable states
        return PlanResult("unsolvable", None, seconds, "ENHSP exhausted the search space")
    detail = _detail(out)
    if "Parse" in out or "parse" in out or "Syntax" in out or "syntax" in out:
        return PlanResult("error", None, seconds, f"ENHSP could not read the input: {detail}")
    raise PlannerError(f"{problem_file}: ENHSP exited {proc.returncode} with neither a plan nor "
                       f"a verdict: {detail}")


def _detail(output: str) -> str:
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    picked = [ln for ln in lines if "rror" in ln or "xception" in ln] or lines or ["no output"]
    return clip(picked[0], 200)


# ---- TAMER -------------------------------------------------------------------------------------
def tamer_available() -> bool:
    return all(importlib.util.find_spec(m) for m in ("up_tamer", "pytamer", "unified_planning"))


# What the child process runs (only killing it bounds TAMER): the library's own entry, not a command
# of the suite, so a ``python -c`` line rather than a ``python -m`` module under plansuite.cli.
TAMER_CHILD = "from plansuite.pddl.planners import tamer_child; tamer_child()"


def solve_tamer(domain_file: str | Path, problem_file: str | Path,
                time_limit: float = 60.0) -> PlanResult:
    if not tamer_available():
        raise PlannerError("temporal planner TAMER not found (pip install up-tamer "
                           "unified-planning, or `make install`)")
    start = time.perf_counter()
    cmd = [sys.executable, "-c", TAMER_CHILD,
           str(Path(domain_file).resolve()), str(Path(problem_file).resolve())]
    proc = run_planner(cmd, None, time_limit, "TAMER", problem_file,
                       env={**os.environ, "OMP_NUM_THREADS": "1"})
    if proc is None:  # TAMER has no time limit of its own
        return PlanResult("timeout", None, time.perf_counter() - start, "killed")
    seconds = time.perf_counter() - start
    lines = proc.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        answer = None
    if proc.returncode != 0 or not isinstance(answer, dict):
        raise PlannerError(f"{problem_file}: TAMER exited {proc.returncode} without a verdict: "
                           f"{_detail(proc.stderr + proc.stdout)}")
    return PlanResult(answer["status"], answer["plan"], seconds, answer["message"])


def timed_steps(text: str) -> list[str]:
    """Canonical timed plan lines from a PDDL plan text.

    >>> timed_steps("0: (PICK r1 i1 ra)[1]\\n4.01: (drop r1 i1 rb) [1.0]\\n")
    ['0.000: (pick r1 i1 ra) [1.000]', '4.010: (drop r1 i1 rb) [1.000]']
    """
    steps = []
    for raw in text.splitlines():
        line = raw.split(";", 1)[0].strip()
        if not line:
            continue
        m = _STEP.match(line.lower())
        if m is None:
            raise PlannerError(f"TAMER plan: not a timed step: {clip(raw, 80)!r}")
        action = "(" + " ".join(m.group(2)[1:-1].split()) + ")"
        steps.append(f"{float(m.group(1)):.3f}: {action} [{float(m.group(3)):.3f}]")
    return steps


def makespan_metric(text: str) -> tuple[str, str | None]:
    """``(text without its metric, 'maximize (total-time)')`` when the problem's only metric is a
    maximised ``total-time`` (which unified-planning cannot read), else ``(text, None)``.

    >>> makespan_metric("(define (problem p) (:goal (a)) (:metric MAXIMIZE ( total-time )))")
    ('(define (problem p) (:goal (a)) )', 'maximize (total-time)')
    >>> makespan_metric("(:goal (a)) (:metric minimize (total-time))")[1] is None
    True
    """
    m = _MAKESPAN_METRIC.search(text)
    if m is None or m.group(1).lower() != "maximize":
        return text, None
    return text[:m.start()] + text[m.end():], "maximize (total-time)"


def _tamer_main(domain_file: str, problem_file: str) -> dict:
    """Run in the child process: read the files with unified-planning, plan with TAMER."""
    import warnings

    from unified_planning.engines import PlanGenerationResultStatus as Status
    from unified_planning.io import PDDLReader, PDDLWriter
    from unified_planning.shortcuts import OneshotPlanner, get_environment

    get_environment().credits_stream = None
    text, dropped = makespan_metric(Path(problem_file).read_text())
    note = (f"planned without the metric {dropped} (unified-planning cannot read it; TAMER is "
            "satisficing and ignores metrics anyway)") if dropped else ""
    problem = PDDLReader().parse_problem_string(Path(domain_file).read_text(), text)
    problem.clear_quality_metrics()  # TAMER is satisficing and refuses problems with a metric
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with OneshotPlanner(name="tamer") as engine:
            result = engine.solve(problem)
    if result.status in (Status.SOLVED_SATISFICING, Status.SOLVED_OPTIMALLY):
        plan = timed_steps(PDDLWriter(problem).get_plan(result.plan))
        return {"status": "solved", "plan": plan, "message": note}
    verdict = f"TAMER: {result.status.name}" + (f"; {note}" if note else "")
    if result.status in (Status.UNSOLVABLE_PROVEN, Status.UNSOLVABLE_INCOMPLETELY):
        return {"status": "unsolvable", "plan": None, "message": verdict}
    return {"status": "error", "plan": None, "message": verdict}


def tamer_child() -> None:
    """``python -c TAMER_CHILD DOMAIN PROBLEM``: print the verdict of :func:`_tamer_main` as one
    JSON line, a failure to read or plan included."""
    if len(sys.argv) != 3:
        sys.exit("usage: python -c TAMER_CHILD DOMAIN PROBLEM (plansuite.pddl.planners)")
    try:
        answer = _tamer_main(sys.argv[1], sys.argv[2])
    except Exception as exc:  # unified-planning raises many types; all mean "could not read/plan"
        answer = {"status": "error", "plan": None,
                  "message": f"TAMER could not read or plan: {clip(f'{type(exc).__name__}: {exc}', 200)}"}
    print(json.dumps(answer))
