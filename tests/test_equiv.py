"""Structural and semantic equivalence: renamed, reordered, under-specified and subtly wrong."""

from __future__ import annotations

import random

import pytest

from plansuite.domains import builtin_path, load_builtin
from plansuite.nl2pddl.judging.equivalence import canonical_metric, compare, semantic, structural
from plansuite.nl2pddl.judging.worlds import (
    BLOCKSWORLD,
    GRIPPER,
    SearchBudgetExceeded,
    find_state,
    implied_literals,
    world_for,
)
from plansuite.pddl.parse import parse_domain, parse_problem

BW = load_builtin("blocksworld")
GR = load_builtin("gripper")

TOWER = """(define (problem tower) (:domain blocksworld-4ops)
  (:objects a b c)
  (:init (on-table a) (on-table b) (on-table c) (clear a) (clear b) (clear c) (arm-empty))
  (:goal (and (on a b) (on b c))))"""

BALLS = """(define (problem move) (:domain gripper)
  (:objects rooma roomb - room ball1 ball2 - ball left right - gripper)
  (:init (at-robby rooma) (at ball1 rooma) (at ball2 roomb) (free left) (free right))
  (:goal (and (at ball1 roomb) (at ball2 rooma))))"""


# Blocksworld declaring (total-cost): a problem giving an undeclared function a value is refused.
BW_COSTS = parse_domain(
    builtin_path("blocksworld").read_text()
    .replace("(:requirements :strips)", "(:requirements :strips :action-costs)")
    .replace("(:action pickup", "(:functions (total-cost) - number)\n  (:action pickup", 1),
    "blocksworld-costs.pddl")


def ref(text, domain=BW):
    return parse_problem(text, domain)


def unchecked(text, domain=BW):
    return parse_problem(text, domain, check=False)


def test_identical_text_matches_with_identity_mapping():
    result = compare(ref(TOWER), TOWER, BW)
    assert (result.parse, result.structural, result.semantic) == (True, True, True)
    assert result.mapping == {"a": "a", "b": "b", "c": "c"}


def test_reordered_and_commented_problem_is_structurally_equal():
    text = """; a comment before everything
    (define (problem other-name) (:domain BLOCKSWORLD-4OPS)
      (:objects c a b) ; objects in another order
      (:init (arm-empty) (clear c) (clear b) (clear a)
             (on-table c) (on-table b) (on-table a))
      (:goal (and (on b c) (on a b))))"""
    result = compare(ref(TOWER), text, BW)
    assert result.structural is True and result.semantic is True
    assert result.mapping == {"a": "a", "b": "b", "c": "c"}


def test_renamed_objects_match_and_the_mapping_reads_generated_to_reference():
    text = TOWER.replace("(:objects a b c)", "(:objects x y z)")
    for old, new in (("a", "x"), ("b", "y"), ("c", "z")):
        text = text.replace(f" {old})", f" {new})").replace(f" {old} ", f" {new} ")
    result = compare(ref(TOWER), text, BW)
    assert result.structural is True and result.semantic is True
    assert result.mapping == {"x": "a", "y": "b", "z": "c"}


def test_a_swap_that_is_only_fixed_by_a_non_identity_bijection_is_found():
    # Same object names, but a and c trade roles everywhere: identity fails, a bijection works.
    text = TOWER.replace("(on a b) (on b c)", "(on c b) (on b a)")
    result = compare(ref(TOWER), text, BW)
    assert result.structural is True
    assert result.mapping == {"c": "a", "b": "b", "a": "c"}


def test_under_specified_goal_is_semantic_but_not_structural():
    # The reference states the whole goal state; the candidate only the two `on` facts, which
    # imply the rest (c on the table, a clear, arm empty).
    full = TOWER.replace("(on a b) (on b c)", "(on a b) (on b c) (on-table c) (clear a) (arm-empty)")
    result = compare(ref(full), TOWER, BW)
    assert result.parse is True and result.structural is False and result.semantic is True
    assert "goal has 2 atoms" in result.reasons["structural"]


def test_other_tower_order_is_only_a_renaming_when_the_initial_state_is_symmetric():
    other_order = TOWER.replace("(on a b) (on b c)", "(on b a) (on a c)")
    result = compare(ref(TOWER), other_order, BW)
    assert result.structural is True and result.mapping == {"b": "a", "a": "b", "c": "c"}


ASYM = """(define (problem asym) (:domain blocksworld-4ops)
  (:objects a b c)
  (:init (on-table a) (on b a) (clear b) (on-table c) (clear c) (arm-empty))
  (:goal (and (on a c))))"""


