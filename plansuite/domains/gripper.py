"""Gripper initial states, uniform over all states with n balls (n drawn uniformly)."""

from __future__ import annotations

import random

from plansuite.pddl.model import Atom

GRIPPERS = ("left", "right")


class GripperStates:
    def __init__(self, min_balls: int = 2, max_balls: int = 6, rooms: int = 2):
        if not 1 <= min_balls <= max_balls or rooms < 2:
            raise ValueError("need 1 <= min_balls <= max_balls and rooms >= 2")
        self.min_balls, self.max_balls = min_balls, max_balls
        self.rooms = [f"room{chr(ord('a') + i)}" for i in range(rooms)]

    def sample(self, rng: random.Random) -> tuple[dict[str, str], frozenset[Atom]]:
        n = rng.randint(self.min_balls, self.max_balls)
        balls = [f"ball{i}" for i in range(1, n + 1)]
        r = len(self.rooms)
        # Grippers carry 0, 1 or 2 distinct balls; weight each case by how many states it has.
        weights = [r**n, 2 * n * r ** (n - 1), n * (n - 1) * r ** max(n - 2, 0)]
        carried = rng.choices([0, 1, 2], weights=weights)[0]
        holders = rng.sample(GRIPPERS, carried)
        held = rng.sample(balls, carried)
        atoms: set[Atom] = {("at-robby", rng.choice(self.rooms))}
        atoms.update(("carry", b, g) for b, g in zip(held, holders, strict=True))
        atoms.update(("free", g) for g in GRIPPERS if g not in holders)
        atoms.update(("at", b, rng.choice(self.rooms)) for b in balls if b not in held)
        objects = {**{b: "ball" for b in balls}, **{x: "room" for x in self.rooms},
                   **{g: "gripper" for g in GRIPPERS}}
        return objects, frozenset(atoms)
