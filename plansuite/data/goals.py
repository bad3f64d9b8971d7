"""The goal a training walk and a test instance carry: all of a state, or some of its facts.

``dataset.goal`` (:class:`GoalSpec`) chooses it. The default is the verifier paper's: the walk's
complete end state. ``predicates`` keeps only the end state's facts of those predicates (e.g.
``[on]``: a Blocksworld goal of ``on`` facts, as problems written by people usually have);
``mode: subset`` then draws a random non-empty subset of what is kept, of ``min_size`` to
``max_size`` facts. The draw has its own random stream (the builder's ``".../goal"`` streams), so
the walks, their verifier examples and the instances' walks are those of the full-goal dataset.

A walk whose goal is partial may reach it before its end: the training trajectory stops at the
first state that satisfies the goal (:func:`first_reached`), as a planner would, and a walk whose
start already satisfies it is dropped.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from plansuite.errors import ConfigError

GOAL_MODES = ("full", "subset", "problems")


@dataclass
class GoalSpec:
    """``dataset.goal``: which facts of a walk's end state are the goal."""

    mode: str = "full"  # full: every kept fact; subset: a random non-empty subset of them;
    # problems: subsets like the goals of domain.problems' files (resolved by :meth:`like`)
    predicates: list[str] | None = None  # keep only facts of these predicates (None: all)
    min_size: int = 1  # subset: fewest facts drawn (fewer when fewer are kept)
    max_size: int | None = None  # subset: most facts drawn (None: all that are kept)

    def __post_init__(self) -> None:
        if self.mode not in GOAL_MODES:
            raise ConfigError(f"dataset.goal.mode={self.mode!r}: choose from {', '.join(GOAL_MODES)}")
        if self.predicates is not None and (
                isinstance(self.predicates, str) or not self.predicates
                or not all(isinstance(p, str) for p in self.predicates)):
            raise ConfigError(f"dataset.goal.predicates={self.predicates!r}: a non-empty list of "
                              "predicate names, or null for all")
        for key in ("min_size", "max_size"):
            value = getattr(self, key)
            if value is None and key == "max_size":
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"dataset.goal.{key}={value!r}: must be an integer >= 1")
        if self.max_size is not None and self.max_size < self.min_size:
            raise ConfigError(f"dataset.goal.max_size={self.max_size} is below "
                              f"dataset.goal.min_size={self.min_size}")

    @property
    def is_full(self) -> bool:
        """The paper's goal: the complete end state (nothing drawn, nothing dropped)."""
        return self.mode == "full" and self.predicates is None

    @classmethod
    def like(cls, goals: Sequence[Sequence[str]]) -> GoalSpec:
        """``subset`` goals like ``goals`` (atom texts of problems written elsewhere): of their
        predicates, and as many facts as the smallest to the largest of them.

        >>> GoalSpec.like([["(on a b)"], ["(on c d)", "(on d a)", "(on a e)"]])
        GoalSpec(mode='subset', predicates=['on'], min_size=1, max_size=3)
        """
        sizes = [len(g) for g in goals if g]
        if not sizes:
            raise ConfigError("dataset.goal.mode=problems: the problems have no goal facts")
        predicates = sorted({predicate_of(a) for g in goals for a in g})
        return cls("subset", predicates, min(sizes), max(sizes))

    def check_domain(self, predicates: Sequence[str], domain_name: str) -> None:
        """One line for a ``predicates`` entry the domain does not declare."""
        unknown = [p for p in self.predicates or () if p not in predicates]
        if unknown:
            raise ConfigError(f"dataset.goal.predicates: '{unknown[0]}' is not a predicate of "
                              f"domain '{domain_name}' (it has {', '.join(sorted(predicates))})")


def predicate_of(atom: str) -> str:
    """
    >>> predicate_of("(on b1 b2)"), predicate_of("(arm-empty)")
    ('on', 'arm-empty')
    """
    return atom[1:-1].split(maxsplit=1)[0]


def draw_goal(state: Sequence[str], spec: GoalSpec, rng: random.Random) -> list[str]:
    """The goal ``spec`` makes of ``state`` (atom texts, kept in their order); ``rng`` is drawn
    from only in ``subset`` mode. Empty when no fact is kept.

    >>> state = ["(arm-empty)", "(clear b1)", "(on b1 b2)", "(on b2 b3)", "(on-table b3)"]
    >>> draw_goal(state, GoalSpec(), random.Random(0)) == state
    True
    >>> draw_goal(state, GoalSpec(predicates=["on"]), random.Random(0))
    ['(on b1 b2)', '(on b2 b3)']
    >>> [len(draw_goal(state, GoalSpec("subset", max_size=2), random.Random(i))) for i in range(8)]
    [2, 1, 1, 1, 1, 2, 1, 2]
    >>> draw_goal(["(clear b1)", "(on-table b1)"], GoalSpec(predicates=["on"]), random.Random(0))
    []
    """
    kept = [a for a in state if spec.predicates is None or predicate_of(a) in spec.predicates]
    if spec.mode == "full" or not kept:
        return kept
    top = len(kept) if spec.max_size is None else min(spec.max_size, len(kept))
    size = rng.randint(min(spec.min_size, top), top)
    chosen = set(rng.sample(range(len(kept)), size))
    return [a for i, a in enumerate(kept) if i in chosen]


def first_reached(states: Sequence[int], goal: int) -> int | None:
    """Index of the first state (bit set) holding every atom of ``goal`` (a bit set), or None.

    >>> first_reached([0b001, 0b011, 0b111], 0b010), first_reached([0b001], 0b100)
    (1, None)
    """
    return next((i for i, s in enumerate(states) if s & goal == goal), None)


__all__ = ["GOAL_MODES", "GoalSpec", "draw_goal", "first_reached", "predicate_of"]
