"""Parsing, semantic diagnostics and rejection of unsupported PDDL: one line naming file and construct."""

from __future__ import annotations

import re
import sys

import pytest

from plansuite.errors import PDDLError
from plansuite.pddl.checks import check_domain, check_problem
from plansuite.pddl.parse import load_domain, load_problem, parse_domain, parse_problem

DOMAIN = """\
(define (domain d)
  (:requirements {req})
  (:types block - object table)
  (:constants t0 - table)
  (:predicates (on ?x - block ?y - object) (free ?x - object) (hot))
  (:action move
    :parameters (?x - block ?y - block)
    :precondition {pre}
    :effect {eff}))
"""
FULL_REQ = ":strips :typing :negative-preconditions :equality"
GOOD_PRE = "(and (free ?x) (free ?y) (not (= ?x ?y)) (not (hot)))"
GOOD_EFF = "(and (on ?x ?y) (not (free ?y)))"


def domain_text(req=FULL_REQ, pre=GOOD_PRE, eff=GOOD_EFF) -> str:
    return DOMAIN.format(req=req, pre=pre, eff=eff)


PROBLEM = """\
(define (problem p) (:domain {dn})
  (:objects a b - block {extra})
  (:init (free a) {init})
  (:goal (and {goal})))
"""


def problem_text(dn="d", extra="", init="(free b)", goal="(on a b)") -> str:
    return PROBLEM.format(dn=dn, extra=extra, init=init, goal=goal)


@pytest.fixture(scope="module")
def dom():
    return parse_domain(domain_text(), "d.pddl")


def test_good_domain_and_problem(dom):
    assert dom.types == {"block": "object", "table": "object"}  # `- object` accepted
    assert dom.constants == {"t0": "table"}
    (move,) = dom.actions
    assert move.pre_neq == (("?x", "?y"),) and move.pre_neg == (("hot",),)
    p = parse_problem(problem_text(), dom, "p.pddl")
    assert p.objects == {"a": "block", "b": "block"} and ("free", "b") in p.init
    assert p.goal_pos == {("on", "a", "b")}


def test_objects_and_predicates_keep_their_written_order_under_any_hash_seed(tmp_path):
    """``pddl`` keeps objects and predicates in sets; ours come back in the written order whatever
    PYTHONHASHSEED is (the order reaches every choice made by walking them)."""
    import subprocess

    (tmp_path / "d.pddl").write_text(domain_text())
    (tmp_path / "p.pddl").write_text(problem_text(extra="zz yy c1 c10 c2 - block"))
    code = ("import sys; from plansuite.pddl.parse import load_domain, load_problem; "
            "d = load_domain(sys.argv[1]); print(list(d.predicates), list(load_problem(sys.argv[2], d).objects))")
    seen = {subprocess.run([sys.executable, "-c", code, str(tmp_path / "d.pddl"), str(tmp_path / "p.pddl")],
                           env={"PYTHONHASHSEED": str(seed)}, capture_output=True, text=True, check=True).stdout
            for seed in (1, 2, 3, 9)}
    assert seen == {"['on', 'free', 'hot'] ['a', 'b', 'zz', 'yy', 'c1', 'c10', 'c2']\n"}


def test_parent_types_are_declared_implicitly():
    d = parse_domain(domain_text().replace("(:types block - object table)",
                                           "(:types block - thing table - thing)"))
    assert d.types == {"block": "thing", "table": "thing", "thing": "object"}


def test_object_tags_in_the_middle_of_a_typed_list_keep_every_group_as_written():
    """``- object`` followed by another typed group: each group keeps its own type (deleting the
    tag from the text once merged ``place item`` into ``food tool - item``, a type cycle)."""
    text = """(define (domain d) (:requirements :strips :typing)
      (:types place item - object food tool - item)
      (:constants k - object h - place)
      (:predicates (at ?x - object ?p - place) (eats ?f - food ?x - object))
      (:action a :parameters (?x - object ?p - place ?t - tool)
        :precondition (at ?x ?p) :effect (not (at ?x ?p))))"""
    d = parse_domain(text, "d.pddl")
    assert d.types == {"place": "object", "item": "object", "food": "item", "tool": "item"}
    assert d.constants == {"k": "object", "h": "place"}
    assert d.predicates == {"at": ("object", "place"), "eats": ("food", "object")}
    assert d.actions[0].parameters == (("?x", "object"), ("?p", "place"), ("?t", "tool"))
    p = parse_problem("(define (problem p) (:domain d) (:objects a b - object c - place f - food)"
                      " (:init (at a c)) (:goal (at b c)))", d, "p.pddl")
    assert p.objects == {"a": "object", "b": "object", "c": "place", "f": "food"}


