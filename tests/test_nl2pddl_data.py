"""NL→PDDL dataset: descriptions cover every fact, abstract scenes are unambiguous, splits by problem."""

from __future__ import annotations

import json
import random
import re
from collections import Counter, defaultdict
from dataclasses import replace

import pytest
from hydra import compose, initialize_config_dir

from plansuite.cli import CONF_DIR
from plansuite.cli.nl2pddl import run as nl2pddl_run
from plansuite.domains import builtin_path, load_builtin
from plansuite.domains.blocksworld import state_atoms
from plansuite.errors import ConfigError
from plansuite.nl2pddl.data import scenes
from plansuite.nl2pddl.data.dataset import (
    NL2PDDLSpec,
    assign_scene_splits,
    build_nl2pddl,
    group_of,
    load_critic_examples,
    load_pairs,
    scenarios,
    scene_key,
)
from plansuite.nl2pddl.data.describe import (
    count,
    describe,
    described_order,
    explicit_clauses,
    listing,
    mention,
)
from plansuite.nl2pddl.judging.equivalence import semantic
from plansuite.nl2pddl.judging.worlds import world_for
from plansuite.pddl.checks import check_problem
from plansuite.pddl.parse import parse_problem

SMALL = {"blocksworld": dict(domain="blocksworld", random_problems=40, abstract_sizes=[3, 4, 6],
                             max_objects=5, target_order="description"),
         "gripper": dict(name="nl2pddl_gripper", domain="gripper", random_problems=40,
                         min_objects=2, max_objects=4, abstract_sizes=[2, 3, 4],
                         target_order="description")}


@pytest.fixture(scope="module", params=sorted(SMALL))
def built(request, tmp_path_factory):
    name = request.param
    spec = NL2PDDLSpec(**SMALL[name])
    out = tmp_path_factory.mktemp(f"nl-{name}") / "ds"
    manifest = build_nl2pddl(spec, load_builtin(name), builtin_path(name).read_text(), out, seed=3,
                             progress=lambda _: None)
    return name, spec, out, manifest


def test_layout_counts_and_reference_problems_are_consistent(built):
    name, spec, out, manifest = built
    domain = load_builtin(name)
    assert manifest["kind"] == "nl2pddl" and (out / "domain.pddl").read_text() == builtin_path(name).read_text()
    total = 0
    for split in ("train", "val", "test"):
        pairs = load_pairs(out, split)
        assert pairs, split
        assert Counter(p.style for p in pairs)["abstract"] > 0, f"{split} has no abstract pairs"
        total += len({p.problem_id for p in pairs})
        for p in pairs:
            problem = parse_problem(p.problem, domain, source=p.id)  # raises if inconsistent
            assert world_for(domain).assignment(problem.init, problem.objects) is not None
            assert not problem.goal_pos <= problem.init  # never trivially solved
            assert p.prompt.startswith("DESCRIPTION: ") and p.completion.endswith("END\n")
    assert total == sum(c["problems"] for c in manifest["counts"].values())


def test_splits_are_by_problem_group(built):
    _, _, out, _ = built
    groups = {s: {p.group for p in load_pairs(out, s)} for s in ("train", "val", "test")}
    problems = {s: {p.problem_id for p in load_pairs(out, s)} for s in ("train", "val", "test")}
    for a, b in (("train", "val"), ("train", "test"), ("val", "test")):
        assert not groups[a] & groups[b] and not problems[a] & problems[b]


def test_build_is_deterministic_and_refuses_to_overwrite(built, tmp_path):
    name, spec, out, _ = built
    again = tmp_path / "again"
    build_nl2pddl(spec, load_builtin(name), builtin_path(name).read_text(), again, seed=3,
                  progress=lambda _: None)
    for rel in ("pairs/train.jsonl", "pairs/test.jsonl", "critic/val.jsonl"):
        assert (again / rel).read_text() == (out / rel).read_text()
    from plansuite.errors import ConfigError

    with pytest.raises(ConfigError, match="not empty"):
        build_nl2pddl(spec, load_builtin(name), "", again, seed=3, progress=lambda _: None)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_explicit_descriptions_state_every_fact(name):
    domain = load_builtin(name)
    spec = NL2PDDLSpec(**SMALL[name])
    rng = random.Random(0)
    for scenario in scenarios(spec, domain, seed=1):
        clauses = explicit_clauses(scenario, random.Random(rng.random()))
        p = scenario.problem
        assert {a for a, _ in clauses["init"]} == p.init and {a for a, _ in clauses["goal"]} == p.goal_pos
        for atom, clause in clauses["init"] + clauses["goal"]:
            for arg in atom[1:]:
                kind = "block" if p.objects[arg] == "object" else p.objects[arg]
                assert mention(arg, kind, scenario.names[kind]) in clause, (atom, clause)
        text = describe(scenario, "explicit", random.Random(5))
        for obj in p.objects:
            assert re.search(rf"\b{re.escape(obj)}\b", text), (obj, text)