def test_subtly_wrong_goal_fails_both():
    for wrong in (ASYM.replace("(on a c)", "(on c a)"),  # arguments swapped
                  ASYM.replace("(on a c)", "(on a c) (on b a)"),  # an extra, non-implied fact
                  ASYM.replace("(on a c)", "(on b c)")):  # another block moved
        result = compare(ref(ASYM), wrong, BW)
        assert result.parse is True and result.structural is False and result.semantic is False
    two_towers = TOWER.replace("(on a b) (on b c)", "(on a b)")  # under-specified the wrong way
    result = compare(ref(TOWER), two_towers, BW)
    assert result.structural is False and result.semantic is False


def test_wrong_initial_state_is_detected_even_when_goals_match():
    stacked_init = TOWER.replace("(on-table a) (on-table b) (on-table c) (clear a) (clear b) (clear c)",
                                 "(on-table a) (on b a) (on-table c) (clear b) (clear c)")
    result = compare(ref(TOWER), stacked_init, BW)
    assert result.structural is False and result.semantic is False
    assert result.mapping is None


def test_unsatisfiable_goal_is_not_equivalent():
    impossible = TOWER.replace("(on a b) (on b c)", "(on a b) (on c b)")
    result = compare(ref(TOWER), impossible, BW)
    assert result.semantic is False
    assert "cannot hold" in result.reasons["semantic"]


def test_garbage_and_inconsistent_candidates():
    result = compare(ref(TOWER), "(define (problem", BW)
    assert result.parse is False and result.structural is False and result.semantic is False
    assert "parse" in result.reasons
    undeclared = TOWER.replace("(on b c)", "(on b d)")
    result = compare(ref(TOWER), undeclared, BW)
    assert result.parse is True and result.structural is False and result.semantic is False
    assert "not domain-consistent" in result.reasons["semantic"]


def test_gripper_renamed_typed_objects_and_implied_free_grippers():
    renamed = (BALLS.replace("rooma", "kitchen").replace("roomb", "hall")
               .replace("ball1", "red").replace("ball2", "blue"))
    result = compare(ref(BALLS, GR), renamed, GR)
    assert result.structural is True and result.semantic is True
    assert result.mapping["kitchen"] == "rooma" and result.mapping["red"] == "ball1"
    with_free = BALLS.replace("(at ball2 rooma))", "(at ball2 rooma) (free left) (free right))")
    result = compare(ref(BALLS, GR), with_free, GR)
    assert result.structural is False and result.semantic is True


def test_gripper_type_changes_and_wrong_rooms_fail():
    swapped_goal = BALLS.replace("(at ball1 roomb) (at ball2 rooma)", "(at ball1 rooma) (at ball2 roomb)")
    result = compare(ref(BALLS, GR), swapped_goal, GR)
    assert result.structural is False and result.semantic is False  # goal = init now
    retyped = BALLS.replace("rooma roomb - room ball1 ball2 - ball", "rooma roomb ball2 - room ball1 - ball")
    result = compare(ref(BALLS, GR), retyped, GR)
    assert result.structural is False and result.semantic is False
    assert "object counts by type" in result.reasons["structural"]


def test_negative_goals_are_compared_in_completed_form():
    base = BALLS.replace("(:goal (and (at ball1 roomb) (at ball2 rooma)))", "(:goal (and (at ball1 roomb)))")
    # With two rooms, "not in rooma and not carried" is the same as "in roomb".
    negative = BALLS.replace("(:goal (and (at ball1 roomb) (at ball2 rooma)))",
                             "(:goal (and (not (at ball1 rooma)) (not (carry ball1 left)) "
                             "(not (carry ball1 right))))")
    result = compare(ref(base, GR), negative, GR)
    assert result.structural is False and result.semantic is True
    weaker = BALLS.replace("(:goal (and (at ball1 roomb) (at ball2 rooma)))",
                           "(:goal (and (not (at ball1 rooma))))")
    assert compare(ref(base, GR), weaker, GR).semantic is False


def test_numeric_fluents_and_metric_are_compared_canonically():
    costly = TOWER.replace("(:objects", "(:requirements :strips :action-costs) (:objects").replace(
        "(arm-empty))", "(arm-empty) (= (total-cost) 0))").replace("(on b c))))", "(on b c))) (:metric minimize (total-cost)))")
    same = costly.replace("(= (total-cost) 0)", "(= (total-cost) 0.0)").replace(
        "minimize (total-cost)", "minimize ( total-cost )")
    assert compare(ref(costly, BW_COSTS), same, BW_COSTS).structural is True
    other_value = costly.replace("(= (total-cost) 0)", "(= (total-cost) 5)")
    assert compare(ref(costly, BW_COSTS), other_value, BW_COSTS).structural is False
    maximize = costly.replace("minimize", "maximize")
    result = compare(ref(costly, BW_COSTS), maximize, BW_COSTS)
    assert result.structural is False and "metric" in result.reasons["structural"]
    no_metric = TOWER
    assert compare(ref(costly, BW_COSTS), no_metric, BW_COSTS).structural is False


