"""The dataset builder: explorer invariants, verifier examples, instances, leakage, determinism."""

from __future__ import annotations

import json
import math
import random
import shutil
from collections import Counter
from pathlib import Path

import pytest

from plansuite.data.builder import DatasetSpec, build_dataset
from plansuite.data.explorer import random_walk
from plansuite.data.load import (
    leaked_instances,
    load_instances,
    load_manifest,
    load_trajectories,
    load_transitions,
)
from plansuite.data.verifier_recipes import dataset_examples
from plansuite.domains import domain_file
from plansuite.domains.blocksworld import BlocksworldStates
from plansuite.domains.gripper import GripperStates
from plansuite.errors import ConfigError
from plansuite.jsonl import iter_jsonl
from plansuite.pddl.codec import Step, parse_completion, parse_transition
from plansuite.pddl.model import atom_text, parse_atom_text
from plansuite.pddl.simulator import TaskCache
from plansuite.pddl.val import validate

SMALL = DatasetSpec(name="small", train_states=60, val_states=10, test_instances=12,
                    val_instances=8, chunk_size=16)


def _build(domain, sampler, out, seed=0, spec=SMALL, **kwargs):
    text = domain_file("gripper" if domain.name == "gripper" else "blocksworld").read_text()
    return build_dataset(spec, domain, text, sampler, out, seed=seed, progress=lambda _: None,
                         **kwargs)


def _task_for(cache: TaskCache, objects: dict, init_texts: list[str]):
    init = [parse_atom_text(t) for t in init_texts]
    task = cache.get(objects, init)
    return task, task.encode(init_texts)


# ---- the explorer ----------------------------------------------------------------------------
def test_random_walk_invariants(blocksworld, gripper):
    rng = random.Random(0)
    for domain, sampler in ((blocksworld, BlocksworldStates(3, 6)), (gripper, GripperStates(1, 3))):
        cache = TaskCache(domain)
        for _ in range(100):
            objects, init = sampler.sample(rng)
            task = cache.get(objects, init)
            max_len = rng.randint(1, 25)
            walk = random_walk(task, task.encode_atoms(init), rng, max_len)
            assert len(walk.states) == len(walk.actions) + 1 <= max_len + 1
            assert len(set(walk.states)) == len(walk.states)  # never revisits a state
            for s, a, t in zip(walk.states, walk.actions, walk.states[1:], strict=False):
                assert task.is_applicable(s, a) and task.apply(s, a) == t
            if len(walk) < max_len:  # stopped early: every successor was already visited
                assert all(t in walk.states for _, t in task.successors(walk.states[-1]))


def test_random_walk_picks_uniformly_among_unvisited_successors(blocksworld):
    init = {("on-table", "b1"), ("on-table", "b2"), ("on-table", "b3"), ("clear", "b1"),
            ("clear", "b2"), ("clear", "b3"), ("arm-empty",)}
    task = TaskCache(blocksworld).get({f"b{i}": "object" for i in (1, 2, 3)}, init)
    s0 = task.encode_atoms(init)
    rng = random.Random(1)
    first = Counter(task.actions[random_walk(task, s0, rng, 1).actions[0]] for _ in range(3000))
    assert set(first) == {"(pickup b1)", "(pickup b2)", "(pickup b3)"}
    assert all(900 < c < 1100 for c in first.values()), first
    # After (pickup b1) the successor (putdown b1) returns to s0: it must never be chosen.
    second = Counter(task.actions[random_walk(task, s0, rng, 2).actions[1]] for _ in range(600))
    assert not any(a.startswith("(putdown") for a in second)


