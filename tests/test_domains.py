"""Initial-state samplers: every sample is a real state, and samples are uniform over all states."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from plansuite.domains import builtin_path, domain_file, load_builtin
from plansuite.domains.blocksworld import BlocksworldStates, state_count, tower_arrangements
from plansuite.domains.folder import FolderStates
from plansuite.domains.gripper import GripperStates
from plansuite.errors import ConfigError
from plansuite.pddl.model import Problem, atom_text
from plansuite.pddl.simulator import TaskCache

# chi2.ppf(0.999, df): a correct sampler fails with probability 1/1000 (the seeds are fixed).
CHI2_999 = {21: 46.8, 27: 55.48, 124: 178.41}


def _state_space(task, start: int) -> set[int]:
    """Every state reachable from ``start`` (breadth-first)."""
    seen, frontier = {start}, [start]
    while frontier:
        nxt = []
        for s in frontier:
            for _, t in task.successors(s):
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        frontier = nxt
    return seen


def _chi2(counts: Counter, cells: int, total: int) -> float:
    expected = total / cells
    return sum((counts.get(i, 0) - expected) ** 2 / expected for i in range(cells))


def _check_uniform(domain, sampler, cells_expected: int, draws: int, seed: int):
    rng = random.Random(seed)
    cache = TaskCache(domain)
    space, counts = None, Counter()
    for _ in range(draws):
        objects, init = sampler.sample(rng)
        task = cache.get(objects, init)
        s = task.encode_atoms(init)
        if space is None:
            space = sorted(_state_space(task, s))  # all states are mutually reachable here
            assert len(space) == cells_expected
        counts[s] += 1
    index = {s: i for i, s in enumerate(space)}
    assert set(counts) <= set(index), "a sampled state is not a reachable state"
    assert len(counts) == cells_expected  # every state shows up
    stat = _chi2(Counter({index[s]: c for s, c in counts.items()}), cells_expected, draws)
    assert stat < CHI2_999[cells_expected - 1], stat


def test_blocksworld_state_counts_match_the_real_state_space(blocksworld):
    assert [tower_arrangements(m) for m in range(7)] == [1, 1, 3, 13, 73, 501, 4051]  # OEIS A000262
    cache = TaskCache(blocksworld)
    for n in (1, 2, 3, 4):
        objects, init = BlocksworldStates(n, n).sample(random.Random(n))
        task = cache.get(objects, init)
        assert len(_state_space(task, task.encode_atoms(init))) == state_count(n)
    assert state_count(3, allow_holding=False) == 13


@pytest.mark.parametrize(("blocks", "cells", "draws"), [(3, 22, 6600), (4, 125, 12500)])
def test_blocksworld_sampler_is_uniform(blocksworld, blocks, cells, draws):
    _check_uniform(blocksworld, BlocksworldStates(blocks, blocks), cells, draws, seed=blocks)


def test_blocksworld_sampler_block_range_and_no_holding(blocksworld):
    rng = random.Random(0)
    sizes = Counter()
    for _ in range(600):
        objects, init = BlocksworldStates(3, 8, allow_holding=False).sample(rng)
        n = len(objects)
        sizes[n] += 1
        assert objects == {f"b{i}": "object" for i in range(1, n + 1)}
        assert ("arm-empty",) in init and not any(a[0] == "holding" for a in init)
        # Every block is on the table or on exactly one block, and clear iff nothing is on it.
        below = {a[1] for a in init if a[0] == "on"} | {a[1] for a in init if a[0] == "on-table"}
        assert below == set(objects)
        covered = {a[2] for a in init if a[0] == "on"}
        assert {a[1] for a in init if a[0] == "clear"} == set(objects) - covered
    assert set(sizes) == set(range(3, 9)) and min(sizes.values()) > 60  # n uniform in [3, 8]
    with pytest.raises(ValueError):
        BlocksworldStates(4, 3)


def test_gripper_sampler_is_uniform_and_valid(gripper):
    # 2 balls, 2 rooms: robby in 2 rooms x (4 placements + 2*2*2 one carried + 2 both carried).
    _check_uniform(gripper, GripperStates(2, 2, rooms=2), 28, 5600, seed=1)


def test_gripper_sampler_states_are_consistent(gripper):
    rng = random.Random(5)
    cache = TaskCache(gripper)
    for _ in range(300):
        objects, init = GripperStates(1, 6, rooms=3).sample(rng)
        balls = sorted(o for o, t in objects.items() if t == "ball")
        assert sum(a[0] == "at-robby" for a in init) == 1
        for b in balls:  # each ball is in exactly one room or one gripper
            assert sum(a[0] in ("at", "carry") and a[1] == b for a in init) == 1
        for g in ("left", "right"):  # each gripper is free xor carries exactly one ball
            assert (("free", g) in init) + sum(a[0] == "carry" and a[2] == g for a in init) == 1
        task = cache.get(objects, init)
        assert task.applicable(task.encode_atoms(init))  # moving is always possible


def test_folder_states(blocksworld, tmp_path, write_pddl):
    rng = random.Random(0)
    for i in range(3):
        objects, init = BlocksworldStates(3, 4).sample(rng)
        write_pddl(Problem(f"p{i}", blocksworld.name, objects, init, frozenset()), blocksworld,
                   tmp_path / f"p{i}.pddl")
    (tmp_path / "domain.pddl").write_text(domain_file("blocksworld").read_text())
    sampler = FolderStates(blocksworld, tmp_path)
    assert len(sampler.problems) == 3
    seen = {frozenset(map(atom_text, sampler.sample(rng)[1])) for _ in range(50)}
    assert len(seen) == 3
    with pytest.raises(ConfigError, match="instance folder not found"):
        FolderStates(blocksworld, tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no problem files"):
        FolderStates(blocksworld, tmp_path / "empty")


def test_builtin_lookup():
    assert builtin_path("gripper").name == "gripper.pddl"
    assert load_builtin("blocksworld") is load_builtin("blocksworld")
    with pytest.raises(ConfigError, match="unknown built-in domain"):
        builtin_path("sokoban")
