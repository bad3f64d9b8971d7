"""Grounding and a fast STRIPS simulator over bit-set states.

A state is a Python ``int`` whose bit ``i`` says whether ``task.atoms[i]`` holds. Atoms are
indexed in lexicographic order of their text, so decoding a state yields the paper's sorted
atom list directly. Successor generation looks at each true atom's "anchored" actions only,
instead of testing every ground action.

>>> from plansuite.domains import load_builtin
>>> domain = load_builtin("blocksworld")
>>> from plansuite.pddl.model import Problem
>>> p = Problem("p", domain.name, {"a": "object", "b": "object"},
...             frozenset({("on-table", "a"), ("on-table", "b"), ("clear", "a"), ("clear", "b"),
...                        ("arm-empty",)}), frozenset({("on", "a", "b")}))
>>> task = GroundTask(domain, p)
>>> [task.actions[i] for i in task.applicable(task.init)]
['(pickup a)', '(pickup b)']
>>> s = task.apply(task.init, task.action_id("(pickup a)"))
>>> s = task.apply(s, task.action_id("(stack a b)"))
>>> task.is_goal(s), task.decode(s)
(True, ['(arm-empty)', '(clear a)', '(on a b)', '(on-table b)'])
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from plansuite.errors import PDDLError
from plansuite.pddl.model import Atom, Domain, Problem, Schema, atom_text


@dataclass(frozen=True)
class Inapplicable:
    """Why a ground action cannot be applied: ``unknown action`` or the failing precondition."""

    action: str
    reason: str


@dataclass(frozen=True)
class PlanCheck:
    """Outcome of simulating a plan: valid iff every action applies and the goal holds at the end."""

    valid: bool
    executed: int  # actions applied before the first inapplicable one (all of them when it ran)
    final: int  # the state reached by the executed prefix
    reason: str = ""  # why invalid: the failing step, or "goal not reached"


class GroundTask:
    """All ground actions of one problem, with bit masks for fast simulation."""

    def __init__(self, domain: Domain, problem: Problem):
        if domain.level != "classical":  # its actions live in actions21: grounding would drop them
            raise PDDLError(domain.source, f"{domain.level} domain {domain.name}",
                            "the STRIPS simulator cannot run PDDL 2.1 actions (use "
                            "plansuite.pddl.planners and VAL)", kind="unsupported")
        self.domain, self.problem = domain, problem
        objects = {**domain.constants, **problem.objects}
        by_type: dict[str, list[str]] = {}
        static = _static_predicates(domain)
        init_static = {a for a in problem.init if a[0] in static}
        ground: list[tuple[str, list[Atom], list[Atom], list[Atom], list[Atom]]] = []
        for schema in domain.actions:
            domains = [self._objects_of(t, objects, by_type) for _, t in schema.parameters]
            for args in itertools.product(*domains):
                g = _instantiate(schema, args, init_static, static)
                if g is not None:
                    ground.append(g)
        names = set(map(atom_text, problem.init | problem.goal_pos | problem.goal_neg))
        for _, pos, neg, add, delete in ground:
            names.update(map(atom_text, itertools.chain(pos, neg, add, delete)))
        self.atoms: list[str] = sorted(names)
        self.index: dict[str, int] = {a: i for i, a in enumerate(self.atoms)}
        ground.sort(key=lambda g: g[0])
        self.actions: list[str] = [g[0] for g in ground]
        self.action_index: dict[str, int] = {a: i for i, a in enumerate(self.actions)}
        self.pre_pos = [self.encode_atoms(g[1]) for g in ground]
        self.pre_neg = [self.encode_atoms(g[2]) for g in ground]
        self.add = [self.encode_atoms(g[3]) for g in ground]
        self.delete = [self.encode_atoms(g[4]) for g in ground]
        self.init = self.encode_atoms(problem.init)
        self.goal_pos = self.encode_atoms(problem.goal_pos)
        self.goal_neg = self.encode_atoms(problem.goal_neg)
        self._build_anchors()

    def _objects_of(self, type_name: str, objects: dict[str, str], cache: dict[str, list[str]]) -> list[str]:
        if type_name not in cache:
            cache[type_name] = sorted(o for o, t in objects.items()
                                      if self.domain.is_subtype(t, type_name))
        return cache[type_name]

    def _build_anchors(self) -> None:
        # Anchor each action on its positive precondition shared by the fewest actions, so
        # applicable() only tests actions anchored on atoms that are true.
        counts = [0] * len(self.atoms)
        for mask in self.pre_pos:
            for i in bits(mask):
                counts[i] += 1
        self._anchored: list[list[int]] = [[] for _ in self.atoms]
        self._unanchored: list[int] = []
        for a, mask in enumerate(self.pre_pos):
            if mask:
                self._anchored[min(bits(mask), key=counts.__getitem__)].append(a)
            else:
                self._unanchored.append(a)

    # ---- encoding -------------------------------------------------------------------------
    def encode_atoms(self, atoms: Iterable[Atom]) -> int:
        return self.encode(atom_text(a) for a in atoms)

    def encode(self, texts: Iterable[str]) -> int:
        """State from atom texts; raises KeyError on an atom outside the task."""
        state = 0
        for t in texts:
            state |= 1 << self.index[t]
        return state

    def try_encode(self, texts: Iterable[str]) -> int | None:
        """Like :meth:`encode`, but ``None`` when some atom does not exist in this task."""
        try:
            return self.encode(texts)
        except KeyError:
            return None

    def decode(self, state: int) -> list[str]:
        """Sorted atom texts of a state."""
        return [self.atoms[i] for i in bits(state)]

    def action_id(self, text: str) -> int | None:
        return self.action_index.get(text)

    # ---- simulation -----------------------------------------------------------------------
    def applicable(self, state: int) -> list[int]:
        out = []
        pre_pos, pre_neg = self.pre_pos, self.pre_neg
        s = state
        while s:
            low = s & -s
            for a in self._anchored[low.bit_length() - 1]:
                if state & pre_pos[a] == pre_pos[a] and not state & pre_neg[a]:
                    out.append(a)
            s ^= low
        for a in self._unanchored:
            if not state & pre_neg[a]:
                out.append(a)
        out.sort()
        return out

    def is_applicable(self, state: int, action: int) -> bool:
        pre = self.pre_pos[action]
        return state & pre == pre and not state & self.pre_neg[action]

    def apply(self, state: int, action: int) -> int:
        return (state & ~self.delete[action]) | self.add[action]

    def is_goal(self, state: int) -> bool:
        return state & self.goal_pos == self.goal_pos and not state & self.goal_neg

    def step(self, state: int, action_text: str) -> int | Inapplicable:
        """Apply an arbitrary action text: the next state, or why it is not applicable."""
        a = self.action_index.get(action_text)
        if a is None:
            return Inapplicable(action_text, "unknown action or objects")
        missing = self.pre_pos[a] & ~state
        if missing:
            return Inapplicable(action_text, f"precondition {self.atoms[_lowest(missing)]} is false")
        present = self.pre_neg[a] & state
        if present:
            return Inapplicable(action_text,
                                f"precondition (not {self.atoms[_lowest(present)]}) is false")
        return self.apply(state, a)

    def check_plan(self, plan: Sequence[str], start: int | None = None) -> PlanCheck:
        """Simulate ``plan`` (action texts) from ``start`` (default: the initial state).

        >>> from plansuite.domains import load_builtin
        >>> task = GroundTask(load_builtin("blocksworld"), Problem("p", "blocksworld-4ops",
        ...     {"a": "object"}, frozenset({("on-table", "a"), ("clear", "a"), ("arm-empty",)}),
        ...     frozenset({("holding", "a")})))
        >>> task.check_plan(["(pickup a)"]).valid
        True
        >>> task.check_plan(["(pickup a)", "(pickup a)"]).reason
        'step 2 (pickup a): precondition (arm-empty) is false'
        >>> task.check_plan([]).reason
        'goal not reached'
        """
        state = self.init if start is None else start
        for i, action in enumerate(plan):
            nxt = self.step(state, action)
            if isinstance(nxt, Inapplicable):
                return PlanCheck(False, i, state, f"step {i + 1} {action}: {nxt.reason}")
            state = nxt
        if not self.is_goal(state):
            return PlanCheck(False, len(plan), state, "goal not reached")
        return PlanCheck(True, len(plan), state)

    def successors(self, state: int) -> Iterator[tuple[int, int]]:
        for a in self.applicable(state):
            yield a, self.apply(state, a)


def bits(mask: int) -> list[int]:
    """The indices of the set bits of ``mask``, lowest first (a state's or an effect's atoms).

    >>> bits(0b10110)
    [1, 2, 4]
    """
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def _lowest(mask: int) -> int:
    return (mask & -mask).bit_length() - 1


def _static_predicates(domain: Domain) -> set[str]:
    changed = {a[0] for s in domain.actions for a in s.add + s.delete}
    return set(domain.predicates) - changed


def _instantiate(schema: Schema, args: tuple[str, ...], init_static: set[Atom], static: set[str]):
    sub = {p: a for (p, _), a in zip(schema.parameters, args, strict=True)}

    def ground(atom: Atom) -> Atom:
        return (atom[0], *(sub.get(t, t) for t in atom[1:]))

    for x, y in schema.pre_eq:
        if sub.get(x, x) != sub.get(y, y):
            return None
    for x, y in schema.pre_neq:
        if sub.get(x, x) == sub.get(y, y):
            return None
    pos = [ground(a) for a in schema.pre_pos]
    neg = [ground(a) for a in schema.pre_neg]
    # Static facts never change: decide them now and keep them out of the masks' hot path.
    if any(a[0] in static and a not in init_static for a in pos):
        return None
    if any(a[0] in static and a in init_static for a in neg):
        return None
    name = atom_text((schema.name, *args))
    return (name, pos, neg, [ground(a) for a in schema.add], [ground(a) for a in schema.delete])


class TaskCache:
    """One GroundTask per distinct object set (and static facts), reused across states.

    Grounding depends only on the objects and the static facts, so walks and judgements over
    many states with the same objects share one task (its ``problem`` has no goal).
    """

    def __init__(self, domain: Domain):
        self.domain = domain
        self._cache: dict[tuple, GroundTask] = {}
        self._static = _static_predicates(domain)

    def get(self, objects: dict[str, str], init: Iterable[Atom] = ()) -> GroundTask:
        """The task for ``objects`` and ``init``'s static facts; it can encode ``init``.

        Callers encode their own initial state (``task.encode_atoms(init)``): the task's ``init``
        is the first state it was built for.
        """
        init = frozenset(init)
        statics = frozenset(a for a in init if a[0] in self._static)
        key = (tuple(sorted(objects.items())), statics)
        task = self._cache.get(key)
        if task is not None and any(atom_text(a) not in task.index for a in init):
            # A true atom that no ground action mentions (so not in the cached task): ground
            # again with it, keeping the old task's atoms so earlier states stay encodable.
            init, task = init | task.problem.init, None
        if task is None:
            problem = Problem("cached", self.domain.name, dict(objects), init, frozenset())
            task = self._cache[key] = GroundTask(self.domain, problem)
        return task


def load_task(domain: Domain, problem: Problem) -> GroundTask:
    if problem.domain_name != domain.name:
        raise PDDLError(problem.source, f"(:domain {problem.domain_name})",
                        f"problem is for domain '{problem.domain_name}', not '{domain.name}'")
    return GroundTask(domain, problem)
