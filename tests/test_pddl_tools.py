"""IPC plans, VAL (including a missing or broken VAL being an error) and Fast Downward."""

from __future__ import annotations

import pytest

from plansuite.errors import PDDLError, PlannerError, ValidatorError
from plansuite.pddl import fast_downward, val
from plansuite.pddl.model import Problem
from plansuite.pddl.parse import load_problem
from plansuite.pddl.plans import format_plan, parse_plan, read_plan, write_plan
from plansuite.pddl.simulator import GroundTask

TWO_BLOCKS = Problem("two", "blocksworld-4ops", {"a": "object", "b": "object"},
                     frozenset({("on-table", "a"), ("on-table", "b"), ("clear", "a"), ("clear", "b"),
                                ("arm-empty",)}), frozenset({("on", "a", "b")}))


@pytest.fixture
def two_blocks(tmp_path, blocksworld, write_pddl):
    return write_pddl(TWO_BLOCKS, blocksworld, tmp_path / "two.pddl")


def test_plan_round_trip(tmp_path):
    plan = ["(pickup a)", "(stack a b)"]
    path = write_plan(plan, tmp_path / "plan")
    assert read_plan(path) == plan
    assert parse_plan(format_plan([])) == []
    assert parse_plan("; only a comment\n\n(PutDown A)  ; trailing\n") == ["(putdown a)"]


def test_plan_errors_name_file_and_line(tmp_path):
    with pytest.raises(PDDLError, match=r"<plan>:2: plan step: not an action: 'stack a b'"):
        parse_plan("(pickup a)\nstack a b\n")
    with pytest.raises(PDDLError, match="file not found"):
        read_plan(tmp_path / "missing")
    with pytest.raises(PDDLError, match="a directory, not a file"):
        read_plan(tmp_path)


def test_val_valid_and_invalid(builtin_file, two_blocks):
    domain = builtin_file("blocksworld")
    assert val.validate(domain, two_blocks, ["(pickup a)", "(stack a b)"]).valid
    bad = val.validate(domain, two_blocks, ["(pickup a)", "(stack b a)"])
    assert not bad.valid and "unsatisfied precondition" in bad.message
    assert not val.validate(domain, two_blocks, []).valid  # goal not satisfied
    # VAL exits 255 on an unknown action and 0 (!) on an untyped-domain unknown object; both invalid.
    assert not val.validate(domain, two_blocks, ["(fly a)"]).valid


def test_val_unknown_objects_in_typed_domain(builtin_file, gripper, write_pddl, tmp_path):
    problem = Problem("g", "gripper", {"ball1": "ball", "rooma": "room", "roomb": "room",
                                       "left": "gripper", "right": "gripper"},
                      frozenset({("at-robby", "rooma"), ("at", "ball1", "rooma"), ("free", "left"),
                                 ("free", "right")}), frozenset({("at-robby", "roomb")}))
    pfile = write_pddl(problem, gripper, tmp_path / "g.pddl")
    domain = builtin_file("gripper")
    assert val.validate(domain, pfile, ["(move rooma roomb)"]).valid
    assert not val.validate(domain, pfile, ["(move rooma roomz)"]).valid
    assert not val.validate(domain, pfile, ["(teleport ball1)"]).valid


def test_val_plan_file_and_missing_files(builtin_file, two_blocks, tmp_path):
    domain = builtin_file("blocksworld")
    plan_file = write_plan(["(pickup a)", "(stack a b)"], tmp_path / "sas_plan")
    assert val.validate(domain, two_blocks, plan_file).valid
    assert val.validate(domain, two_blocks, str(plan_file)).valid
    with pytest.raises(PDDLError, match="plan: file not found"):
        val.validate(domain, two_blocks, str(tmp_path / "nope"))
    with pytest.raises(PDDLError, match="problem: file not found"):
        val.validate(domain, tmp_path / "nope.pddl", [])


def test_missing_val_is_an_error_not_invalid(monkeypatch, builtin_file, two_blocks, tmp_path):
    monkeypatch.setenv("PLANSUITE_VAL", str(tmp_path / "no-such-Validate"))
    val.validate_binary.cache_clear()
    try:
        with pytest.raises(ValidatorError, match="not an executable VAL"):
            val.validate(builtin_file("blocksworld"), two_blocks, ["(pickup a)"])
        # A VAL that runs but says nothing we understand (crash, wrong binary) is an error too.
        for name, body in (("silent", "exit 1"), ("segv", "kill -SEGV $$")):
            fake = tmp_path / name
            fake.write_text(f"#!/bin/sh\n{body}\n")
            fake.chmod(0o755)
            monkeypatch.setenv("PLANSUITE_VAL", str(fake))
            val.validate_binary.cache_clear()
            with pytest.raises(ValidatorError, match="VAL (could not check|crashed)"):
                val.validate(builtin_file("blocksworld"), two_blocks, ["(pickup a)"])
    finally:
        val.validate_binary.cache_clear()


def test_fast_downward_optimal_and_satisficing(builtin_file, blocksworld, two_blocks):
    domain = builtin_file("blocksworld")
    task = GroundTask(blocksworld, load_problem(two_blocks, blocksworld))
    for mode in ("optimal", "satisficing"):
        result = fast_downward.solve(domain, two_blocks, mode=mode, time_limit=20)
        assert result.solved and result.status == "solved", result.message
        assert result.plan == ["(pickup a)", "(stack a b)"]
        assert task.check_plan(result.plan).valid


def test_fast_downward_unsolvable_and_bad_input(builtin_file, blocksworld, write_pddl, tmp_path):
    domain = builtin_file("blocksworld")
    impossible = Problem("imp", TWO_BLOCKS.domain_name, TWO_BLOCKS.objects, TWO_BLOCKS.init,
                         frozenset({("on", "a", "b"), ("on", "b", "a")}))
    result = fast_downward.solve(domain, write_pddl(impossible, blocksworld, tmp_path / "imp.pddl"),
                                 time_limit=20)
    assert result.status == "unsolvable" and result.plan is None
    garbage = tmp_path / "garbage.pddl"
    garbage.write_text("(define (problem")
    broken = fast_downward.solve(domain, garbage, time_limit=20)
    assert broken.status == "error" and broken.message.startswith("exit ")


def test_missing_fast_downward_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PLANSUITE_FAST_DOWNWARD", str(tmp_path / "fast-downward.py"))
    fast_downward.driver.cache_clear()
    try:
        with pytest.raises(PlannerError, match="no such file"):
            fast_downward.solve("d.pddl", "p.pddl")
    finally:
        fast_downward.driver.cache_clear()
