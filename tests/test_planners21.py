"""ENHSP (numeric) and TAMER (temporal) behind one interface, and VAL on their plans (issue 12)."""

from __future__ import annotations

from pathlib import Path

import pytest

from plansuite.domains import BUILTIN_DIR, builtin_path, load_builtin
from plansuite.errors import PlannerError
from plansuite.nl2pddl.judging.problem_checks import OperationalChecker
from plansuite.nl2pddl.loop.repair import build_feedback
from plansuite.pddl import planners, val
from plansuite.pddl.parse import load_domain

DATA = Path(__file__).parent / "data21"
FUEL = BUILTIN_DIR / "fuel-delivery.pddl"
TIMED = BUILTIN_DIR / "timed-delivery.pddl"


def _enhsp_missing() -> str | None:
    try:
        planners.enhsp_command()
    except PlannerError as exc:
        return str(exc)
    return None


needs_enhsp = pytest.mark.skipif(_enhsp_missing() is not None,
                                 reason=f"ENHSP absent here: {_enhsp_missing()}")
needs_tamer = pytest.mark.skipif(not planners.tamer_available(),
                                 reason="TAMER absent here (up-tamer/unified-planning not installed)")


def test_the_planner_follows_the_domain_level():
    assert planners.planner_for(load_builtin("blocksworld")) == "fast-downward"
    assert planners.planner_for(load_domain(FUEL)) == "enhsp"
    assert planners.planner_for(load_domain(TIMED)) == "tamer"


@needs_enhsp
def test_enhsp_plan_is_valid_for_val_and_a_broken_one_is_not():
    result = planners.solve(FUEL, DATA / "fuel-p1.pddl", time_limit=60)
    assert result.status == "solved" and result.plan
    assert all(step.startswith("(") for step in result.plan)  # no times in numeric plans
    assert val.validate(FUEL, DATA / "fuel-p1.pddl", result.plan).valid
    # every drive burns fuel: without the first drive the truck is not where it loads
    broken = [s for s in result.plan if not s.startswith("(drive")][:1] + result.plan
    assert not val.validate(FUEL, DATA / "fuel-p1.pddl", broken).valid


@needs_enhsp
def test_enhsp_proves_too_little_fuel_unsolvable(tmp_path):
    low = tmp_path / "low.pddl"
    low.write_text((DATA / "fuel-p1.pddl").read_text().replace("(= (fuel t1) 5)", "(= (fuel t1) 1)"))
    result = planners.solve(FUEL, low, time_limit=60)
    assert result.status == "unsolvable" and result.plan is None


@needs_enhsp
def test_enhsp_on_unreadable_input_is_never_unsolvable(tmp_path):
    # ENHSP prints a Java exception and then "Unsolvable Problem" with exit 0 for such input
    bad = tmp_path / "bad.pddl"
    bad.write_text("(define (problem p) (:domain fuel-delivery) (:objects t1 - truck) (:init (at t1")
    try:
        result = planners.solve(FUEL, bad, time_limit=60)
    except PlannerError as exc:
        assert "ENHSP" in str(exc)
    else:
        assert result.status == "error" and "ENHSP" in result.message


def test_missing_enhsp_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PLANSUITE_ENHSP", str(tmp_path / "no-such.jar"))
    planners.enhsp_command.cache_clear()
    try:
        with pytest.raises(PlannerError, match="PLANSUITE_ENHSP=.*no-such.jar: no such file"):
            planners.solve(FUEL, DATA / "fuel-p1.pddl")
    finally:
        monkeypatch.delenv("PLANSUITE_ENHSP")
        planners.enhsp_command.cache_clear()


def test_missing_tamer_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(planners, "tamer_available", lambda: False)
    with pytest.raises(PlannerError, match="temporal planner TAMER not found"):
        planners.solve(TIMED, DATA / "timed-p1.pddl")


