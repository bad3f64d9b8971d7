"""Issue 15: PDDL as people write it and broken tools, each a case that used to be silently wrong
(or a traceback) and must now plan like the original or fail with one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from scripted import write_toy_instances

from plansuite.cli import CONF_DIR
from plansuite.data.load import load_instances
from plansuite.domains import builtin_path
from plansuite.errors import ConfigError, PDDLError, PlannerError
from plansuite.nl2pddl.judging.equivalence import compare, compare_file
from plansuite.pddl import fast_downward
from plansuite.pddl.parse import load_problem, parse_domain, parse_problem
from plansuite.pddl.simulator import GroundTask
from plansuite.planning.optimal import InstanceRefused, OptimalLengths

REPO = Path(__file__).resolve().parents[1]
BW_FILE = builtin_path("blocksworld")

LOWER = """(define (problem two) (:domain blocksworld-4ops)
  (:objects b1 b2)
  (:init (on-table b1) (on-table b2) (clear b1) (clear b2) (arm-empty))
  (:goal (and (on b1 b2))))"""
UPPER = """; PDDL is case-insensitive
(DEFINE (PROBLEM TWO) (:DOMAIN BLOCKSWORLD-4OPS)
  (:OBJECTS B1 b2)           ; declared b2 ...
  (:INIT (ON-TABLE B1) (On-Table B2) (CLEAR b1) (Clear B2) (ARM-EMPTY))   ; ... used as B2
  (:GOAL (AND (ON B1 B2))))"""


def one_line(exc: BaseException, path: str) -> str:
    text = str(exc)
    assert "\n" not in text and text.startswith(path) and len(text) < 600, text
    return text


# ---- case ---------------------------------------------------------------------------------------
def test_upper_and_mixed_case_read_like_lower_case(blocksworld):
    domain_upper = parse_domain(BW_FILE.read_text().upper(), "BW.PDDL")
    assert (domain_upper.name, domain_upper.predicates, domain_upper.actions) == \
        (blocksworld.name, blocksworld.predicates, blocksworld.actions)
    lower, upper = parse_problem(LOWER, blocksworld), parse_problem(UPPER, domain_upper)
    assert (upper.objects, upper.init, upper.goal_pos) == (lower.objects, lower.init, lower.goal_pos)
    # The atoms are the domain's: the simulator solves the upper-case instance (it used to find
    # no applicable action for ON-TABLE, and B2 crashed with a KeyError).
    task = GroundTask(domain_upper, upper)
    assert task.check_plan(["(pickup b1)", "(stack b1 b2)"]).valid
    assert task.decode(task.init) == GroundTask(blocksworld, lower).decode(task.init)


def test_upper_case_copy_of_an_instance_folder_plans_exactly_like_the_original(tmp_path):
    original = write_toy_instances(tmp_path / "data", n=6, seed=3)
    copy = tmp_path / "UPPER"
    copy.mkdir()
    for f in sorted(original.glob("*.pddl")):
        body = f.read_text().upper().replace("\n", "  ; A COMMENT (NOT (ON A B))\n\t")
        (copy / f.name).write_text(";; reformatted\n" + body)
    domain_file = tmp_path / "DOMAIN.PDDL"
    domain_file.write_text(BW_FILE.read_text().upper().replace(" ", "   "))
    runs = {}
    for name, folder, dfile in (("original", original, BW_FILE), ("copy", copy, domain_file)):
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            cfg = compose(config_name="eval", overrides=[
                "logger=none", "optimal.enabled=false", "progress_every_s=1000",
                "planner=random_restart", "planner.k=4", "domain=custom", f"domain.file={dfile}",
                f"domain.problems={folder}", f"instances={folder}", f"out_dir={tmp_path / name}"])
        from plansuite.cli.eval import run

        runs[name] = run(cfg)
    records = {name: [json.loads(ln) for ln in (tmp_path / name / "instances.jsonl").read_text()
                      .splitlines()] for name in runs}
    keep = ("id", "outcome", "plan", "attempts", "calls", "first_bad_step", "sim_valid", "val_valid")
    assert [{k: r[k] for k in keep} for r in records["original"]] == \
        [{k: r[k] for k in keep} for r in records["copy"]]
    assert runs["original"]["grr"] == runs["copy"]["grr"] and runs["original"]["outcomes"]["success"] > 0


# ---- invalid input that used to be accepted -----------------------------------------------------
DUPLICATE_PREDICATE = """(define (domain d) (:requirements :strips)
 (:predicates (p ?x) (q ?x) (p ?x ?y))
 (:action a :parameters (?x) :precondition (p ?x) :effect (q ?x)))"""


def test_duplicate_predicate_is_refused_whatever_the_hash_seed(tmp_path):
    script = ("from plansuite.pddl.parse import parse_domain\n"
              "from plansuite.errors import PDDLError\n"
              f"try:\n    parse_domain({DUPLICATE_PREDICATE!r}, 'd.pddl')\n    print('accepted')\n"
              "except PDDLError as e:\n    print(e)\n")
    seen = set()
    for seed in ("0", "1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             env=env, cwd=REPO, timeout=120)
        seen.add(out.stdout.strip())
    assert seen == {"d.pddl:2: predicate p: declared twice (first at line 2)"}


def test_duplicate_action_derived_and_undeclared_function_are_refused(blocksworld):
    twice = DUPLICATE_PREDICATE.replace("(p ?x ?y)", "").replace(
        "(:action a", "(:action A :parameters (?x) :precondition (q ?x) :effect (p ?x))\n (:action a")
    with pytest.raises(PDDLError, match=r"d.pddl:4: action a: declared twice \(first at line 3\)"):
        parse_domain(twice, "d.pddl")
    derived = DUPLICATE_PREDICATE.replace("(p ?x ?y)", "").replace(
        "(:action a", "(:derived (q ?x) (p ?x))\n (:action a")
    with pytest.raises(PDDLError, match=r"d.pddl:3: \(:derived \.\.\.\): derived predicates are not"):
        parse_domain(derived, "d.pddl")
    with pytest.raises(PDDLError, match=r"p.pddl:4: init \(= \(weight b1\) \.\.\.\): function "
                                        "'weight' is not declared"):
        parse_problem(LOWER.replace("(arm-empty)", "(arm-empty)\n (= (weight b1) 3)"), blocksworld,
                      "p.pddl")


def test_actions_without_precondition_or_effect_are_read():
    text = """(define (domain lamp) (:requirements :strips) (:predicates (on ?x) (seen ?x))
      (:action look :parameters (?x) :precondition (on ?x))
      (:action flip :parameters (?x) :effect (on ?x))
      (:action wait :parameters (?x) :precondition () :effect ()))"""
    by_name = {a.name: a for a in parse_domain(text, "lamp.pddl").actions}
    assert by_name["look"].pre_pos == (("on", "?x"),) and by_name["look"].add == ()
    assert by_name["flip"].pre_pos == () and by_name["flip"].add == (("on", "?x"),)
    assert by_name["wait"].pre_pos == () and by_name["wait"].add == () and by_name["wait"].delete == ()


def test_deep_nesting_and_huge_files_are_one_line(blocksworld, tmp_path, monkeypatch):
    deep = LOWER.replace("(:goal (and", "(:goal (and " + "(not " * 10_000 + "(clear b1)"
                         + ")" * 10_000)
    with pytest.raises(PDDLError) as info:
        parse_problem(deep, blocksworld, "deep.pddl")
    assert "nesting deeper than" in one_line(info.value, "deep.pddl")
    monkeypatch.setenv("PLANSUITE_MAX_PDDL_BYTES", "5000")
    big = tmp_path / "big.pddl"
    big.write_text(LOWER + " " * 6000)
    with pytest.raises(PDDLError) as info:
        load_problem(big, blocksworld)
    assert "6,1" in one_line(info.value, str(big)) and "over the 5,000-byte limit" in str(info.value)
    token = LOWER.replace("(clear b1)", "(clear " + "z" * 4000 + ")", 1)
    with pytest.raises(PDDLError) as info:
        parse_problem(token, blocksworld, "tok.pddl")
    assert "is not declared" in one_line(info.value, "tok.pddl")


def test_generated_problem_for_another_domain_is_not_structurally_equal(blocksworld):
    other = LOWER.replace("(:domain blocksworld-4ops)", "(:domain gripper)")
    result = compare(parse_problem(LOWER, blocksworld), other, blocksworld)
    assert result.parse is True and result.structural is False and result.semantic is False
    assert "gripper" in result.reasons["structural"]


def test_non_utf8_generated_file_does_not_parse(blocksworld, tmp_path):
    bad = tmp_path / "gen.pddl"
    bad.write_bytes(LOWER.encode()[:30] + b"\xff\xfe" + LOWER.encode()[30:])
    result = compare_file(parse_problem(LOWER, blocksworld), bad, blocksworld)
    assert result.parse is False and "UTF-8" in result.reasons["parse"]
    with pytest.raises(PDDLError, match="file not found"):  # a missing file is still an error
        compare_file(parse_problem(LOWER, blocksworld), tmp_path / "none.pddl", blocksworld)


def test_an_oversized_generated_file_does_not_parse(blocksworld, tmp_path, monkeypatch):
    big = tmp_path / "gen.pddl"
    big.write_text(LOWER + " " * 3000)
    monkeypatch.setenv("PLANSUITE_MAX_PDDL_BYTES", "2000")
    result = compare_file(parse_problem(LOWER, blocksworld), big, blocksworld)
    assert result.parse is False and "over the 2,000-byte limit" in result.reasons["parse"]
    monkeypatch.delenv("PLANSUITE_MAX_PDDL_BYTES")
    assert compare_file(parse_problem(LOWER, blocksworld), big, blocksworld).structural is True


@pytest.mark.parametrize("limit", [-5, -195, 0, "abc"])
def test_a_limit_below_one_is_refused(blocksworld, tmp_path, limit):
    folder = write_toy_instances(tmp_path / "d", n=2, seed=0)
    with pytest.raises(ConfigError, match=rf"limit={limit!r}: must be a positive integer"):
        load_instances(folder, blocksworld, limit)
    assert len(load_instances(folder, blocksworld, 1)) == 1


def test_a_generator_export_of_another_domain_is_refused(tmp_path):
    from plansuite.domains import load_builtin
    from plansuite.models.export import check_export_domain

    export = tmp_path / "export"
    export.mkdir()
    (export / "plansuite.json").write_text(json.dumps({"format": 1, "kind": "generator",
                                                       "domain": "gripper"}))
    with pytest.raises(ConfigError, match="trained on domain 'gripper'.*'blocksworld-4ops'"):
        check_export_domain(str(export), "generator", load_builtin("blocksworld"), "generator")
    # its own domain is fine (a name in upper case too: the reader writes names in lower case)
    (export / "plansuite.json").write_text(json.dumps({"format": 1, "kind": "generator",
                                                       "domain": "GRIPPER"}))
    check_export_domain(str(export), "generator", load_builtin("gripper"), "generator")


# ---- a broken Fast Downward ---------------------------------------------------------------------
@pytest.fixture()
def fake_planner(tmp_path, monkeypatch):
    """``fake_planner(body) -> path``: a stand-in FD driver (python) selected by the env var."""
    def make(body: str) -> Path:
        path = tmp_path / f"fd-{abs(hash(body))}.py"
        path.write_text("import sys, pathlib\n" + body + "\n")
        monkeypatch.setenv("PLANSUITE_FAST_DOWNWARD", str(path))
        fast_downward.driver.cache_clear()
        fast_downward.identity.cache_clear()
        return path

    yield make
    fast_downward.driver.cache_clear()
    fast_downward.identity.cache_clear()


def test_a_planner_that_exits_0_without_a_plan_is_an_error_and_is_never_cached(
        fake_planner, tmp_path, blocksworld):
    problem = tmp_path / "p.pddl"
    problem.write_text(LOWER)
    fake_planner("sys.exit(0)")
    with pytest.raises(PlannerError) as info:
        fast_downward.solve(BW_FILE, problem)
    assert "exited 0 with neither a plan nor a proof of unsolvability" in str(info.value)
    cache = tmp_path / "cache"
    with pytest.raises(PlannerError) as broken:
        OptimalLengths(BW_FILE, cache).get(problem)
    assert not isinstance(broken.value, InstanceRefused)  # a broken planner ends the run
    assert not cache.exists() or not list(cache.iterdir())
    fake_planner("print('Translator error: bad input'); sys.exit(31)")  # FD's own input error
    with pytest.raises(InstanceRefused, match=r"Fast Downward refused it \(exit 31"):
        OptimalLengths(BW_FILE, cache).get(problem)  # this instance's: recorded, the others go on
    assert not cache.exists() or not list(cache.iterdir())


def test_cached_verdicts_are_keyed_by_the_planner(fake_planner, tmp_path):
    problem = tmp_path / "p.pddl"
    problem.write_text(LOWER)
    cache = tmp_path / "cache"
    fake_planner("sys.exit(11)  # claims a proof of unsolvability")
    assert OptimalLengths(BW_FILE, cache).get(problem) is None
    assert len(list(cache.glob("*.json"))) == 1
    fake_planner("pathlib.Path('sas_plan').write_text('(pickup b1)\\n(stack b1 b2)\\n; cost = 2\\n')")
    assert OptimalLengths(BW_FILE, cache).get(problem) == 2  # not the other planner's verdict
    assert len(list(cache.glob("*.json"))) == 2


def test_a_search_fast_downward_would_always_refuse_is_named_by_its_config_key(tmp_path):
    with pytest.raises(ConfigError, match=r"optimal\.mode='seq-opt-nothing': choose optimal, satisficing"):
        OptimalLengths(BW_FILE, tmp_path, mode="seq-opt-nothing")
    with pytest.raises(ConfigError, match=r"optimal\.time_limit=0"):
        OptimalLengths(BW_FILE, tmp_path, time_limit=0)
    with pytest.raises(ConfigError, match=r"planner\.mode='x'"):
        fast_downward.solve(BW_FILE, tmp_path / "never-read.pddl", mode="x")


def test_a_stand_in_driver_that_cannot_list_aliases_is_not_second_guessed(fake_planner):
    fake_planner("sys.exit(2)")
    fast_downward.check_search("some-alias-of-a-newer-fd", 5)  # it cannot say: FD itself decides


def test_the_nl2pddl_checker_fails_loudly_on_a_broken_planner_and_blames_no_goal(fake_planner):
    from plansuite.nl2pddl.judging.problem_checks import OperationalChecker
    from plansuite.pddl.fast_downward import PlanResult

    fake_planner("sys.exit(0)")
    with pytest.raises(PlannerError, match="neither a plan nor a proof"):
        OperationalChecker(BW_FILE).check(LOWER)  # a correct problem: never "unsolvable"
    # FD's own report of an error stays a diagnostic, but about the planner, not the goal
    checker = OperationalChecker(BW_FILE, planner=lambda d, p: PlanResult("error", None, 0.1,
                                                                          "exit 31: translator"))
    report = checker.check(LOWER)
    [d] = report.diagnostics
    assert report.solvable is None and d.kind == "planner-error" and d.construct == "planner"
    assert d.line is None
