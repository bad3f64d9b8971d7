"""Simulator vs VAL on >= 10,000 random valid and corrupted plans over paper-like instances.

Instances are drawn like the paper's: a uniform initial state with 3-8 blocks, a random walk of
1-20 steps, the walk's full end state as the goal. Each instance gets five plans: the walk itself,
the walk with an undo-redo detour inserted (valid, longer), or a corruption (one action replaced
by a random ground action, one dropped, two swapped, truncated, an undeclared object, one extra
action after the goal). Both checkers judge every plan; agreement must be 100 %.

Speed per plan, measured side by side: VAL (one ``Validate`` process per plan, as
:func:`plansuite.pddl.val.validate` runs it) against ``GroundTask.check_plan`` on the instance's
grounded task (how plansuite checks plans: one task per instance, many plans). The ratios that
also charge the simulator for grounding a fresh task, and for parsing the problem file, per plan
are reported too.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections import Counter
from pathlib import Path

from plansuite.data.explorer import random_walk
from plansuite.domains import domain_file, load_builtin
from plansuite.domains.blocksworld import BlocksworldStates
from plansuite.pddl.model import Problem, parse_atom_text, problem_to_pddl
from plansuite.pddl.mutate import KINDS as MUTATIONS
from plansuite.pddl.mutate import mutate_plan
from plansuite.pddl.parse import parse_problem
from plansuite.pddl.simulator import GroundTask, TaskCache
from plansuite.pddl.val import validate

INSTANCES = 2000
PLANS_PER_INSTANCE = 5
TARGET_AGREEMENT = 1.0
TARGET_RATIO = 100.0
KINDS = ["valid", *MUTATIONS]  # "valid" twice: about 40 % of the plans are valid


def main() -> dict:
    domain = load_builtin("blocksworld")
    dfile = domain_file("blocksworld")
    sampler = BlocksworldStates(3, 8)
    cache = TaskCache(domain)
    rng = random.Random(2024)
    kinds, verdicts = Counter(), Counter()
    disagreements: list[dict] = []  # the first 20, for debugging
    n_disagree = 0
    t_val = t_check = t_ground = t_parse = 0.0
    n_plans = 0
    with tempfile.TemporaryDirectory(prefix="plansuite-bench-sim-") as tmp:
        for i in range(INSTANCES):
            objects, init = sampler.sample(rng)
            walker = cache.get(objects, init)
            walk = random_walk(walker, walker.encode_atoms(init), rng, rng.randint(1, 20))
            goal = frozenset(parse_atom_text(a) for a in walker.decode(walk.states[-1]))
            problem = Problem(f"bench-{i}", domain.name, objects, init, goal)
            text = problem_to_pddl(problem, domain)
            pfile = Path(tmp) / f"p{i}.pddl"
            pfile.write_text(text)

            start = time.perf_counter()
            parsed = parse_problem(text, domain, str(pfile))
            t_parse += time.perf_counter() - start
            start = time.perf_counter()
            task = GroundTask(domain, parsed)
            t_ground += time.perf_counter() - start

            states = [task.encode(walker.decode(s)) for s in walk.states]
            base = [walker.actions[a] for a in walk.actions]
            for _ in range(PLANS_PER_INSTANCE):
                kind = rng.choice(KINDS)
                # b9 is undeclared: at most 8 blocks
                plan = mutate_plan(kind, task, states, base, rng, unknown_action="(pickup b9)")
                start = time.perf_counter()
                mine = task.check_plan(plan)
                t_check += time.perf_counter() - start
                start = time.perf_counter()
                theirs = validate(dfile, pfile, plan)
                t_val += time.perf_counter() - start
                n_plans += 1
                kinds[kind] += 1
                verdicts["valid" if theirs.valid else "invalid"] += 1
                n_disagree += mine.valid != theirs.valid
                if mine.valid != theirs.valid and len(disagreements) < 20:
                    disagreements.append({"instance": text, "plan": plan, "kind": kind,
                                          "simulator": mine.reason or "valid",
                                          "val": theirs.message})
            if (i + 1) % 500 == 0:
                print(f"[bench] simulator: {i + 1}/{INSTANCES} instances, {n_plans} plans",
                      flush=True)
    agreement = 1 - n_disagree / n_plans
    val_ms = 1000 * t_val / n_plans
    check_us = 1e6 * t_check / n_plans
    ground_us = 1e6 * t_ground / INSTANCES
    parse_us = 1e6 * t_parse / INSTANCES
    ratio = val_ms * 1000 / check_us
    return {
        "plans": n_plans,
        "instances": INSTANCES,
        "plans_by_kind": dict(sorted(kinds.items())),
        "val_verdicts": dict(sorted(verdicts.items())),
        "disagreeing_plans": n_disagree,
        "agreement": agreement,
        "target_agreement": TARGET_AGREEMENT,
        "disagreements": disagreements,
        "val_ms_per_plan": round(val_ms, 3),
        "simulator_us_per_plan": round(check_us, 2),
        "speed_ratio_val_over_simulator": round(ratio, 1),
        "target_ratio": TARGET_RATIO,
        "meets_targets": agreement == TARGET_AGREEMENT and ratio >= TARGET_RATIO,
        "grounding_us_per_instance": round(ground_us, 1),
        "parse_us_per_instance": round(parse_us, 1),
        "ratio_if_grounding_every_plan": round(val_ms * 1000 / (check_us + ground_us), 1),
        "ratio_if_parsing_and_grounding_every_plan": round(
            val_ms * 1000 / (check_us + ground_us + parse_us), 1),
    }
