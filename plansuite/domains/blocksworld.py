"""Blocksworld initial states drawn uniformly over all states with n blocks.

A state is a set of towers (ordered stacks) over the blocks on the table or in towers, plus
either an empty arm or one held block. With ``T(m)`` the number of ways to arrange m labelled
blocks into towers (OEIS A000262), there are ``T(n) + n·T(n-1)`` states with n blocks; we draw
one of them uniformly by exact counting.
"""

from __future__ import annotations

import functools
import math
import random

from plansuite.pddl.model import Atom


@functools.cache
def tower_arrangements(m: int) -> int:
    """Ways to arrange m labelled blocks into a set of towers.

    >>> [tower_arrangements(m) for m in range(6)]
    [1, 1, 3, 13, 73, 501]
    """
    # The tower holding the first block has k blocks: choose its k-1 companions, order all k.
    return 1 if m == 0 else sum(
        math.comb(m - 1, k - 1) * math.factorial(k) * tower_arrangements(m - k)
        for k in range(1, m + 1)
    )


def state_count(n: int, allow_holding: bool = True) -> int:
    """Number of blocksworld states with n blocks.

    >>> state_count(2), state_count(3)
    (5, 22)
    """
    return tower_arrangements(n) + (n * tower_arrangements(n - 1) if allow_holding and n else 0)


def sample_towers(blocks: list[str], rng: random.Random) -> list[list[str]]:
    """Uniform random set of towers (each listed bottom to top) over ``blocks``."""
    towers: list[list[str]] = []
    rest = list(blocks)
    while rest:
        m = len(rest)
        r = rng.randrange(tower_arrangements(m))
        for k in range(1, m + 1):
            weight = math.comb(m - 1, k - 1) * math.factorial(k) * tower_arrangements(m - k)
            if r < weight:
                break
            r -= weight
        first, others = rest[0], rest[1:]
        companions = rng.sample(others, k - 1)
        tower = [first, *companions]
        rng.shuffle(tower)
        towers.append(tower)
        chosen = set(companions)
        rest = [b for b in others if b not in chosen]
    return towers


def state_atoms(towers: list[list[str]], held: str | None) -> frozenset[Atom]:
    atoms: set[Atom] = {("holding", held)} if held else {("arm-empty",)}
    for tower in towers:
        atoms.add(("on-table", tower[0]))
        atoms.add(("clear", tower[-1]))
        atoms.update(("on", up, down) for down, up in zip(tower, tower[1:], strict=False))
    return frozenset(atoms)


class BlocksworldStates:
    """n uniform in [min_blocks, max_blocks], then a uniform state with n blocks ``b1..bn``."""

    def __init__(self, min_blocks: int = 3, max_blocks: int = 8, allow_holding: bool = True):
        if not 1 <= min_blocks <= max_blocks:
            raise ValueError(f"need 1 <= min_blocks <= max_blocks, got {min_blocks}, {max_blocks}")
        self.min_blocks, self.max_blocks, self.allow_holding = min_blocks, max_blocks, allow_holding

    def sample(self, rng: random.Random) -> tuple[dict[str, str], frozenset[Atom]]:
        n = rng.randint(self.min_blocks, self.max_blocks)
        blocks = [f"b{i}" for i in range(1, n + 1)]
        held = None
        if rng.randrange(state_count(n, self.allow_holding)) >= tower_arrangements(n):
            held = rng.choice(blocks)
            blocks = [b for b in blocks if b != held]
        return {f"b{i}": "object" for i in range(1, n + 1)}, state_atoms(sample_towers(blocks, rng), held)
