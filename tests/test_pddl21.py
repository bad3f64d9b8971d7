"""PDDL 2.1 reading and consistency: numeric fluents, metrics, durative actions (issue 12)."""

from __future__ import annotations

from pathlib import Path

import pytest

from plansuite.domains import BUILTIN_DIR
from plansuite.errors import PDDLError
from plansuite.pddl.checks import check_problem
from plansuite.pddl.model import problem_to_pddl
from plansuite.pddl.parse import load_domain, load_problem, parse_domain, parse_problem
from plansuite.pddl.pddl21 import read_domain21
from plansuite.pddl.simulator import GroundTask

DATA = Path(__file__).parent / "data21"
FUEL = (BUILTIN_DIR / "fuel-delivery.pddl").read_text()
TIMED = (BUILTIN_DIR / "timed-delivery.pddl").read_text()


def fuel():
    return parse_domain(FUEL, "fuel.pddl")


def timed():
    return parse_domain(TIMED, "timed.pddl")


def test_numeric_domain_is_read_with_typed_functions_and_numeric_parts():
    d = fuel()
    assert d.level == "numeric" and d.actions == ()
    assert d.function_types == {"fuel": ("truck",), "carried": ("truck",), "capacity": ("truck",),
                                "fuel-used": ()}
    drive = next(a for a in d.actions21 if a.name == "drive")
    assert ("", "(>= (fuel ?t) 1)") in drive.conditions
    assert ("", "(decrease (fuel ?t) 1)") in drive.effects and not drive.durative


def test_temporal_domain_keeps_durations_and_time_specifiers():
    d = timed()
    assert d.level == "temporal"
    move = next(a for a in d.actions21 if a.name == "move")
    assert move.duration == "(= ?duration (move-time ?r))"
    assert ("over all", "(corridor ?from ?to)") in move.conditions
    assert ("at end", "(robot-at ?r ?to)") in move.effects


def test_problem_values_and_metric_round_trip_through_the_canonical_text():
    d = fuel()
    p = load_problem(DATA / "fuel-p1.pddl", d)
    assert p.fluents == {"(fuel t1)": 5.0, "(carried t1)": 0.0, "(capacity t1)": 2.0, "(fuel-used)": 0.0}
    assert p.metric == "minimize (fuel-used)"
    again = parse_problem(problem_to_pddl(p, d), d)
    assert again.fluents == p.fluents and again.metric == p.metric and again.init == p.init
    t = load_problem(DATA / "timed-p1.pddl", timed())
    assert t.metric == "minimize (total-time)" and t.fluents == {"(move-time r1)": 3.0}


def test_the_strips_simulator_refuses_pddl21_domains():
    d = fuel()
    with pytest.raises(PDDLError, match="STRIPS simulator cannot run PDDL 2.1"):
        GroundTask(d, load_problem(DATA / "fuel-p1.pddl", d))


@pytest.mark.parametrize("old, new, construct, message", [
    ("(decrease (fuel ?t) 1)", "(decrease (fule ?t) 1)", "action drive effect (decrease (fule ?t) 1)",
     "function 'fule' is not declared"),
    ("(>= (fuel ?t) 1)", "(>= (fuel ?t ?from) 1)", "action drive precondition (>= (fuel ?t ?from) 1)",
     "'fuel' takes 1 argument(s), got 2"),
    ("(>= (fuel ?t) 1)", "(>= (fuel ?from) 1)", "action drive precondition",
     "argument 1 of 'fuel' must be truck, '?from' is location"),
    ("(increase (carried ?t) 1)", "(increase (in ?p ?t) 1)", "action load effect",
     "'in' is a predicate, used here as a function"),
    ("(road ?from ?to) (>=", "(fuel ?t) (>=", "action drive precondition (fuel ?t)",
     "'fuel' is a function, used here as a predicate"),
    ("(increase (fuel-used) 1)", "(increase fuel-used 1)", "action drive effect",
     "expected a function term"),
    ("(>= (fuel ?t) 1)", "(>= (fuel ?t) ?z)", "action drive precondition",
     "variable ?z is not a parameter"),
    (":numeric-fluents", "", "(:requirements ...)",
     "numeric fluents used without :numeric-fluents"),
    ("(at ?t ?from) (road", "(or (at ?t ?from)) (road", "action drive precondition (or",
     "'or' is not supported"),
    ("(capacity ?t - truck)", "(capacity ?t - truck) (unload)", "function unload",
     "also the name of a predicate or action"),
])
def test_numeric_domain_errors_are_one_located_line(old, new, construct, message):
    assert old in FUEL
    text = FUEL.replace(old, new, 1)
    if old == ":numeric-fluents":  # keep the file routed to the PDDL 2.1 reader
        text = text.replace(":typing ", ":typing :durative-actions ")
    with pytest.raises(PDDLError) as err:
        parse_domain(text, "fuel.pddl")
    line = str(err.value)
    assert line.startswith("fuel.pddl") and construct in line and message in line, line
    assert "\n" not in line