def test_generator_targets_follow_the_description_order_of_the_same_problem(built):
    """``target``: the reference's atoms, reordered to the order the explicit description
    states them (the clauses, located in the text, come in increasing position)."""
    name, _, out, _ = built
    domain = load_builtin(name)
    pairs = load_pairs(out, "train")
    reordered = 0
    for p in pairs:
        target, reference = parse_problem(p.target, domain), parse_problem(p.problem, domain)
        assert target == replace(reference, source=target.source)  # same problem, any order
        if p.style == "abstract":
            if name == "gripper":  # sorted atoms already read ball by ball
                assert p.target == p.problem
            else:
                for part in ("init", "goal"):
                    assert_reads_tower_by_tower(section_atoms(p.target, part))
            continue
        reordered += p.target != p.problem
    assert reordered > 0.8 * sum(p.style == "explicit" for p in pairs)


def section_atoms(text: str, part: str) -> list[tuple[str, ...]]:
    """The atoms of ``:init`` or ``:goal`` of a canonical-layout problem text, in text order."""
    lines = text.split("\n")
    start = lines.index({"init": "  (:init", "goal": "  (:goal (and"}[part]) + 1
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("    "))
    return [tuple(line.strip()[1:-1].split()) for line in lines[start:end]]


def assert_reads_tower_by_tower(atoms: list[tuple[str, ...]]) -> None:
    """The held block first; then each tower one run of lines: its ``on-table`` fact, then each
    ``on`` fact resting on the block before, then ``clear`` of its top when stated;
    ``arm-empty`` last."""
    top = None
    for i, atom in enumerate(atoms):
        if atom[0] == "holding":
            assert i == 0, atoms
        elif atom[0] == "on-table":
            top = atom[1]
        elif atom[0] == "on":
            assert atom[2] == top, atoms
            top = atom[1]
        elif atom[0] == "clear":
            assert atom[1] == top, atoms
        else:
            assert atom == ("arm-empty",) == atoms[-1], atoms


def test_tower_order_reads_a_staircase_tower_by_tower():
    state = state_atoms([["b1"], ["b2", "b3"], ["b4", "b5", "b6"]], None)
    got = [" ".join(a) for a in scenes.tower_order(state, [f"b{i}" for i in range(1, 7)])]
    assert got == ["on-table b1", "clear b1", "on-table b2", "on b3 b2", "clear b3",
                   "on-table b4", "on b5 b4", "on b6 b5", "clear b6", "arm-empty"]
    held = state_atoms([["b1"], ["b2", "b3"]], "b4")
    core = [a for a in scenes.tower_order(held, ["b1", "b2", "b3", "b4"]) if a[0] != "clear"]
    assert core == [("holding", "b4"), ("on-table", "b1"), ("on-table", "b2"), ("on", "b3", "b2")]  # the hand first


@pytest.mark.parametrize("name", sorted(SMALL))
def test_described_order_recovers_the_order_the_clauses_were_written_in(name):
    domain = load_builtin(name)
    for k, scenario in enumerate(scenarios(NL2PDDLSpec(**SMALL[name]), domain, seed=2)):
        # describe_explicit draws its clauses first: the same seed gives the same clause order
        clauses = explicit_clauses(scenario, random.Random(k))
        text = describe(scenario, "explicit", random.Random(k))
        order = described_order(scenario, text)
        assert order == {part: [a for a, _ in clauses[part]] for part in ("init", "goal")}, text


def test_explicit_wording_and_order_vary_with_the_seed():
    domain = load_builtin("blocksworld")
    scenario = scenes.blocksworld_random(domain, random.Random(2), 5, 5)
    texts = {describe(scenario, "explicit", random.Random(seed)) for seed in range(8)}
    assert len(texts) == 8


