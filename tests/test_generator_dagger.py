"""Relabelling the generator's own rollouts (``model.finetune.dagger``, DAgger-style): rollouts on
the true states, expert plans from the states off the walk's path, mixed into a finetune."""

from __future__ import annotations

import json

import pytest
from test_skills_finetune import base  # noqa: F401 -- fixtures
from test_train_cli import DOMAIN, config, data_dir, offline  # noqa: F401 -- fixtures

from plansuite.cli.train import train_spec
from plansuite.data.generator_recipes import DaggerConfig, expert_transitions
from plansuite.data.load import load_trajectories
from plansuite.data.shortest import ShortestPaths
from plansuite.domains import domain_file
from plansuite.errors import ConfigError
from plansuite.models import generator as generator_kind
from plansuite.models.inference import Generated
from plansuite.models.sampling import dagger_pairs, rollout_states
from plansuite.pddl.codec import format_completion, parse_completion, parse_transition
from plansuite.pddl.model import parse_atom_text
from plansuite.pddl.simulator import TaskCache
from plansuite.training import build

pytest.importorskip("pymimir")


class FirstApplicable:
    """A policy that always proposes the first applicable action: from an empty hand it picks a
    block up and puts it straight back down, a loop off almost every walk's path."""

    def __init__(self):
        self.tasks, self.calls = TaskCache(DOMAIN), 0

    def generate(self, prompts, temperature=1.0, top_p=0.99, seed=None, **_):
        self.calls += 1
        out = []
        for prompt in prompts:
            state_atoms = [a for a in prompt.split("STATE:")[1].splitlines() if a.startswith("(")]
            names = {name.strip("()") for a in state_atoms for name in a.split()[1:]}
            task = self.tasks.get({n: "object" for n in sorted(names)})
            state = task.encode(state_atoms)
            action = task.applicable(state)[0]
            out.append(Generated(format_completion(task.actions[action],
                                                   task.decode(task.apply(state, action))), 1))
        return out


class Garbage:
    def generate(self, prompts, **_):
        return [Generated("ACTION:\n(fly b1)\n", 1) for _ in prompts]


def _walks(data_dir, n=6):  # noqa: F811
    walks = load_trajectories(data_dir, "train")[:n]
    cache = TaskCache(DOMAIN)
    tasks = [cache.get(w["objects"]) for w in walks]
    goals = [t.encode(w["goal"]) for t, w in zip(tasks, walks, strict=True)]
    starts = [t.encode(w["states"][0]) for t, w in zip(tasks, walks, strict=True)]
    return walks, tasks, goals, starts


def test_rollouts_visit_true_states_short_of_the_goal_and_stop_at_a_bad_step(data_dir):  # noqa: F811
    walks, tasks, goals, starts = _walks(data_dir)
    visited = rollout_states(FirstApplicable(), tasks, starts, goals, max_steps=5)
    assert any(visited)
    for goal, states in zip(goals, visited, strict=True):
        assert len(states) <= 5 and all(s & goal != goal for s in states)
    assert rollout_states(Garbage(), tasks, starts, goals, max_steps=5) == [set()] * len(walks)


def test_expert_plans_from_off_path_states_are_correct_steps_toward_the_walks_goal(data_dir):  # noqa: F811
    walks, tasks, goals, starts = _walks(data_dir)
    visited = rollout_states(FirstApplicable(), tasks, starts, goals, max_steps=5)
    planner = ShortestPaths(DOMAIN, domain_file("blocksworld").read_text())
    pairs = expert_transitions(planner, tasks, walks, goals, visited)
    assert pairs and len({p for p, _ in pairs}) == len(pairs)  # each (state, goal) once
    assert pairs == expert_transitions(planner, tasks, walks, goals, visited)  # deterministic
    by_goal = {frozenset(w["goal"]): (t, g) for w, t, g in zip(walks, tasks, goals, strict=True)}
    reached = 0
    for prompt, completion in pairs:
        step = parse_transition(prompt + completion)
        task, goal = by_goal[frozenset(step.goal)]
        state = task.encode(step.state)
        action = task.action_id(step.action)
        assert task.is_applicable(state, action)
        assert task.apply(state, action) == task.encode(step.next_state)  # the simulator's
        reached += task.encode(step.next_state) & goal == goal
    assert reached  # the plans end at the goal


