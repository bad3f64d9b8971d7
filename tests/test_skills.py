"""Skill discovery's model-free parts: verified archive entries, de-duplication, the filter rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scripted import write_toy_instances
from test_eval_cli import evaluate_cli, lines

from plansuite.domains import load_builtin
from plansuite.errors import ConfigError
from plansuite.pddl.codec import parse_completion
from plansuite.pddl.parse import load_problem
from plansuite.pddl.simulator import GroundTask
from plansuite.skills.archive import (
    SkillArchive,
    keep_batch,
    skills_from_records,
    solved_items,
    verify_plan,
)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, list[dict]]:
    """A random-restart evaluation on training-like toy instances: successes with true plans."""
    root = tmp_path_factory.mktemp("skills")
    folder = write_toy_instances(root / "train", n=8, seed=4)
    evaluate_cli("planner=random_restart", "planner.k=10", f"instances={folder}",
                 f"out_dir={root / 'run'}")
    records = lines(root / "run" / "instances.jsonl")
    assert sum(r["outcome"] == "success" for r in records) >= 3
    return folder, records


def test_skills_are_replayed_by_the_simulator(run):
    folder, records = run
    domain = load_builtin("blocksworld")
    skills, dropped = skills_from_records(records, domain, source={"round": 0})
    solved = [r for r in records if r["outcome"] == "success" and r["plan"]]
    assert [s.instance for s in skills] == [r["id"] for r in solved] and dropped == []
    for skill, record in zip(skills, solved, strict=True):
        task = GroundTask(domain, load_problem(record["problem"], domain))
        assert skill.actions == tuple(record["plan"]) and skill.source["round"] == 0
        assert skill.states[0] == tuple(task.decode(task.init))
        assert task.encode(skill.states[-1]) & task.goal_pos == task.goal_pos
        pairs = skill.transitions()
        assert len(pairs) == len(skill.actions)
        for (prompt, completion), before, action, after in zip(
                pairs, skill.states[:-1], skill.actions, skill.states[1:], strict=True):
            assert "\n".join(before) in prompt
            step = parse_completion(completion)
            assert step.action == action and step.next_state == after
            assert task.step(task.encode(before), action) == task.encode(after)


def test_unverifiable_plans_and_test_folders_are_refused(run):
    folder, records = run
    domain = load_builtin("blocksworld")
    first = next(r for r in records if r["outcome"] == "success" and r["plan"])
    tampered = [{**first, "plan": first["plan"][:-1]},  # no longer reaches the goal
                {**first, "id": "val-said-no", "val_valid": False},
                {**first, "id": "failed", "outcome": "no_plan"}]
    skills, dropped = skills_from_records(tampered, domain)
    assert skills == [] and dropped == [first["id"], "val-said-no"]
    with pytest.raises(ConfigError, match="never the test set"):
        skills_from_records([first], domain, forbidden=[folder])
    task = GroundTask(domain, load_problem(first["problem"], domain))
    assert verify_plan(task, "x", ["(stack zz yy)"]) is None


def test_archive_deduplicates_persists_and_survives_a_torn_line(run, tmp_path):
    _, records = run
    domain = load_builtin("blocksworld")
    skills, _ = skills_from_records(records, domain)
    path = tmp_path / "skills.jsonl"
    archive = SkillArchive(path)
    assert archive.new(skills + skills) == skills and len(archive) == 0 and not path.exists()
    assert archive.add(skills[:2]) == skills[:2]
    # the same plan for the same problem under another id is the same skill
    again = [type(skills[0])(**{**skills[0].__dict__, "instance": "copy"})]
    assert archive.add(again + skills) == skills[2:]
    assert len(archive) == len(skills) and all(s in archive for s in skills)
    with path.open("a") as f:
        f.write(skills[0].to_json()[:30])  # killed mid-write
    reopened = SkillArchive(path)
    assert list(reopened) == skills and reopened.transitions() == archive.transitions()
    assert [json.loads(line)["instance"] for line in path.read_text().splitlines()[:-1]] == [
        s.instance for s in skills]
    reopened.path.unlink()  # the next append drops the torn line first
    path.write_text("".join(s.to_json() + "\n" for s in skills[1:]) + skills[0].to_json()[:30])
    assert SkillArchive(path).add(skills[:1]) == skills[:1]
    assert [json.loads(line)["instance"] for line in path.read_text().splitlines()] == [
        s.instance for s in skills[1:] + skills[:1]]


def test_keep_batch_accepts_only_a_rise_in_validation_grr():
    base = {(0, f"v{i}"): i < 10 for i in range(40)}
    better = {k: v or k[1] in ("v10", "v11") for k, v in base.items()}
    worse = {k: v and k[1] != "v0" for k, v in base.items()}
    swapped = {k: (v and k[1] != "v0") or k[1] == "v10" for k, v in base.items()}  # 10 -> 10
    assert keep_batch(base, better).accepted
    assert (keep_batch(base, better).baseline, keep_batch(base, better).candidate) == (10, 12)
    assert not keep_batch(base, worse).accepted
    assert not keep_batch(base, swapped).accepted  # a tie keeps the smaller archive
    assert keep_batch(base, better, min_gain=2).accepted
    assert not keep_batch(base, better, min_gain=3).accepted
    assert not keep_batch(base, better, require_significant=True).accepted
    all_new = {k: True for k in base}
    decision = keep_batch(base, all_new, require_significant=True)
    assert decision.accepted and decision.delta_ci[0] > 0 and decision.n == 40
    with pytest.raises(ConfigError, match="different items"):
        keep_batch(base, {**better, (1, "v0"): True})
    with pytest.raises(ConfigError, match="min_gain=0"):
        keep_batch(base, better, min_gain=0)


def test_solved_items_pair_by_seed_and_instance(run):
    _, records = run
    items = solved_items(records, seed=3)
    assert set(items) == {(3, r["id"]) for r in records}
    assert sum(items.values()) == sum(r["outcome"] == "success" for r in records)
