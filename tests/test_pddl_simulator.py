"""The bit-set simulator against hand-worked cases, against pymimir and against VAL."""

from __future__ import annotations

import contextlib
import os
import random
import sys

import pytest

from plansuite.data.explorer import random_walk
from plansuite.pddl.model import Problem, parse_atom_text
from plansuite.pddl.mutate import KINDS, mutate_plan
from plansuite.pddl.simulator import GroundTask, Inapplicable, TaskCache
from plansuite.pddl.val import validate


def _task(domain, objects, init, goal=()):
    return GroundTask(domain, Problem("p", domain.name, objects, frozenset(init), frozenset(goal)))


KEYS_OBJECTS = {"r1": "room", "r2": "room", "h2": "hall", "k1": "key"}
KEYS_STATIC = {("link", "home", "r1"), ("link", "r1", "home"), ("link", "home", "r2"),
               ("link", "r2", "home"), ("link", "home", "home"), ("link", "home", "h2"),
               ("opens", "k1", "r1"), ("opens", "k1", "r2"), ("alarm", "r2")}


def test_constants_typing_negation_equality(keys_domain):
    task = _task(keys_domain, KEYS_OBJECTS, KEYS_STATIC | {
        ("at", "home"), ("key-at", "k1", "home"), ("locked", "r1"), ("locked", "r2")})
    names = set(task.actions)
    # Constants are objects of their type: `master` is a key, `home` a hall (a place).
    assert "(take master home)" in names and "(go home r1)" in names
    # Typing: unlock's ?to is a room, so no unlock into a hall; a key is never a place.
    assert not any(a.startswith("(unlock") and a.endswith(" h2)") for a in names)
    assert "(go k1 home)" not in names
    # Equality: (go home home) has a link but ?from = ?to; (stay ?p) needs ?p = home (a constant).
    assert "(go home home)" not in names
    assert [a for a in names if a.startswith("(stay")] == ["(stay home)"]
    # Static facts are decided when grounding: no link home->r3 action, alarm blocks unlock r2.
    assert "(unlock k1 home r2)" not in names and "(unlock k1 home r1)" in names

    s = task.init
    assert [task.actions[a] for a in task.applicable(s)] == [
        "(go home h2)", "(stay home)", "(take k1 home)"]  # r1, r2 locked: negative precondition
    assert task.step(s, "(go home r1)") == Inapplicable("(go home r1)",
                                                         "precondition (not (locked r1)) is false")
    s = task.step(s, "(take k1 home)")
    assert isinstance(task.step(s, "(take k1 home)"), Inapplicable)  # (not (has k1)) now false
    s = task.step(s, "(unlock k1 home r1)")
    s = task.step(s, "(go home r1)")
    assert isinstance(s, int) and "(at r1)" in task.decode(s) and "(at home)" not in task.decode(s)
    assert isinstance(task.step(s, "(return r1)"), Inapplicable)  # needs the constant master
    s2 = task.step(task.step(task.step(s, "(go r1 home)"), "(stay home)"), "(go home r1)")
    assert "(has master)" in task.decode(s2)
    s3 = task.step(s2, "(return r1)")
    assert "(at home)" in task.decode(s3)


def test_step_reports_unknown_and_failing_precondition(blocksworld):
    task = _task(blocksworld, {"a": "object", "b": "object"},
                 {("on-table", "a"), ("on-table", "b"), ("clear", "a"), ("clear", "b"), ("arm-empty",)})
    assert task.step(task.init, "(fly a)").reason.startswith("unknown action")
    assert task.step(task.init, "(pickup c)").reason.startswith("unknown action")
    assert task.step(task.init, "(stack a b)").reason == "precondition (holding a) is false"
    assert task.decode(task.init) == sorted(task.decode(task.init))  # states decode sorted
    assert task.try_encode(["(on a c)"]) is None
    assert task.encode(task.decode(task.init)) == task.init


def test_task_cache_shares_groundings_per_object_set_and_statics(blocksworld, keys_domain):
    cache = TaskCache(blocksworld)
    objs = {"b1": "object", "b2": "object"}
    t1 = cache.get(objs, {("arm-empty",)})
    assert cache.get(dict(reversed(objs.items())), {("holding", "b1")}) is t1  # no statics
    assert cache.get({"b1": "object"}) is not t1
    keys = TaskCache(keys_domain)
    k1 = keys.get(KEYS_OBJECTS, KEYS_STATIC)
    assert keys.get(KEYS_OBJECTS, KEYS_STATIC | {("at", "home")}) is k1  # `at` is fluent
    assert keys.get(KEYS_OBJECTS, KEYS_STATIC - {("alarm", "r2")}) is not k1


