"""Sampling the generator: on dataset transitions (each step judged by the simulator), and in
rollouts on the true states (for relabelling).

:func:`sample_and_judge` serves the generator's validation and the verifier's ``onpolicy`` recipe
(sampled steps labelled by the simulator; the judging, which needs no model, is
:mod:`plansuite.data.judged`). :func:`dagger_pairs` serves the generator's
``model.finetune.dagger`` recipe (:mod:`plansuite.data.generator_recipes`).
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from plansuite.data.generator_recipes import DaggerConfig, expert_transitions
from plansuite.data.judged import JudgedStep, judge_texts
from plansuite.data.load import TRAJECTORY_FILES, TransitionRecord, split_file
from plansuite.data.shortest import ShortestPaths
from plansuite.jsonl import iter_jsonl
from plansuite.pddl.codec import format_prompt, parse_completion
from plansuite.pddl.model import Domain, parse_atom_text
from plansuite.pddl.simulator import TaskCache


def sample_and_judge(policy, tasks: TaskCache, records: list[TransitionRecord], *,
                     samples_per_record: int = 1, temperature: float = 1.0, top_p: float = 0.99,
                     seed: int = 0) -> list[JudgedStep]:
    """``samples_per_record`` completions of each record's prompt, judged by the simulator."""
    prompts = [r.prompt for r in records for _ in range(samples_per_record)]
    repeated = [r for r in records for _ in range(samples_per_record)]
    gens = policy.generate(prompts, temperature=temperature, top_p=top_p, seed=seed)
    return judge_texts(tasks, repeated, [g.text for g in gens])


def rollout_states(policy, tasks, starts: list[int], goals: list[int], max_steps: int,
                   temperature: float = 1.0, seed: int = 0) -> list[set[int]]:
    """Per rollout, the states (bit sets) it visits short of its goal: the policy's proposed
    action is applied by the simulator (the model's predicted next state is ignored); an
    unparseable or inapplicable proposal ends the rollout. All rollouts step in lockstep."""
    state, visited = list(starts), [set() for _ in starts]
    alive = list(range(len(starts)))
    for step in range(max_steps):
        alive = [i for i in alive if state[i] & goals[i] != goals[i]]
        if not alive:
            break
        prompts = [format_prompt(tasks[i].decode(goals[i]), tasks[i].decode(state[i])) for i in alive]
        outs = policy.generate(prompts, temperature=temperature, seed=seed + step)
        kept = []
        for i, out in zip(alive, outs, strict=True):
            parsed = parse_completion(out.text)
            action = tasks[i].action_id(parsed.action) if parsed else None
            if action is None or not tasks[i].is_applicable(state[i], action):
                continue
            state[i] = tasks[i].apply(state[i], action)
            if state[i] & goals[i] != goals[i]:
                visited[i].add(state[i])
            kept.append(i)
        alive = kept
    return visited


def dagger_pairs(policy, data_dir: str | Path, domain: Domain, dagger: DaggerConfig,
                 trajectories: str = "walk", seed: int = 0) -> list[tuple[str, str]]:
    """The ``model.finetune.dagger`` examples: ``dagger.rollouts`` rollouts of ``policy`` from
    each training walk's start toward its goal, every state reached off the walk's path planned
    to the goal by the dataset's shortest-path planner (:func:`expert_transitions`)."""
    walks = list(iter_jsonl(split_file(data_dir, "train", TRAJECTORY_FILES[trajectories])))
    random.Random(seed).shuffle(walks)
    walks = walks[:dagger.walks]
    cache = TaskCache(domain)
    tasks = [cache.get(w["objects"], [parse_atom_text(a) for a in w["states"][0]])  # static facts
             for w in walks]
    goals = [t.encode(w["goal"]) for t, w in zip(tasks, walks, strict=True)]
    starts = [t.encode(w["states"][0]) for t, w in zip(tasks, walks, strict=True)]
    # each walk rolled out dagger.rollouts times: the lists repeated, encoded once
    walks, tasks, goals, starts = (x * dagger.rollouts for x in (walks, tasks, goals, starts))
    t0 = time.monotonic()
    visited = rollout_states(policy, tasks, starts, goals, dagger.max_steps,
                             dagger.temperature, seed)
    t1 = time.monotonic()
    planner = ShortestPaths(domain, (Path(data_dir) / "domain.pddl").read_text())
    pairs = expert_transitions(planner, tasks, walks, goals, visited)
    print(f"[dagger] {len(walks)} rollouts in {t1 - t0:.0f}s, {len(pairs)} expert transitions "
          f"from their off-path states in {time.monotonic() - t1:.0f}s", flush=True)
    return pairs