def test_abstract_scenes_are_unambiguous_up_to_renaming():
    # Abstract text depends only on (scenes, sizes); problems with the same abstract meaning must
    # be the same problem up to renaming, i.e. share the semantic group key (and be equivalent).
    for name, sizes, rooms in (("blocksworld", [3, 4, 5, 6], None), ("gripper", [2, 3, 4], [2, 3])):
        domain = load_builtin(name)
        rng = random.Random(0)
        found = (scenes.blocksworld_abstract(domain, sizes, rng) if rooms is None
                 else scenes.gripper_abstract(domain, sizes, rooms, rng))
        by_meaning = defaultdict(list)
        for s in found:
            by_meaning[(s.init_scene, s.goal_scene, json.dumps(s.params, sort_keys=True))].append(s)
        assert all(len(v) == 1 for v in by_meaning.values())  # each combination generated once
        keys = [group_of(s, domain) for s in found]
        assert len(set(keys)) == len(keys)  # and different combinations are different problems
        for s in found[:10]:  # the "core" and "full" goal forms are the same problem
            core = replace(s.problem, goal_pos=frozenset(
                a for a in s.problem.goal_pos if a[0] not in ("clear", "arm-empty", "free")))
            assert semantic(s.problem, core, domain).equivalent is True
            assert not check_problem(s.problem, domain)


def test_critic_examples_are_labelled_and_held_out(built):
    name, _, out, _ = built
    train_pairs = {p.id for p in load_pairs(out, "train")}
    test = load_critic_examples(out, "test")
    assert {e.label for e in test} == {"match", "object", "init", "goal"}
    assert not {e.pair for e in test} & train_pairs
    assert all(e.text.startswith("DESCRIPTION: ") and "\nPROBLEM: (define" in e.text for e in test)


def _compose(overrides):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose(config_name="nl2pddl", overrides=overrides)


def test_nl2pddl_presets_are_their_own_group():
    """``nl2pddl_dataset=gripper`` selects a preset read as ``dataset``; the old spelling says the new."""
    cfg = _compose(["task=data", "nl2pddl_dataset=gripper", "dataset.random_problems=10"])
    assert cfg.dataset.name == "nl2pddl_gripper" and cfg.dataset.random_problems == 10
    from plansuite.cli.hydra_diagnosis import unknown_option_before_start
    assert unknown_option_before_start(["task=data", "dataset=nl2pddl_fuel"]).endswith(
        "write nl2pddl_dataset=fuel")


def test_cli_data_task_and_bad_preset(tmp_path, capsys):
    out = tmp_path / "cli"
    cfg = _compose(["task=data", "nl2pddl_dataset=gripper", f"out_dir={out}", "dataset.random_problems=10",
                    "dataset.abstract_sizes=[2,3]", "dataset.explicit_per_problem=1",
                    "dataset.abstract_per_problem=1"])
    manifest = nl2pddl_run(cfg)
    assert manifest["dataset"] == "nl2pddl_gripper" and (out / "pairs" / "test.jsonl").is_file()
    assert "wrote" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        nl2pddl_run(_compose(["task=data", "+dataset.horizon=3", f"out_dir={tmp_path / 'x'}"]))
    assert "not an NL→PDDL preset" in capsys.readouterr().err


def test_an_interrupted_build_leaves_nothing_behind(tmp_path):
    def die(message):
        raise KeyboardInterrupt

    out = tmp_path / "ds"
    with pytest.raises(KeyboardInterrupt):
        build_nl2pddl(NL2PDDLSpec(random_problems=5, abstract_sizes=[3]), load_builtin("blocksworld"),
                      "", out, seed=0, progress=die)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", sorted(SMALL))