def test_task_cache_encodes_atoms_no_action_mentions(keys_domain):
    # Nothing links to r2, so no ground action unlocks it: only a state can contain (locked r2).
    static = {("link", "home", "r1"), ("link", "r1", "home")}
    cache = TaskCache(keys_domain)
    first = cache.get(KEYS_OBJECTS, static | {("at", "home")})
    assert "(locked r2)" not in first.index
    odd = static | {("at", "r1"), ("locked", "r2")}
    task = cache.get(KEYS_OBJECTS, odd)
    assert "(locked r2)" in task.decode(task.encode_atoms(odd))
    assert task.encode_atoms(first.problem.init) is not None  # earlier states still encode
    assert cache.get(KEYS_OBJECTS, odd) is task


def test_check_plan(blocksworld):
    task = _task(blocksworld, {"a": "object", "b": "object"},
                 {("on-table", "a"), ("on-table", "b"), ("clear", "a"), ("clear", "b"), ("arm-empty",)},
                 {("on", "a", "b")})
    ok = task.check_plan(["(pickup a)", "(stack a b)"])
    assert ok.valid and ok.executed == 2 and task.is_goal(ok.final)
    bad = task.check_plan(["(pickup a)", "(stack b a)", "(stack a b)"])
    assert not bad.valid and bad.executed == 1 and bad.reason.startswith("step 2 (stack b a)")
    assert task.check_plan(["(pickup a)"]).reason == "goal not reached"


# ---- pymimir: the same successors from random states ------------------------------------------
@contextlib.contextmanager
def _quiet_c_stdout():
    """pymimir's grounder prints to the C-level stdout; send it to /dev/null."""
    sys.stdout.flush()
    saved, devnull = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    try:
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


@pytest.mark.parametrize("name", ["blocksworld", "gripper", "keys"])
def test_successors_match_pymimir(name, domains, random_problem, write_pddl, tmp_path):
    pymimir = pytest.importorskip("pymimir")
    domain, dfile = domains[name]
    rng = random.Random(f"mimir-{name}")
    compared = 0
    for i in range(12):
        problem = random_problem(name, rng)
        task = GroundTask(domain, problem)
        pfile = write_pddl(problem, domain, tmp_path / f"p{i}.pddl")
        # Grounded mode: pymimir 0.13's lifted mode misses actions with (not (= ?x ?y)).
        with _quiet_c_stdout():
            mproblem = pymimir.Problem(pymimir.Domain(str(dfile)), str(pfile), mode="grounded")
            mstate = mproblem.get_initial_state()
        state = task.init
        for _ in range(8):  # walk a few random steps, comparing every successor on the way
            with _quiet_c_stdout():
                mine = {task.actions[a]: task.decode(s) for a, s in task.successors(state)}
                theirs = {str(a): _atoms(a.apply(mstate), domain)
                          for a in mstate.generate_applicable_actions()}
            assert mine == theirs, f"{name} state {task.decode(state)}"
            compared += len(mine)
            if not mine:
                break
            action = rng.choice(sorted(mine))
            state = task.step(state, action)
            mstate = next(a for a in mstate.generate_applicable_actions()
                          if str(a) == action).apply(mstate)
    assert compared > 50


def _atoms(mstate, domain) -> list[str]:
    # pymimir adds type atoms such as (object b1) and (= x x); keep the domain's predicates.
    texts = (str(a) for a in mstate.get_atoms())
    return sorted(t for t in texts if (parse_atom_text(t) or ("=",))[0] in domain.predicates)


# ---- VAL: the same verdict on random valid and corrupted plans ---------------------------------
def _plans(task: GroundTask, rng: random.Random, n: int):
    """n (goal state, plan, kind) triples: random walks, valid variants and corruptions of them."""
    out = []
    while len(out) < n:
        walk = random_walk(task, task.init, rng, rng.randint(1, 12))
        if not walk.actions:
            return out
        kind = rng.choice(["valid", "valid", *KINDS])
        plan = mutate_plan(kind, task, walk.states, [task.actions[a] for a in walk.actions], rng,
                           unknown_action=rng.choice(["(teleport b1)", "(pickup zz)"]))
        out.append((walk.states[-1], plan, kind))
    return out


@pytest.mark.parametrize("name", ["blocksworld", "gripper", "keys"])
def test_simulator_agrees_with_val(name, domains, random_problem, write_pddl, tmp_path):
    domain, dfile = domains[name]
    rng = random.Random(f"val-{name}")
    verdicts = {True: 0, False: 0}
    for i in range(25):
        base = random_problem(name, rng)
        task = GroundTask(domain, base)
        for j, (goal_state, plan, kind) in enumerate(_plans(task, rng, 4)):
            goal = frozenset(parse_atom_text(t) for t in task.decode(goal_state))
            problem = Problem(base.name, base.domain_name, base.objects, base.init, goal)
            gtask = GroundTask(domain, problem)
            mine = gtask.check_plan(plan)
            theirs = validate(dfile, write_pddl(problem, domain, tmp_path / f"p{i}-{j}.pddl"), plan)
            assert mine.valid == theirs.valid, (kind, plan, mine.reason, theirs.message)
            verdicts[mine.valid] += 1
    assert verdicts[True] >= 20 and verdicts[False] >= 20, verdicts