@pytest.mark.parametrize("old, new, construct, message", [
    ("(at start (free ?r))", "(free ?r)", "action pick condition (free ?r)",
     "needs 'at start', 'at end' or 'over all'"),
    ("(at end (free ?r))", "(over all (free ?r))", "action drop effect (over all (free ?r))",
     "time specifier"),
    (":duration (= ?duration 1)\n    :condition (and (at start (holding", ":condition (and (at start (holding",
     "action drop :duration", "needs :duration"),
    ("(= ?duration (move-time ?r))", "(<= ?duration (move-time ?r))", "action move :duration",
     "only (= ?duration <expression>)"),
    ("(= ?duration (move-time ?r))", "(= ?duration (move-time ?from))", "action move :duration",
     "argument 1 of 'move-time' must be robot, '?from' is room"),
    (":durative-actions ", "", "(:requirements ...)", "durative actions without :durative-actions"),
])
def test_temporal_domain_errors_are_one_located_line(old, new, construct, message):
    assert old in TIMED
    with pytest.raises(PDDLError) as err:
        parse_domain(TIMED.replace(old, new, 1), "timed.pddl")
    line = str(err.value)
    assert line.startswith("timed.pddl") and construct in line and message in line, line


def test_domain_reader_collects_every_diagnostic_with_lines():
    bad = FUEL.replace("(decrease (fuel ?t) 1)", "(decrease (fule ?t) 1)").replace(
        "(< (carried ?t) (capacity ?t))", "(< (carried ?t) (capacity ?p))")
    _, diagnostics = read_domain21(bad, "fuel.pddl")
    kinds = sorted(d.kind for d in diagnostics)
    assert kinds == ["type", "undeclared-function"]
    assert all(d.line and d.line > 15 for d in diagnostics)


def test_duplicate_durative_action_is_refused():
    dup = TIMED.replace("(:durative-action drop", "(:durative-action pick", 1)
    with pytest.raises(PDDLError, match="action pick: declared twice"):
        parse_domain(dup, "timed.pddl")


PROBLEM = (DATA / "fuel-p1.pddl").read_text()


@pytest.mark.parametrize("old, new, kind, message", [
    ("(= (fuel t1) 5)", "(= (fuel t1) 5) (= (petrol t1) 3)", "undeclared-function",
     "function 'petrol' is not declared"),
    ("(= (fuel t1) 5)", "(= (fuel t1 la) 5)", "arity", "'fuel' takes 1 argument(s), got 2"),
    ("(= (capacity t1) 2)", "(= (capacity t1) 2) (= (capacity la) 1)", "type",
     "argument 1 of 'capacity' must be truck, 'la' is location"),
    ("(= (fuel t1) 5)", "(= (fuel t9) 5)", "undeclared-object", "object 't9' is not declared"),
    ("minimize (fuel-used)", "minimize (+ (fuel-used) (fuel la))", "type",
     "argument 1 of 'fuel' must be truck"),
    ("minimize (fuel-used)", "minimize (total-time)", "metric", "total-time is a temporal metric"),
    ("(= (fuel t1) 5)", "", "undefined-fluent", "no initial value"),
])
def test_problem_consistency_covers_fluents_and_metric(old, new, kind, message):
    d = fuel()
    text = PROBLEM.replace(old, new, 1)
    problem = parse_problem(text, d, "p.pddl", check=False)
    found = check_problem(problem, d, text)
    assert any(x.kind == kind and message in x.message for x in found), found
    with pytest.raises(PDDLError, match=r"^p\.pddl"):
        parse_problem(text, d, "p.pddl")


def test_reference_problems_are_consistent():
    for domain, name in ((fuel(), "fuel-p1.pddl"), (timed(), "timed-p1.pddl")):
        text = (DATA / name).read_text()
        assert check_problem(parse_problem(text, domain, name, check=False), domain, text) == []


def test_missing_move_time_is_undefined_for_the_duration():
    d = timed()
    text = (DATA / "timed-p1.pddl").read_text().replace("(= (move-time r1) 3)", "")
    found = check_problem(parse_problem(text, d, check=False), d, text)
    assert [x.construct for x in found] == ["init (move-time r1)"]


def test_load_domain_reads_the_builtin_files():
    assert load_domain(BUILTIN_DIR / "timed-delivery.pddl").name == "timed-delivery"


def test_a_numeric_action_parameter_named_twice_is_refused():
    old = ":parameters (?t - truck ?from ?to - location)"
    assert old in FUEL
    with pytest.raises(PDDLError, match=r"action \w+ :parameters: parameter \?from declared twice"):
        parse_domain(FUEL.replace(old, ":parameters (?t - truck ?from ?from - location)", 1),
                     "fuel.pddl")