def test_held_out_scenes_are_new_combinations_of_what_training_shows(name):
    """Every held-out abstract scene: its scene pair keeps at least half its sizes in training,
    and its mirror (init and goal swapped, same size) is not held out too."""
    domain = load_builtin(name)
    sizes = {"blocksworld": [3, 4, 5, 6, 7, 8, 9, 10], "gripper": [2, 3, 4, 5, 6]}[name]
    found = scenarios(NL2PDDLSpec(**{**SMALL[name], "abstract_sizes": sizes, "random_problems": 0}),
                      domain, seed=0)
    scenes_of = {group_of(s, domain): scene_key(s) for s in found}
    for seed in range(5):
        out = assign_scene_splits(scenes_of, {"train": .8, "val": .1, "test": .1}, random.Random(seed))
        held = {scenes_of[g] for g, split in out.items() if split != "train"}
        assert len(held) == sum(split != "train" for split in out.values()) >= 4
        for init, goal, size in held:
            assert (goal, init, size) not in held
            family = [g for g, s in scenes_of.items() if s[:2] == (init, goal)]
            assert 2 * sum(out[g] == "train" for g in family) >= len(family)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_counting_curriculum_is_training_only_and_leaves_the_other_problems_as_they_were(name, tmp_path):
    """Towers of stated heights (Blocksworld), rooms with stated counts (Gripper): never a named
    scene, always in training, and adding them changes no other problem, description or split
    (they come last, from a stream of their own)."""
    domain = load_builtin(name)
    key, scene = {"blocksworld": ("heights_problems", scenes.HEIGHTS),
                  "gripper": ("counts_problems", scenes.COUNTS)}[name]
    sizes = {"blocksworld": [3, 4, 5, 6, 7, 8], "gripper": [2, 3, 4, 5, 6]}[name]
    base = NL2PDDLSpec(**{**SMALL[name], "abstract_sizes": sizes})
    spec = replace(base, **{key: 40}, curriculum_per_problem=2)
    outs = {}
    for label, s in (("base", base), ("curriculum", spec)):
        outs[label] = tmp_path / label
        build_nl2pddl(s, domain, builtin_path(name).read_text(), outs[label], seed=1, progress=lambda _: None)
    for split in ("val", "test"):
        assert load_pairs(outs["base"], split) == load_pairs(outs["curriculum"], split)
    train = load_pairs(outs["curriculum"], "train")
    curriculum = [p for p in train if scene in (p.init_scene, p.goal_scene)]
    assert len({p.problem_id for p in curriculum}) >= 30  # a few may be dropped as twins
    assert Counter(p.style for p in curriculum)["abstract"] == 2 * len({p.problem_id for p in curriculum})
    assert [p for p in train if p not in curriculum] == load_pairs(outs["base"], "train")
    held_out = {p.group for split in ("val", "test") for p in load_pairs(outs["curriculum"], split)}
    assert not held_out & {p.group for p in curriculum}
    example = next(p for p in curriculum if p.style == "abstract")
    assert parse_problem(example.target, domain) == parse_problem(example.problem, domain)
    with pytest.raises(ConfigError, match=key):  # the other domain's curriculum is refused
        other = "gripper" if name == "blocksworld" else "blocksworld"
        scenarios(replace(NL2PDDLSpec(**SMALL[other]), **{key: 5}), load_builtin(other), seed=0)


def test_curriculum_scenes_say_what_they_count():
    for s in scenes.blocksworld_heights(load_builtin("blocksworld"), [3, 4, 5, 6, 7, 8], 40, random.Random(0)):
        heights = s.params["heights"]
        assert not scenes.named_heights(heights) and sum(heights) == s.params["n"]
        towers = s.problem.init if s.init_scene == scenes.HEIGHTS else s.problem.goal_pos
        assert sum(a[0] == "on-table" for a in towers) == len(heights)
        assert f" {listing([count(h) for h in heights])} blocks" in describe(s, "abstract", random.Random(0))
    found = scenes.gripper_counts(load_builtin("gripper"), [2, 3, 4, 5, 6], [2, 3], 40, random.Random(0))
    assert len(found) == 40
    for s in found:
        counts, n = s.params["counts"], s.params["n"]
        assert len(set(counts)) > 1 and min(counts) >= 1 and sum(counts) == n
        spread = s.problem.init if s.init_scene == scenes.COUNTS else s.problem.goal_pos
        rooms = sorted(o for o, t in s.problem.objects.items() if t == "room")
        assert [sum(("at", f"ball{i}", room) in spread for i in range(1, n + 1)) for room in rooms] == counts
        text = describe(s, "abstract", random.Random(0))
        assert all(f"{count(c)} ball{'s' if c > 1 else ''} in {room}" in text for c, room in zip(counts, rooms, strict=True))


def test_the_same_dataset_in_every_process(tmp_path):
    """Byte-identical pairs and critic examples under two hash seeds: a frozenset iterated into
    a shuffle made the critic examples' atom order change from process to process."""
    import os
    import subprocess
    import sys

    code = ("import sys; from plansuite.nl2pddl.data.dataset import NL2PDDLSpec, build_nl2pddl; "
            "from plansuite.domains import load_builtin, builtin_path; "
            "build_nl2pddl(NL2PDDLSpec(random_problems=20, abstract_sizes=[3, 4], heights_problems=5), "
            "load_builtin('blocksworld'), builtin_path('blocksworld').read_text(), sys.argv[1], seed=0, "
            "progress=lambda _: None)")
    for hash_seed in ("1", "2"):
        subprocess.run([sys.executable, "-c", code, str(tmp_path / hash_seed)], check=True,
                       env={**os.environ, "PYTHONHASHSEED": hash_seed})
    for part in ("pairs", "critic"):
        for split in ("train", "val", "test"):
            name = f"{part}/{split}.jsonl"
            assert (tmp_path / "1" / name).read_bytes() == (tmp_path / "2" / name).read_bytes(), name