@needs_tamer
def test_tamer_plan_keeps_times_and_val_checks_the_durations():
    result = planners.solve(TIMED, DATA / "timed-p1.pddl", time_limit=120)
    assert result.status == "solved"
    assert [s.split(": ", 1)[1].split(" [")[0] for s in result.plan] == [
        "(pick r1 i1 ra)", "(move r1 ra rb)", "(drop r1 i1 rb)"]
    assert "[3.000]" in result.plan[1]  # (move-time r1) is 3
    assert val.validate(TIMED, DATA / "timed-p1.pddl", result.plan).valid
    wrong = [s.replace("[3.000]", "[2.000]") for s in result.plan]
    assert not val.validate(TIMED, DATA / "timed-p1.pddl", wrong).valid


@needs_enhsp
def test_operational_checks_use_enhsp_and_report_missing_fuel(tmp_path):
    checker = OperationalChecker(FUEL, time_limit=60)
    good = checker.check((DATA / "fuel-p1.pddl").read_text())
    assert good.success and good.plan
    # 1 unit of fuel: consistent, but no plan; the diagnostic names the planner that tried
    low = checker.check((DATA / "fuel-p1.pddl").read_text().replace("(fuel t1) 5", "(fuel t1) 1"))
    assert low.domain_consistent and low.solvable is False
    assert low.diagnostics[0].kind == "unsolvable" and "ENHSP proved" in low.diagnostics[0].message


def test_classical_domains_still_go_to_fast_downward(tmp_path):
    problem = tmp_path / "g.pddl"
    problem.write_text("""(define (problem g) (:domain gripper)
      (:objects rooma roomb - room left right - gripper)
      (:init (at-robby rooma) (free left) (free right))
      (:goal (and (at-robby roomb))))""")
    result = planners.solve(builtin_path("gripper"), problem)
    assert result.status == "solved" and result.plan == ["(move rooma roomb)"]


def test_make_install_pulls_and_pins_the_pddl21_planners():
    from importlib.metadata import PackageNotFoundError, version

    import tomllib

    repo = Path(__file__).resolve().parents[1]
    extras = tomllib.loads((repo / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {d.split(">=")[0] for d in extras["pddl21"]} == {"up-enhsp", "up-tamer", "unified-planning"}
    assert any(d.startswith("plansuite[") and "pddl21" in d for d in extras["dev"])  # make install
    pins = dict(line.split("==", 1) for line in (repo / "constraints.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    for name in ("up-enhsp", "up-tamer", "unified-planning", "pytamer"):
        try:
            installed = version(name)
        except PackageNotFoundError:  # pinned, but this venv was made without the extra
            continue
        assert pins[name] == installed, name


@needs_tamer
def test_tamer_gives_a_maximised_makespan_a_verdict_and_says_it_dropped_the_metric(tmp_path):
    # unified-planning cannot read `maximize (total-time)`: without the workaround this is a
    # planner error (solvable = None); TAMER ignores metrics anyway, so the verdict is sound
    text = (DATA / "timed-p1.pddl").read_text().replace("minimize (total-time)", "maximize (total-time)")
    problem = tmp_path / "max.pddl"
    problem.write_text(text)
    result = planners.solve(TIMED, problem, time_limit=120)
    assert result.status == "solved" and "without the metric maximize (total-time)" in result.message
    assert val.validate(TIMED, problem, result.plan).valid
    report = OperationalChecker(TIMED, time_limit=120).check(text)
    assert report.success and report.solvable is True and report.plan_valid is True
    [note] = report.diagnostics
    assert note.kind == "planner-note" and note.construct == "(:metric ...)"
    assert note.message.startswith("TAMER planned without the metric maximize (total-time)")
    assert build_feedback(text, report) is None  # a note is nothing to repair
    # the workaround is for total-time only, and an unsolvable problem stays unsolvable
    stuck = text.replace("(corridor ra rb) (corridor rb ra)", "")
    low = OperationalChecker(TIMED, time_limit=120).check(stuck)
    assert low.solvable is False and low.diagnostics[0].kind == "unsolvable"
    assert planners.makespan_metric(text.replace("(total-time)", "(move-time r1)"))[1] is None
