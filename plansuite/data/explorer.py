"""Random exploration: walks that never revisit a state.

At each step the walk picks uniformly among the applicable actions whose successor it has not
visited yet; it stops when there is none, or after ``max_len`` steps. The goal of a training
trajectory is its end state (the full state), as in the verifier paper.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from plansuite.pddl.simulator import GroundTask


@dataclass(frozen=True)
class Walk:
    states: list[int]  # s_0 .. s_L (bit sets of `task`)
    actions: list[int]  # a_0 .. a_{L-1}

    def __len__(self) -> int:
        return len(self.actions)


def random_walk(task: GroundTask, start: int, rng: random.Random, max_len: int) -> Walk:
    states, actions = [start], []
    visited = {start}
    state = start
    while len(actions) < max_len:
        options = [(a, s) for a, s in task.successors(state) if s not in visited]
        if not options:
            break
        action, state = options[rng.randrange(len(options))]
        visited.add(state)
        states.append(state)
        actions.append(action)
    return Walk(states, actions)
