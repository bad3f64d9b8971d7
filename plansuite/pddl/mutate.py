"""Random valid and corrupted variants of a plan, for cross-checking plan validators.

The cross-checks (tests, ``experiments/bench/bench_simulator.py``) judge each variant with the
simulator and with VAL and demand the same verdict; a variant's ``kind`` says how it was made, not
whether it is valid (a replaced action can happen to work, an appended one to keep the goal).

>>> import random
>>> from plansuite.domains import load_builtin
>>> from plansuite.pddl.model import Problem
>>> task = GroundTask(load_builtin("blocksworld"), Problem("p", "blocksworld-4ops",
...     {"a": "object"}, frozenset({("on-table", "a"), ("clear", "a"), ("arm-empty",)}),
...     frozenset({("holding", "a")})))
>>> states = [task.init, task.step(task.init, "(pickup a)")]
>>> mutate_plan("detour", task, states, ["(pickup a)"], random.Random(0))
['(pickup a)', '(putdown a)', '(pickup a)']
"""

from __future__ import annotations

import random

from plansuite.pddl.simulator import GroundTask

KINDS = ("valid", "detour", "replace", "drop", "swap", "truncate", "unknown", "extra")


def mutate_plan(kind: str, task: GroundTask, states: list[int], plan: list[str],
                rng: random.Random, unknown_action: str = "(pickup zz9)") -> list[str]:
    """A variant of ``plan`` (valid, visiting ``states``): see :data:`KINDS`.

    ``valid``: unchanged; ``detour``: an action and its undo inserted (still valid); ``replace``:
    one action replaced by a random ground action; ``drop``/``swap``/``truncate``; ``unknown``:
    ``unknown_action`` (an undeclared action or object) inserted; ``extra``: one applicable action
    appended after the end.
    """
    plan = list(plan)
    if kind == "detour":
        return _detour(task, states, plan, rng)
    if kind == "replace" and plan:
        plan[rng.randrange(len(plan))] = rng.choice(task.actions)
    elif kind == "drop" and plan:
        del plan[rng.randrange(len(plan))]
    elif kind == "swap" and len(plan) > 1:
        i, j = rng.sample(range(len(plan)), 2)
        plan[i], plan[j] = plan[j], plan[i]
    elif kind == "truncate" and plan:
        plan = plan[: rng.randrange(len(plan))]
    elif kind == "unknown":
        plan.insert(rng.randrange(len(plan) + 1), unknown_action)
    elif kind == "extra" and task.applicable(states[-1]):
        plan.append(task.actions[rng.choice(task.applicable(states[-1]))])
    elif kind not in KINDS:
        raise ValueError(f"unknown plan mutation {kind!r} (choose from {', '.join(KINDS)})")
    return plan


def _detour(task: GroundTask, states: list[int], plan: list[str], rng: random.Random) -> list[str]:
    """Insert ``a, undo(a)`` before a random step: still valid, two steps longer."""
    i = rng.randrange(len(states))
    options = task.applicable(states[i])
    rng.shuffle(options)
    for a in options:
        after = task.apply(states[i], a)
        undo = [b for b in task.applicable(after) if task.apply(after, b) == states[i]]
        if undo:
            return plan[:i] + [task.actions[a], task.actions[undo[0]]] + plan[i:]
    return plan
