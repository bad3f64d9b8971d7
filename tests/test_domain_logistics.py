"""The built-in Logistics domain: its sampler's states, its PDDL under both readers, walks, Fast Downward."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from plansuite.data.explorer import random_walk
from plansuite.domains import BUILTIN, builtin_path, load_builtin, state_sampler
from plansuite.domains.logistics import LogisticsStates
from plansuite.errors import ConfigError
from plansuite.pddl.fast_downward import solve
from plansuite.pddl.model import Problem, atom_text, parse_atom_text
from plansuite.pddl.simulator import GroundTask, TaskCache

DEFAULT = {"_target_": "plansuite.domains.logistics.LogisticsStates"}


@pytest.fixture(scope="module")
def logistics():
    return load_builtin("logistics")


def _where(init: frozenset, obj: str) -> list[tuple]:
    return [a for a in init if a[0] in ("at", "in") and a[1] == obj]


def test_logistics_is_built_in(logistics):
    assert "logistics" in BUILTIN and builtin_path("logistics").is_file()
    assert logistics.name == "logistics"
    assert {s.name for s in logistics.actions} == {"load-truck", "load-airplane", "unload-truck",
                                                    "unload-airplane", "drive-truck", "fly-airplane"}
    assert logistics.is_subtype("airport", "place") and logistics.is_subtype("truck", "physobj")


def test_sampler_states_are_valid(logistics):
    sampler = LogisticsStates(1, 4, cities=3, places_per_city=3, trucks_per_city=2, airplanes=2)
    rng = random.Random(0)
    cache = TaskCache(logistics)
    sizes = Counter()
    for _ in range(300):
        objects, init = sampler.sample(rng)
        assert all(o in objects for atom in init for o in atom[1:])
        city_of = {a[1]: a[2] for a in init if a[0] == "in-city"}
        assert set(city_of) == {o for o, t in objects.items() if t in ("airport", "location")}
        assert Counter(city_of.values()) == {"c1": 3, "c2": 3, "c3": 3}
        packages = [o for o, t in objects.items() if t == "package"]
        sizes[len(packages)] += 1
        for p in packages:  # at exactly one place or in exactly one vehicle
            (atom,) = _where(init, p)
            assert objects[atom[2]] in (("truck", "airplane") if atom[0] == "in" else ("airport", "location"))
        for v, t in objects.items():
            if t in ("truck", "airplane"):
                (atom,) = _where(init, v)
                assert atom[0] == "at"
                if t == "airplane":
                    assert objects[atom[2]] == "airport"
                else:  # tru<i>-<j> stays in city c<i>
                    assert city_of[atom[2]] == "c" + v.removeprefix("tru").split("-")[0]
        task = cache.get(objects, init)
        assert task.applicable(task.encode_atoms(init))  # the airplane can always fly
    assert set(sizes) == {1, 2, 3, 4} and min(sizes.values()) > 50


def test_sampler_is_varied_and_uniform_over_a_package_position(logistics):
    # The default map: one package has 7 places to be (4 places, 2 trucks, 1 airplane).
    rng = random.Random(1)
    sampler = LogisticsStates(1, 1)
    states, spots = set(), Counter()
    for _ in range(2100):
        objects, init = sampler.sample(rng)
        states.add(init)
        (atom,) = _where(init, "obj1")
        spots[atom[2]] += 1
    assert len(spots) == 7 and all(250 < c < 350 for c in spots.values()), spots  # 300 expected
    assert len(states) == 7 * 2 * 2 * 2  # package x truck 1 x truck 2 x airplane: all 56 seen


def test_config_builds_the_sampler_and_refuses_bad_sizes(logistics):
    sampler = state_sampler({**DEFAULT, "max_packages": 2}, logistics)
    objects, _ = sampler.sample(random.Random(0))
    assert sorted(objects) == sorted(["c1", "c2", "apt1", "apt2", "pos1", "pos2", "tru1", "tru2",
                                      "apn1", *(o for o in objects if o.startswith("obj"))])
    with pytest.raises(ConfigError, match=r"domain.states \(plansuite.domains.logistics.LogisticsStates\): need cities >= 2"):
        state_sampler({**DEFAULT, "cities": 1}, logistics)
    with pytest.raises(ConfigError, match="min_packages <= max_packages"):
        state_sampler({**DEFAULT, "min_packages": 3, "max_packages": 2}, logistics)


@pytest.mark.parametrize("mode", ["lifted", "grounded"])  # lifted: the shortest paths' mode
def test_pymimir_reads_the_domain_and_agrees_on_successors(logistics, tmp_path, write_pddl, mode):
    pymimir = pytest.importorskip("pymimir")
    rng = random.Random(f"mimir-{mode}")
    mdomain = pymimir.Domain(str(builtin_path("logistics")))
    cache = TaskCache(logistics)
    compared = 0
    for i in range(4):
        objects, init = LogisticsStates(2, 4).sample(rng)
        path = write_pddl(Problem("p", logistics.name, objects, init, frozenset()), logistics,
                          tmp_path / f"p{i}.pddl")
        mstate = pymimir.Problem(mdomain, str(path), mode=mode).get_initial_state()
        task = cache.get(objects, init)
        state = task.encode_atoms(init)
        for _ in range(10):  # a random walk, comparing the applicable actions on the way
            mine = sorted(task.actions[a] for a, _ in task.successors(state))
            theirs = {str(a): a for a in mstate.generate_applicable_actions()}
            assert mine == sorted(theirs), task.decode(state)
            compared += len(mine)
            action = rng.choice(mine)
            state, mstate = task.step(state, action), theirs[action].apply(mstate)
    assert compared > 200


def test_random_walks_move_packages(logistics):
    rng = random.Random(3)
    cache = TaskCache(logistics)
    kinds = Counter()
    for _ in range(30):
        objects, init = LogisticsStates(2, 4).sample(rng)
        task = cache.get(objects, init)
        walk = random_walk(task, task.encode_atoms(init), rng, max_len=20)
        assert len(walk) == 20 and len(set(walk.states)) == 21  # never stuck, never revisits
        for s, a, t in zip(walk.states, walk.actions, walk.states[1:], strict=False):
            assert task.is_applicable(s, a) and task.apply(s, a) == t
            kinds[task.actions[a][1:].split()[0]] += 1
        end = task.decode(walk.states[-1])  # the static map is kept
        assert {atom_text(a) for a in init if a[0] == "in-city"} <= set(end)
    assert set(kinds) == {s.name for s in logistics.actions}


def test_fast_downward_solves_a_sampled_instance_optimally(logistics, tmp_path, write_pddl):
    rng = random.Random(4)
    objects, init = LogisticsStates(3, 3).sample(rng)
    task = TaskCache(logistics).get(objects, init)
    start = task.encode_atoms(init)
    walk = random_walk(task, start, rng, max_len=14)
    goal = frozenset(parse_atom_text(t) for t in task.decode(walk.states[-1]))
    problem = Problem("p", logistics.name, objects, init, goal)
    path = write_pddl(problem, logistics, tmp_path / "p.pddl")
    result = solve(builtin_path("logistics"), path, mode="optimal", time_limit=60)
    assert result.status == "solved", result.message
    check = GroundTask(logistics, problem).check_plan(result.plan)
    assert check.valid, check.reason
    # Optimal: as long as the breadth-first distance in our own simulator.
    frontier, seen, depth = {start}, {start}, 0
    while walk.states[-1] not in frontier:
        frontier = {t for s in frontier for _, t in task.successors(s)} - seen
        seen |= frontier
        depth += 1
    assert len(result.plan) == depth <= len(walk) and depth >= 3



@pytest.mark.slow
def test_cli_data_and_eval_with_fast_downward_lengths(tmp_path):
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "HYDRA_FULL_ERROR": "0"}
    data = tmp_path / "data"
    proc = subprocess.run([str(bin_dir / "plansuite-data"), "domain=logistics", "dataset=tiny",
                           "dataset.shortest_paths=true", f"out_dir={data}", "workers=1"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    shortest = [json.loads(line) for line in (data / "train/shortest.jsonl").read_text().splitlines()]
    assert len(shortest) > 250 and sum(len(t["actions"]) for t in shortest) > 500
    proc = subprocess.run([str(bin_dir / "plansuite-eval"), "planner=random_restart", "domain=logistics",
                           f"instances={data}/test", "limit=6", "logger=none", "optimal.enabled=true",
                           f"out_dir={tmp_path / 'eval'}"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    results = json.loads((tmp_path / "eval/results.json").read_text())
    assert results["n_instances"] == 6 and 0 <= results["grr"] <= 1
    records = [json.loads(line) for line in (tmp_path / "eval/instances.jsonl").read_text().splitlines()]
    walks = {r["id"]: r for r in map(json.loads, (data / "test/instances.jsonl").read_text().splitlines())}
    for r in records:  # FD's optimal length never exceeds the walk's own plan
        assert 1 <= r["optimal_length"] <= len(walks[r["id"]]["walk_plan"])