def test_an_either_type_naming_object_is_still_refused():
    with pytest.raises(PDDLError, match=r"\['block', 'object'\]"):
        parse_domain(domain_text().replace("(free ?x - object)", "(free ?x - (either object block))"))


@pytest.mark.parametrize(("kind", "pre", "eff", "fragment"), [
    ("undeclared-predicate", "(and (free ?x) (freee ?y))", GOOD_EFF,
     "d.pddl:8: action move precondition (freee ?y): predicate 'freee' is not declared"),
    ("undeclared-variable", "(and (free ?x) (free ?z))", GOOD_EFF,
     "action move precondition (free ?z): variable ?z is not a parameter"),
    ("undeclared-variable", "(and (free ?x) (not (= ?x ?z)))", GOOD_EFF,
     "action move (= ?x ?z): variable ?z is not a parameter"),
    ("undeclared-object", "(and (free ?x) (free t9))", GOOD_EFF,
     "d.pddl:8: constant t9: object 't9' is not declared"),
    ("arity", "(and (free ?x ?y))", GOOD_EFF, "'free' takes 1 argument(s), got 2"),
    ("type", "(and (free ?x))", "(on t0 ?x)",
     "action move effect (on t0 ?x): argument 1 of 'on' must be block, 't0' is table"),
])
def test_domain_diagnostics(kind, pre, eff, fragment):
    with pytest.raises(PDDLError) as info:
        parse_domain(domain_text(pre=pre, eff=eff), "d.pddl")
    assert info.value.kind == kind
    assert fragment in str(info.value) and "\n" not in str(info.value)
    assert str(info.value).startswith("d.pddl")


@pytest.mark.parametrize(("req", "pre", "fragment"), [
    (":strips :typing :equality", GOOD_PRE, "negative precondition without :negative-preconditions"),
    (":strips :typing :negative-preconditions", "(and (free ?x) (not (hot)) (= ?x ?x))",
     ":equality"),
    (":strips :negative-preconditions :equality", GOOD_PRE, "typing"),
])
def test_missing_requirements(req, pre, fragment):
    with pytest.raises(PDDLError, match=fragment) as info:
        parse_domain(domain_text(req=req, pre=pre), "d.pddl")
    assert info.value.kind == "requirement" and str(info.value).startswith("d.pddl")


def test_undeclared_type_in_domain():
    with pytest.raises(PDDLError) as info:
        parse_domain(domain_text().replace("(?x - block ?y - block)", "(?x - block ?y - blok)"),
                     "d.pddl")
    assert "blok" in str(info.value) and str(info.value).startswith("d.pddl")


@pytest.mark.parametrize(("kwargs", "kind", "fragment"), [
    ({"dn": "other"}, "domain-name", "p.pddl: (:domain other): problem is for domain 'other', not 'd'"),
    ({"init": "(free c)"}, "undeclared-object", "p.pddl:3: init (free c): object 'c' is not declared"),
    ({"goal": "(onn a b)"}, "undeclared-predicate", "p.pddl:4: goal (onn a b): predicate 'onn'"),
    ({"init": "(free a b)"}, "arity", "p.pddl:3: init (free a b): 'free' takes 1 argument(s), got 2"),
    ({"goal": "(on t0 a)"}, "type", "goal (on t0 a): argument 1 of 'on' must be block, 't0' is table"),
    ({"extra": "c - blok"}, "undeclared-type", "p.pddl: object c: type 'blok' not declared"),
    ({"extra": "t0 - table"}, "duplicate", "p.pddl: object t0: already a domain constant"),
])
def test_problem_diagnostics(dom, kwargs, kind, fragment):
    with pytest.raises(PDDLError) as info:
        parse_problem(problem_text(**kwargs), dom, "p.pddl")
    assert info.value.kind == kind and fragment in str(info.value), str(info.value)
    assert "\n" not in str(info.value)


