"""Probe: the generator's own rollouts relabelled by a planner (DAgger-style expert correction).

A generator trained on shortest paths only ever saw states on those paths; rolled out on its own,
it leaves them and, where it does not know the way, loops (``unstack b c``, ``stack b c``, ...).
This probe rolls a generator export out from the training walks' starts on the *true* states
(the simulator applies each applicable proposed action; an inapplicable or unparseable one ends
the rollout), keeps every visited state that is off the training path and short of the goal,
plans from it to the walk's goal with the dataset's own shortest-path planner (pymimir A*,
:class:`plansuite.data.shortest.ShortestPaths`), and writes each plan's transitions as
``{"prompt", "completion"}`` lines: the ``model.finetune.extra`` file of a generator finetune.

``python -m experiments.elsewhere.relabel_probe EXPORT DATA_DIR OUT.jsonl [--walks N]
[--rollouts R] [--max-steps L] [--temperature T] [--seed S]``

The figures it led to are in ``experiments/elsewhere/RESULTS.md`` (validation folder only).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from plansuite.data.load import SHORTEST_FILE, split_file
from plansuite.data.shortest import ShortestPaths
from plansuite.pddl.codec import format_completion, format_prompt, parse_completion
from plansuite.pddl.parse import load_domain
from plansuite.pddl.simulator import TaskCache


def rollout_states(policy, tasks, starts, goals, max_steps, temperature, seed) -> list[set[int]]:
    """Per walk, the states (bit sets) its rollout visits on the true states, goal states excluded."""
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


def main(argv: list[str] | None = None) -> None:
    from plansuite.models.inference import GeneratorPolicy

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("export")
    ap.add_argument("data_dir")
    ap.add_argument("out")
    ap.add_argument("--walks", type=int, default=5000, help="training walks rolled out (at most all)")
    ap.add_argument("--rollouts", type=int, default=4, help="rollouts per walk")
    ap.add_argument("--max-steps", type=int, default=20)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    domain_path = Path(args.data_dir) / "domain.pddl"
    domain = load_domain(domain_path)
    with open(split_file(args.data_dir, "train", SHORTEST_FILE)) as f:
        walks = [json.loads(line) for line in f]
    random.Random(args.seed).shuffle(walks)
    walks = walks[:args.walks] * args.rollouts
    cache = TaskCache(domain)
    tasks = [cache.get(w["objects"]) for w in walks]
    goals = [t.encode(w["goal"]) for t, w in zip(tasks, walks, strict=True)]
    starts = [t.encode(w["states"][0]) for t, w in zip(tasks, walks, strict=True)]
    policy = GeneratorPolicy.from_export(args.export)
    t0 = time.time()
    visited = rollout_states(policy, tasks, starts, goals, args.max_steps, args.temperature, args.seed)
    off_path = [v - {t.encode(s) for s in w["states"]}
                for v, t, w in zip(visited, tasks, walks, strict=True)]
    print(f"{len(walks)} rollouts in {time.time() - t0:.0f}s: "
          f"{sum(map(len, off_path))} off-path states", flush=True)

    planner, seen, rows = ShortestPaths(domain, domain_path.read_text()), set(), []
    for task, goal, walk, states in zip(tasks, goals, walks, off_path, strict=True):
        names = tuple(sorted(walk["objects"]))
        for start in sorted(states):
            path = planner.plan(task, start, goal, exact=False)
            if path is None:
                continue
            for action, before, after in zip(path.actions, path.states[:-1], path.states[1:],
                                             strict=True):
                if (before, goal, names) not in seen:
                    seen.add((before, goal, names))
                    rows.append({"prompt": format_prompt(walk["goal"], task.decode(before)),
                                 "completion": format_completion(task.actions[action],
                                                                 task.decode(after))})
    Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"wrote {args.out}: {len(rows)} relabelled transitions")


if __name__ == "__main__":
    main()