# ---- what a dataset contains -----------------------------------------------------------------
def test_trajectories_are_valid_walks_with_end_state_goals(tiny_dataset, blocksworld):
    manifest = load_manifest(tiny_dataset)
    max_len = manifest["config"]["dataset"]["max_walk_len"]
    cache = TaskCache(blocksworld)
    n = 0
    for split in ("train", "val"):
        trajs = load_trajectories(tiny_dataset, split)
        assert [t["id"] for t in trajs] == list(range(len(trajs)))
        assert len(trajs) == manifest["counts"][split]["trajectories"]
        for traj in trajs:
            task, s = _task_for(cache, traj["objects"], traj["states"][0])
            assert traj["goal"] == traj["states"][-1]  # goal = the full end state
            assert 1 <= len(traj["actions"]) <= max_len
            assert len({tuple(x) for x in traj["states"]}) == len(traj["states"])  # no repeats
            for state, action, nxt in zip(traj["states"], traj["actions"], traj["states"][1:],
                                          strict=False):
                assert task.decode(s) == state == sorted(state)
                s = task.step(s, action)
                assert isinstance(s, int), f"inapplicable {action} in {state}"
                assert task.decode(s) == nxt
                n += 1
    assert n == manifest["counts"]["train"]["transitions"] + manifest["counts"]["val"]["transitions"]


def test_verifier_examples(tiny_dataset, blocksworld):
    cache = TaskCache(blocksworld)
    trajs = {t["id"]: t for t in load_trajectories(tiny_dataset, "train")}
    kinds, applicable_random = Counter(), 0
    for row in iter_jsonl(tiny_dataset / "train" / "verifier.jsonl"):
        traj = trajs[row["traj"]]
        task, s = _task_for(cache, traj["objects"], traj["states"][row["step"]])
        truth = task.step(s, row["action"])
        assert row["applicable"] == isinstance(truth, int)  # the stored truth is the simulator's
        positive = traj["actions"][row["step"]]
        kinds[row["kind"]] += 1
        if row["kind"] == "positive":
            assert row["action"] == positive and row["label"] == 1
        else:  # negatives are never copies of the positive (a bug of the paper's code)
            assert row["action"] != positive and row["label"] == 0
        if row["kind"] == "hard":
            assert not row["applicable"] and row["action"].split()[0] == positive.split()[0]
        applicable_random += row["kind"] == "random" and row["applicable"]
    counts = load_manifest(tiny_dataset)["counts"]["train"]
    assert kinds["positive"] == kinds["random"] == counts["transitions"] == counts["random_negatives"]
    assert kinds["hard"] == counts["hard_negatives"] > 0.9 * kinds["positive"]
    noise = load_manifest(tiny_dataset)["label_noise"]["random_negatives_applicable_rate"]["train"]
    assert applicable_random == counts["random_negatives_applicable"] > 0
    assert noise == pytest.approx(applicable_random / kinds["random"], abs=1e-6)


def test_verifier_recipes(tiny_dataset):
    random_ = dataset_examples(tiny_dataset, "train", "random")
    relabel = dataset_examples(tiny_dataset, "train", "relabel")
    hard = dataset_examples(tiny_dataset, "train", "hard")
    assert [e.action for e in random_] == [e.action for e in relabel]
    assert all(e.label == int(e.applicable) for e in relabel)
    assert any(e.label == 0 and e.applicable for e in random_)  # the paper's noisy labels
    assert {e.kind for e in hard} == {"positive", "hard"} and not any(
        e.label and not e.applicable for e in hard)
    assert len(dataset_examples(tiny_dataset, "val", "random", limit=5)) == 5
    with pytest.raises(ConfigError, match="unknown"):
        dataset_examples(tiny_dataset, "train", "onpolicy-typo")


def test_transition_records_format_as_paper_text(tiny_dataset):
    records = load_transitions(tiny_dataset, "train", limit=50)
    assert len(records) == 50
    for r in records:
        assert r.prompt.startswith("GOAL:\n") and r.prompt.endswith("\n") and "STATE:\n" in r.prompt
        assert parse_completion(r.completion) == Step(r.action, r.next_state)
        parsed = parse_transition(r.prompt + r.completion)
        assert (parsed.goal, parsed.state) == (r.goal, r.state)