def test_metric_with_object_arguments_follows_the_renaming():
    # (w ?b) is numeric (unsupported in domains), so the reference is read without the checks
    # that would refuse it: this is about renaming inside the metric only.
    p = """(define (problem w) (:domain blocksworld-4ops) (:objects a b)
      (:init (on-table a) (on-table b) (clear a) (clear b) (arm-empty) (= (w a) 1) (= (w b) 2))
      (:goal (and (on a b))) (:metric minimize (+ (w a) (total-cost))))"""
    renamed = p.replace(" a)", " x)").replace(" a ", " x ").replace("(objects x b)", "").replace(
        "(:objects a b)", "(:objects x b)")
    assert compare(unchecked(p), renamed, BW).structural is True
    other = p.replace("(:metric minimize (+ (w a) (total-cost)))", "(:metric minimize (+ (total-cost) (w b)))")
    assert compare(unchecked(p), other, BW).structural is False
    assert canonical_metric("minimize (+ (w b) 1)") == canonical_metric("minimize (+ 1.0 (w b))")


def test_semantic_is_decided_from_the_domain_file_for_domains_without_a_model():
    text = """(define (domain lights) (:requirements :strips) (:predicates (on ?x) (off ?x))
      (:action flip :parameters (?x) :precondition (on ?x) :effect (and (off ?x) (not (on ?x)))))"""
    lights = parse_domain(text)
    problem = "(define (problem p) (:domain lights) (:objects l1 l2) (:init (on l1) (on l2)) (:goal (and (off l1))))"
    result = compare(parse_problem(problem, lights), problem, lights)
    assert world_for(lights) is None
    assert result.structural is True and result.semantic is True
    assert compare(parse_problem(problem, lights), problem.replace("(off l1)", "(off l2)"),
                   lights).semantic is True  # l1 and l2 are interchangeable
    assert compare(parse_problem(problem, lights), problem.replace("(off l1)", "(off l1) (off l2)"),
                   lights).semantic is False


# ---- the world models behind semantic equivalence ---------------------------------------------
def test_implied_literals_complete_blocksworld_goals():
    objects = {x: "object" for x in "abc"}
    pos, neg = implied_literals(BLOCKSWORLD, objects, {("on", "a", "b"), ("on", "b", "c")}, set())
    assert pos == {("on", "a", "b"), ("on", "b", "c"), ("on-table", "c"), ("clear", "a"), ("arm-empty",)}
    assert ("holding", "a") in neg and ("on", "c", "a") in neg
    # Under-specified block that must be on the table: a on b, b clear is impossible, so...
    pos, _ = implied_literals(BLOCKSWORLD, objects, {("clear", "a"), ("clear", "b"), ("clear", "c"),
                                                    ("arm-empty",)}, set())
    assert {("on-table", x) for x in "abc"} <= pos


def test_implied_literals_report_unsatisfiable_goals():
    objects = {x: "object" for x in "ab"}
    assert implied_literals(BLOCKSWORLD, objects, {("on", "a", "b"), ("on", "b", "a")}, set()) is None
    assert implied_literals(BLOCKSWORLD, objects, {("on", "a", "a")}, set()) is None
    assert implied_literals(BLOCKSWORLD, objects, {("holding", "a"), ("arm-empty",)}, set()) is None


def test_gripper_world_assignments_roundtrip():
    objects = {"r1": "room", "r2": "room", "b1": "ball", "b2": "ball", "g1": "gripper", "g2": "gripper"}
    rng = random.Random(0)
    for _ in range(20):
        pos = {("at", "b1", rng.choice(["r1", "r2"]))}
        state = find_state(GRIPPER, objects, pos, set())
        atoms = GRIPPER.atoms(state, objects)
        assert GRIPPER.assignment(atoms, objects) == state
    both_held = {("carry", "b1", "g1"), ("carry", "b2", "g1")}
    assert find_state(GRIPPER, objects, both_held, set()) is None


def test_search_budget_is_an_explicit_outcome():
    objects = {f"b{i}": "object" for i in range(8)}
    everything_covered = {("clear", b) for b in objects}  # no valid state: every block covered
    with pytest.raises(SearchBudgetExceeded):
        find_state(BLOCKSWORLD, objects, set(), everything_covered, budget=500)


def test_structural_and_semantic_verdicts_directly():
    a, b = ref(TOWER), ref(TOWER.replace("(problem tower)", "(problem t2)"))
    assert structural(a, b).equivalent is True  # problem names do not matter
    assert semantic(a, b, BW).mapping == {"a": "a", "b": "b", "c": "c"}