def test_a_relabelling_finetune_mixes_the_relabelled_steps_in_and_writes_them(
        data_dir, base, tmp_path, monkeypatch):  # noqa: F811
    policy = FirstApplicable()
    monkeypatch.setattr(generator_kind.GeneratorPolicy, "from_export", lambda *_a, **_k: policy)
    cfg = config(data_dir, tmp_path, f"model.finetune.init_from={base}",
                 "model.finetune.dagger.rollouts=2", "model.finetune.dagger.walks=5",
                 "model.finetune.dagger.max_steps=4", "model.finetune.examples=60")
    spec = train_spec(cfg)
    _, dm, _, _ = build(spec, DOMAIN)
    rows = [json.loads(line) for line in (tmp_path / "dagger.jsonl").read_text().splitlines()]
    direct = dagger_pairs(FirstApplicable(), data_dir, DOMAIN,
                              DaggerConfig(rollouts=2, walks=5, max_steps=4))
    assert [(r["prompt"], r["completion"]) for r in rows] == direct and rows
    assert policy.calls <= 4
    assert dm.train_counts == {"examples": 60, "original": 30, "extra": 30,
                               "extra_distinct": len(rows)}
    assert all(parse_completion(r["completion"]) for r in rows)


@pytest.mark.parametrize("overrides, match", [
    (["model.finetune.dagger.rollouts=2"], "needs model.finetune.init_from"),
    (["model.finetune.dagger.rollouts=-1"], "needs rollouts >= 0"),
    (["model.finetune.dagger.max_steps=0"], "max_steps >= 1"),
])
def test_bad_dagger_settings_are_one_line_errors(data_dir, tmp_path, overrides, match):  # noqa: F811
    with pytest.raises(ConfigError, match=match):
        build(train_spec(config(data_dir, tmp_path, *overrides)), DOMAIN)


class TypedFirstApplicable:
    """FirstApplicable for a typed domain whose object types follow from their names."""

    def __init__(self, domain, types):
        self.tasks, self.types = TaskCache(domain), types

    def generate(self, prompts, **_):
        out = []
        for prompt in prompts:
            atoms = [a for a in prompt.split("STATE:")[1].splitlines() if a.startswith("(")]
            names = {n.strip("()") for a in atoms for n in a.split()[1:]}
            objects = {n: self.types[n.rstrip("0123456789")] for n in sorted(names)}
            task = self.tasks.get(objects, [parse_atom_text(a) for a in atoms])
            state = task.encode(atoms)
            action = task.applicable(state)[0]
            out.append(Generated(format_completion(task.actions[action],
                                                   task.decode(task.apply(state, action))), 1))
        return out


def test_dagger_on_a_typed_domain_with_static_facts(tmp_path):
    """Logistics' walks carry static facts (in-city) in their states and goals: the rollouts'
    tasks are grounded with them, and the expert's plans reach the goal as written."""
    from plansuite.data.builder import DatasetSpec, build_dataset
    from plansuite.domains import load_builtin
    from plansuite.domains.logistics import LogisticsStates

    domain = load_builtin("logistics")
    spec = DatasetSpec(train_states=12, val_states=4, test_instances=2, val_instances=2,
                       chunk_size=12)
    build_dataset(spec, domain, domain_file("logistics").read_text(), LogisticsStates(1, 2),
                  tmp_path / "ds", seed=1, workers=1, progress=lambda *_: None)
    types = {"apn": "airplane", "apt": "airport", "c": "city", "obj": "package",
             "pos": "location", "tru": "truck"}
    pairs = dagger_pairs(TypedFirstApplicable(domain, types), tmp_path / "ds", domain,
                         DaggerConfig(rollouts=1, max_steps=3))
    assert pairs
    tasks, reached = TaskCache(domain), 0
    for prompt, completion in pairs:
        step = parse_transition(prompt + completion)
        objects = {n: types[n.rstrip("0123456789")] for a in step.state for n in a[1:-1].split()[1:]}
        task = tasks.get(objects, [parse_atom_text(a) for a in step.state])
        state, goal = task.encode(step.state), task.encode(step.goal)
        assert task.apply(state, task.action_id(step.action)) == task.encode(step.next_state)
        reached += task.encode(step.next_state) & goal == goal
    assert reached  # the plans end at the goal, static facts and all