def test_test_instances_come_from_the_second_half_of_walks(tiny_dataset, blocksworld):
    spec = load_manifest(tiny_dataset)["config"]["dataset"]
    cache = TaskCache(blocksworld)
    for split in ("test", "val_instances"):
        instances = {i.id: i for i in load_instances(tiny_dataset / split, blocksworld)}
        index = list(iter_jsonl(tiny_dataset / split / "instances.jsonl"))
        assert sorted(instances) == [row["id"] for row in index]
        assert len(index) == load_manifest(tiny_dataset)["counts"][split]["instances"]
        for row in index:
            problem = instances[row["id"]].problem
            assert sorted(map(atom_text, problem.init)) == row["init"]
            assert sorted(map(atom_text, problem.goal_pos)) == row["goal"]
            assert 1 <= row["walk_len"] <= spec["test_max_walk_len"]
            assert math.ceil(row["walk_len"] / 2) <= row["goal_step"] <= row["walk_len"]
            assert len(row["walk_plan"]) == row["goal_step"]
            task, s = _task_for(cache, problem.objects, row["init"])
            for action in row["walk_plan"]:
                s = task.step(s, action)
            assert task.decode(s) == row["goal"]  # a full-state goal, reached by the walk
    pairs = [(tuple(r["init"]), tuple(r["goal"])) for split in ("test", "val_instances")
             for r in iter_jsonl(tiny_dataset / split / "instances.jsonl")]
    assert len(set(pairs)) == len(pairs)  # test and validation instances are all distinct


def test_walk_plans_of_instances_pass_val(tiny_dataset):
    for row in list(iter_jsonl(tiny_dataset / "test" / "instances.jsonl"))[:5]:
        result = validate(tiny_dataset / "domain.pddl", tiny_dataset / "test" / f"{row['id']}.pddl",
                          row["walk_plan"])
        assert result.valid, result.message


# ---- leakage ---------------------------------------------------------------------------------
def test_leakage_is_detected_and_removed(blocksworld, tmp_path):
    # Three blocks only: 22 states, so training walks cover most (init, goal) pairs and test
    # instances collide with them often. The builder must notice every collision and resample.
    spec = DatasetSpec(name="crowded", train_states=150, val_states=5, test_instances=40,
                       val_instances=10, chunk_size=50)
    manifest = _build(blocksworld, BlocksworldStates(3, 3), tmp_path / "ds", spec=spec)
    leak = manifest["leakage"]
    assert leak["test_pairs_found_in_train"] > 10  # detected ...
    assert leak["after_resampling"] == 0  # ... and removed,
    assert leaked_instances(tmp_path / "ds", "test") == []  # as an independent recount confirms
    assert leaked_instances(tmp_path / "ds", "val_instances") == []


def test_leak_check_catches_a_planted_leak(tiny_dataset, tmp_path, blocksworld, write_pddl):
    copy = tmp_path / "copy"
    shutil.copytree(tiny_dataset, copy)
    traj = load_trajectories(copy, "train")[3]
    victim = load_instances(copy / "test", blocksworld)[0]
    # Make test instance p0000 ask for a training prompt: a trajectory's last prompt state.
    planted = type(victim.problem)(victim.problem.name, blocksworld.name, traj["objects"],
                                   frozenset(parse_atom_text(a) for a in traj["states"][-2]),
                                   frozenset(parse_atom_text(a) for a in traj["goal"]))
    write_pddl(planted, blocksworld, victim.path)
    assert leaked_instances(copy, "test") == [victim.id]


def test_impossible_instance_requests_fail_cleanly(blocksworld, tmp_path):
    spec = DatasetSpec(name="tiny1", train_states=5, val_states=1, test_instances=30,
                       val_instances=0, chunk_size=5)
    with pytest.raises(ConfigError, match="found only .* distinct instances"):
        _build(blocksworld, BlocksworldStates(1, 1), tmp_path / "ds", spec=spec)
    assert list(tmp_path.iterdir()) == []  # nothing half-written, no temp dir left


# ---- determinism and the manifest ------------------------------------------------------------
def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def test_same_seed_same_bytes_any_worker_count(blocksworld, tmp_path):
    sampler = BlocksworldStates(3, 8)
    m1 = _build(blocksworld, sampler, tmp_path / "a", seed=5, workers=2, config={"k": 1})
    m2 = _build(blocksworld, sampler, tmp_path / "b", seed=5, workers=1, config={"k": 1})
    m3 = _build(blocksworld, sampler, tmp_path / "c", seed=6, workers=2, config={"k": 1})
    a, b, c = _files(tmp_path / "a"), _files(tmp_path / "b"), _files(tmp_path / "c")
    manifest_a, manifest_b = a.pop("manifest.json"), b.pop("manifest.json")
    assert a == b  # every data file, byte for byte
    strip = lambda m: {k: v for k, v in json.loads(m).items() if k != "timings_s"}  # noqa: E731
    assert strip(manifest_a) == strip(manifest_b) == {k: v for k, v in m1.items()
                                                      if k != "timings_s"}
    assert m1["timings_s"].keys() == m2["timings_s"].keys()
    assert a["train/trajectories.jsonl"] != c["train/trajectories.jsonl"]  # the seed matters
    assert m3["seed"] == 6