def test_checks_return_every_diagnostic(dom):
    bad = parse_problem(problem_text(dn="x", init="(free c) (freee a)"), dom, "p.pddl", check=False)
    kinds = sorted(d.kind for d in check_problem(bad, dom, problem_text()))
    assert kinds == ["domain-name", "undeclared-object", "undeclared-predicate"]
    assert check_domain(dom) == [] and check_problem(parse_problem(problem_text(), dom), dom) == []


def test_untyped_objects_in_a_domain_without_typing(blocksworld):
    text = "(define (problem p) (:domain blocksworld-4ops) (:objects a - block) (:init) (:goal (and)))"
    with pytest.raises(PDDLError) as info:
        parse_problem(text, blocksworld, "p.pddl")
    assert info.value.kind in ("requirement", "undeclared-type", "parse")
    assert str(info.value).startswith("p.pddl")


@pytest.mark.parametrize(("req", "pre", "eff"), [
    (":strips :typing :disjunctive-preconditions", "(or (free ?x) (hot))", GOOD_EFF),
    (":strips :typing :disjunctive-preconditions", "(imply (free ?x) (hot))", GOOD_EFF),
    (":strips :typing :universal-preconditions", "(forall (?z - block) (free ?z))", GOOD_EFF),
    (":strips :typing :existential-preconditions", "(exists (?z - block) (free ?z))", GOOD_EFF),
    (":strips :typing :conditional-effects", "(free ?x)", "(when (hot) (on ?x ?y))"),
    (":strips :typing :conditional-effects", "(free ?x)", "(forall (?z - block) (free ?z))"),
    # numeric fluents are read since issue 12 (tests/test_pddl21.py); conditional ones are not
    (":strips :typing :numeric-fluents", "(free ?x)", "(when (hot) (increase (fuel) 1))"),
    (":adl", "(free ?x)", GOOD_EFF),
])
def test_unsupported_constructs_are_rejected(req, pre, eff):
    text = domain_text(req=req, pre=pre, eff=eff)
    if "fuel" in eff:
        text = text.replace("(:action", "(:functions (fuel))\n  (:action", 1)
    with pytest.raises(PDDLError) as info:
        parse_domain(text, "d.pddl")
    message = str(info.value)
    assert info.value.kind == "unsupported", message
    # the PDDL 2.1 reader also names the line (d.pddl:10: ...)
    assert re.match(r"d\.pddl(:\d+)?: ", message) and "not supported" in message or "only" in message


def test_unsupported_goal_and_init(dom):
    with pytest.raises(PDDLError, match=r"p.pddl: goal \(not \(and .*only conjunctions of literals"):
        parse_problem(problem_text(goal="(not (and (on a b) (free a)))"), dom, "p.pddl")
    with pytest.raises(PDDLError, match="p.pddl: problem: .*disjunctive-preconditions"):
        parse_problem(problem_text(goal="(or (on a b) (free a))"), dom, "p.pddl")


def test_syntax_errors_name_file_and_position(dom, tmp_path):
    with pytest.raises(PDDLError, match=r"d.pddl: domain \(line \d+, column \d+\): syntax error") as info:
        parse_domain(domain_text().replace("(hot))", "(hot)", 1), "d.pddl")
    assert info.value.kind == "parse"
    with pytest.raises(PDDLError, match=r"p.pddl: problem.*syntax error"):
        parse_problem(problem_text(init="(free a"), dom, "p.pddl")
    with pytest.raises(PDDLError, match="syntax error"):
        parse_domain("", "empty.pddl")
    with pytest.raises(PDDLError, match="nope.pddl: domain: file not found"):
        load_domain(tmp_path / "nope.pddl")
    binary = tmp_path / "bin.pddl"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(PDDLError, match="bin.pddl: problem: unreadable"):
        load_problem(binary, dom)


