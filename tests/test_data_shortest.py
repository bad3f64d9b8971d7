"""Hindsight shortest paths (``dataset.shortest_paths``, ``model.trajectories=shortest``)."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from plansuite.data.builder import DatasetSpec, build_dataset
from plansuite.data.explorer import random_walk
from plansuite.data.load import load_transitions, pair_key
from plansuite.data.shortest import SHORTEST_FILE, ShortestPaths, drop_leaked
from plansuite.domains import builtin_path, load_builtin
from plansuite.domains.blocksworld import BlocksworldStates
from plansuite.domains.gripper import GripperStates
from plansuite.errors import ConfigError, PDDLError
from plansuite.jsonl import iter_jsonl
from plansuite.pddl.parse import parse_domain
from plansuite.pddl.simulator import TaskCache

pytest.importorskip("pymimir")

SPEC = dict(name="tiny", train_states=40, val_states=8, walks_per_state=1, max_walk_len=20,
            test_instances=10, val_instances=10, test_max_walk_len=30, chunk_size=20)


def build(tmp_path, name: str, shortest: bool, domain: str = "blocksworld"):
    sampler = BlocksworldStates(min_blocks=3, max_blocks=5) if domain == "blocksworld" \
        else GripperStates()
    out = tmp_path / name
    build_dataset(DatasetSpec(**SPEC, shortest_paths=shortest), load_builtin(domain),
                  builtin_path(domain).read_text(), sampler, out, seed=3, workers=1,
                  progress=lambda _: None)
    return out


def test_shortest_paths_keep_walks_instances_and_endpoints(tmp_path):
    walk, short = build(tmp_path, "walk", False), build(tmp_path, "short", True)
    for name in ("train/trajectories.jsonl", "train/verifier.jsonl", "val/trajectories.jsonl",
                 "test/instances.jsonl", "test/p0003.pddl", "val_instances/instances.jsonl"):
        assert (walk / name).read_bytes() == (short / name).read_bytes(), name
    assert not (walk / "train" / SHORTEST_FILE).exists()
    domain = load_builtin("blocksworld")
    tasks = TaskCache(domain)
    walks = {t["id"]: t for t in iter_jsonl(short / "train" / "trajectories.jsonl")}
    paths = list(iter_jsonl(short / "train" / SHORTEST_FILE))
    assert len(paths) == len(walks)
    saved = 0
    for path in paths:
        original = walks[path["id"]]
        assert path["states"][0] == original["states"][0]
        assert path["goal"] == original["goal"] == path["states"][-1]
        assert len(path["actions"]) <= len(original["actions"])
        saved += len(original["actions"]) - len(path["actions"])
        # Every step is the simulator's: applicable, and the recorded next state is the true one.
        init = [tuple(a[1:-1].split()) for a in path["states"][0]]
        task = tasks.get(path["objects"], init)
        state = task.encode_atoms(init)
        for action, nxt in zip(path["actions"], path["states"][1:], strict=True):
            state = task.step(state, action)
            assert isinstance(state, int), (path["id"], action)
            assert task.decode(state) == nxt
    manifest = json.loads((short / "manifest.json").read_text())
    assert manifest["counts"]["train"]["shortest_steps_saved"] == saved > 0


def test_plans_are_optimal_on_a_hand_case():
    """Reversing a 3-tower takes 6 actions, the optimum: unstack a b, putdown a, unstack b c,
    stack b a, pickup c, stack c b."""
    domain = load_builtin("blocksworld")
    planner = ShortestPaths(domain, builtin_path("blocksworld").read_text())
    objects = {b: "object" for b in ("a", "b", "c")}
    init = {("on", "a", "b"), ("on", "b", "c"), ("on-table", "c"), ("clear", "a"),
            ("arm-empty",)}
    goal = {("on", "c", "b"), ("on", "b", "a"), ("on-table", "a"), ("clear", "c"),
            ("arm-empty",)}
    task = TaskCache(domain).get(objects, init)
    plan = planner.plan(task, task.encode_atoms(init), task.encode_atoms(goal))
    assert plan is not None and len(plan) == 6
    assert task.check_plan([task.actions[a] for a in plan.actions], task.encode_atoms(init)).final \
        == task.encode_atoms(goal)


def test_shorten_never_lengthens_and_reaches_the_same_end():
    domain = load_builtin("gripper")
    planner = ShortestPaths(domain, builtin_path("gripper").read_text())
    tasks, rng, stats = TaskCache(domain), random.Random(0), Counter()
    sampler = GripperStates()
    for _ in range(10):
        objects, init = sampler.sample(rng)
        task = tasks.get(objects, init)
        walk = random_walk(task, task.encode_atoms(init), rng, 15)
        short = planner.shorten(task, walk, stats)
        assert short.states[0] == walk.states[0] and short.states[-1] == walk.states[-1]
        assert len(short) <= len(walk)
    assert stats["shortest_steps_saved"] > 0


def test_drop_leaked_removes_paths_through_an_instance_prompt(tmp_path):
    path = tmp_path / SHORTEST_FILE
    rows = [{"id": 0, "goal": ["(g)"], "states": [["(a)"], ["(b)"], ["(g)"]], "actions": ["x", "y"]},
            {"id": 1, "goal": ["(g)"], "states": [["(c)"], ["(g)"]], "actions": ["z"]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert drop_leaked(path, {pair_key(["(b)"], ["(g)"])}) == 1
    assert [json.loads(line)["id"] for line in path.read_text().splitlines()] == [1]


def test_generator_reads_shortest_paths_or_says_how_to_build_them(tmp_path):
    walk, short = build(tmp_path, "walk", False), build(tmp_path, "short", True)
    n_walk = len(load_transitions(short, "train"))
    n_short = len(load_transitions(short, "train", trajectories="shortest"))
    assert 0 < n_short < n_walk
    with pytest.raises(ConfigError, match="shortest_paths=true"):
        load_transitions(walk, "train", trajectories="shortest")
    with pytest.raises(ConfigError, match="choose from walk, shortest"):
        load_transitions(short, "train", trajectories="optimal")


def test_a_domain_pymimir_refuses_is_one_error_not_a_hung_pool(tmp_path):
    # The suite accepts (not (= ..)) under :equality alone; pymimir wants :negative-preconditions.
    # Refused inside the pool's worker initializer, the build respawned workers forever.
    text = builtin_path("gripper").read_text().replace(" :negative-preconditions)", ")")
    domain = parse_domain(text, source="strict.pddl")
    with pytest.raises(PDDLError, match=r"strict\.pddl: domain gripper: .*pymimir cannot read it: .*requirement"):
        build_dataset(DatasetSpec(**SPEC, shortest_paths=True), domain, text, GripperStates(),
                      tmp_path / "out", seed=0, workers=2, progress=lambda _: None)
    assert not (tmp_path / "out").exists()


_PLANS_SCRIPT = """
import json, random
from plansuite.data.explorer import random_walk
from plansuite.data.shortest import ShortestPaths
from plansuite.domains import builtin_path, load_builtin
from plansuite.domains.blocksworld import BlocksworldStates
from plansuite.pddl.simulator import TaskCache
domain = load_builtin("blocksworld")
planner = ShortestPaths(domain, builtin_path("blocksworld").read_text())
rng, tasks, sampler, plans = random.Random(0), TaskCache(domain), BlocksworldStates(3, 7), []
for _ in range(30):
    objects, init = sampler.sample(rng)
    task = tasks.get(objects, init)
    walk = random_walk(task, task.encode_atoms(init), rng, 20)
    path = planner.plan(task, walk.states[0], walk.states[-1])
    plans.append(None if path is None else [task.actions[a] for a in path.actions])
print(json.dumps(plans))
"""


def test_plans_are_the_same_in_every_process():
    """Equally short plans are many; the one chosen must not depend on the process (grounded
    pymimir chose by memory address: two runs, two plan sets), or ``shortest.jsonl`` and every
    generator trained on it change from run to run."""
    import os
    import subprocess
    import sys

    runs = [subprocess.run([sys.executable, "-c", _PLANS_SCRIPT], capture_output=True, text=True,
                           check=True, env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout
            for seed in (1, 2, 3)]
    plans = json.loads(runs[0])
    assert sum(p is not None for p in plans) == len(plans)
    assert runs[1] == runs[0] and runs[2] == runs[0]