def test_manifest_fields(tiny_dataset):
    m = load_manifest(tiny_dataset)
    assert {"schema_version", "dataset", "domain", "seed", "config", "counts", "timings_s",
            "label_noise", "leakage"} <= set(m)
    assert m["domain"] == "blocksworld-4ops" and m["seed"] == 7
    assert set(m["counts"]) == {"train", "val", "test", "val_instances"}
    assert set(m["leakage"]) == {"test_pairs_found_in_train", "val_instance_pairs_found_in_train",
                                 "after_resampling"}
    assert (tiny_dataset / "domain.pddl").read_text() == domain_file("blocksworld").read_text()
    assert oct((tiny_dataset).stat().st_mode & 0o777) != oct(0o700)  # an ordinary folder


def test_gripper_dataset(gripper, tmp_path):
    manifest = _build(gripper, GripperStates(2, 4), tmp_path / "g")
    cache = TaskCache(gripper)
    for traj in load_trajectories(tmp_path / "g", "train"):
        task, s = _task_for(cache, traj["objects"], traj["states"][0])
        for action in traj["actions"]:
            s = task.step(s, action)
        assert task.decode(s) == traj["goal"]
    assert manifest["counts"]["train"]["trajectories"] == SMALL.train_states
    assert len(load_instances(tmp_path / "g" / "test", gripper)) == SMALL.test_instances


# ---- the output directory --------------------------------------------------------------------
def test_out_dir_rules(blocksworld, tmp_path):
    sampler = BlocksworldStates(3, 4)
    out = tmp_path / "ds"
    _build(blocksworld, sampler, out, seed=1)
    first = _files(out)
    with pytest.raises(ConfigError, match="exists and is not empty"):
        _build(blocksworld, sampler, out, seed=2)
    assert _files(out) == first  # untouched
    _build(blocksworld, sampler, out, seed=2, overwrite=True)
    assert load_manifest(out)["seed"] == 2
    stranger = tmp_path / "home"
    stranger.mkdir()
    (stranger / "thesis.tex").write_text("precious")
    with pytest.raises(ConfigError, match="not a plansuite dataset"):
        _build(blocksworld, sampler, stranger, overwrite=True)
    assert (stranger / "thesis.tex").read_text() == "precious"
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="not a directory"):
        _build(blocksworld, sampler, tmp_path / "file" / "ds")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "file", "home"]  # no temp dirs


class _FailingSampler(BlocksworldStates):
    def sample(self, rng):
        if rng.random() < 0.05:
            raise RuntimeError("boom")
        return super().sample(rng)


def test_a_failed_build_leaves_nothing_behind(blocksworld, tmp_path):
    out = tmp_path / "ds"
    with pytest.raises(RuntimeError, match="boom"):
        _build(blocksworld, _FailingSampler(3, 4), out)
    assert list(tmp_path.iterdir()) == []


def test_spec_validation():
    with pytest.raises(ConfigError, match="dataset.train_states=-1"):
        DatasetSpec(train_states=-1)
    with pytest.raises(ConfigError, match="dataset.max_walk_len=0"):
        DatasetSpec(max_walk_len=0)
    with pytest.raises(ConfigError, match="dataset.chunk_size='10'"):
        DatasetSpec(chunk_size="10")  # type: ignore[arg-type]


def test_loading_something_that_is_not_a_dataset(tmp_path):
    with pytest.raises(ConfigError, match="not a plansuite dataset"):
        load_manifest(tmp_path)
    with pytest.raises(ConfigError, match="not a plansuite dataset"):
        load_transitions(tmp_path, "train")