def test_parser_state_does_not_leak_between_files(dom):
    """The ``pddl`` parsers are reused and keep per-file state: a failure must not poison the next
    parse, and one file's requirements/constants must not carry over to the next."""
    for _ in range(2):
        with pytest.raises(PDDLError):
            parse_domain(domain_text(pre="(and (free ?x ?y))"), "bad.pddl")
        assert parse_domain(domain_text(), "d.pddl").name == "d"
    with pytest.raises(PDDLError):
        parse_problem(problem_text(init="(free a"), dom, "bad.pddl")
    assert parse_problem(problem_text(), dom).name == "p"
    # A domain without :requirements after one with :typing: typed predicates must be refused.
    untyped = domain_text(pre="(free ?x)").replace(f"(:requirements {FULL_REQ})", "")
    with pytest.raises(PDDLError, match="typing"):
        parse_domain(untyped, "noreq.pddl")
    # A domain without :constants after one with t0: t0 must be unknown.
    no_constants = domain_text(eff="(on ?x t0)").replace("(:constants t0 - table)", "")
    with pytest.raises(PDDLError, match="t0"):
        parse_domain(no_constants, "noconst.pddl")


def test_parse_failure_keeps_tracebacks_on():
    before = getattr(sys, "tracebacklimit", None)
    with pytest.raises(PDDLError):
        parse_domain("(define (domain", "bad.pddl")
    assert getattr(sys, "tracebacklimit", None) == before


def test_builtin_domains_load(blocksworld, gripper):
    assert blocksworld.name == "blocksworld-4ops"
    assert [a.name for a in blocksworld.actions] == ["pickup", "putdown", "stack", "unstack"]
    assert set(blocksworld.predicates) == {"on", "on-table", "clear", "holding", "arm-empty"}
    assert gripper.name == "gripper" and ":typing" in gripper.requirements


def test_action_costs_are_read_as_unit_costs():
    text = """(define (domain c) (:requirements :strips :action-costs) (:predicates (p) (q))
      (:functions (total-cost) - number)
      (:action a :parameters () :precondition (p)
        :effect (and (q) (not (p)) (increase (total-cost) 3))))"""
    d = parse_domain(text, "c.pddl")
    assert d.actions[0].add == (("q",),) and d.actions[0].delete == (("p",),)
    p = parse_problem("(define (problem x) (:domain c) (:init (p) (= (total-cost) 0)) (:goal (q))"
                      " (:metric minimize (total-cost)))", d, "x.pddl")
    assert p.fluents == {"(total-cost)": 0.0} and p.metric == "minimize (total-cost)"
    other = text.replace("(increase (total-cost) 3)", "(increase (fuel) 3)").replace(
        "(total-cost) - number", "(total-cost) (fuel) - number")
    with pytest.raises(PDDLError, match="c.pddl: .*numeric"):
        parse_domain(other, "c.pddl")


def test_an_action_parameter_named_twice_is_one_located_line():
    text = domain_text(pre="(and (free ?x))", eff="(and (on ?x ?x))").replace(
        ":parameters (?x - block ?y - block)", ":parameters (?x - block ?x - block)")
    with pytest.raises(PDDLError) as info:
        parse_domain(text, "d.pddl")
    assert str(info.value) == "d.pddl:7: action move: parameter ?x declared twice"
    assert info.value.kind == "duplicate"


def test_a_utf8_byte_order_mark_is_dropped_when_reading(dom, tmp_path):
    domain_file, problem_file = tmp_path / "d.pddl", tmp_path / "p.pddl"
    domain_file.write_bytes(b"\xef\xbb\xbf" + domain_text().encode())
    problem_file.write_bytes(b"\xef\xbb\xbf" + problem_text().encode())
    assert load_domain(domain_file) == parse_domain(domain_text(), str(domain_file))
    assert load_problem(problem_file, dom) == parse_problem(problem_text(), dom, str(problem_file))
