"""What a valid state of Blocksworld or Gripper is, and which goal facts a partial goal implies.

A state is an *assignment* of one value to each state variable (Blocksworld: what each block
rests on — the table, the hand or another block; Gripper: where the robot is and where each
ball is — a room or a gripper). Every valid assignment is reachable from every other in both
domains, so "true in every goal state" means "true in every valid assignment satisfying the goal".

:func:`implied_literals` completes a conjunctive goal with every literal it implies (the
Planetarium idea: an under-specified block that must be clear or on the table). Two goals with the
same completion have the same set of goal states, which is what semantic equivalence compares.

>>> bw = BLOCKSWORLD
>>> objects = {"a": "object", "b": "object"}
>>> pos, neg = implied_literals(bw, objects, {("on", "a", "b")}, set())
>>> sorted(pos)
[('arm-empty',), ('clear', 'a'), ('on', 'a', 'b'), ('on-table', 'b')]
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

from plansuite.pddl.model import Atom, Domain

TABLE, HAND, ROBOT = "@table", "@hand", "@robby"  # '@' never occurs in a PDDL name
Assignment = dict[str, str]


class SearchBudgetExceeded(Exception):
    """The valid-state search gave up (only on adversarial goals with many blocks)."""


@dataclass(frozen=True)
class World:
    """One domain's state structure. Subclasses define variables, atoms and constraints."""

    name: str
    predicates: tuple[tuple[str, tuple[str, ...]], ...]  # the domain signature this model is for

    def applies(self, domain: Domain) -> bool:
        return tuple(sorted(domain.predicates.items())) == self.predicates

    def variables(self, objects: dict[str, str]) -> dict[str, list[str]]:
        raise NotImplementedError

    def exclusive(self, objects: dict[str, str]) -> set[str]:
        """Values at most one variable may take (a block supports one block; a gripper one ball)."""
        raise NotImplementedError

    def atoms(self, assign: Assignment, objects: dict[str, str]) -> frozenset[Atom]:
        raise NotImplementedError

    def ground_atoms(self, objects: dict[str, str]) -> list[Atom]:
        raise NotImplementedError

    def restrict(self, atom: Atom, positive: bool, domains: dict[str, list[str]]) -> None:
        """Narrow variable domains for literals that constrain values directly (in place)."""

    def partial_ok(self, var: str, assign: Assignment) -> bool:
        """Structural constraints checked after ``var`` was assigned (beyond exclusivity)."""
        return True

    def assignment(self, atoms: Iterable[Atom], objects: dict[str, str]) -> Assignment | None:
        """The assignment whose atoms are exactly ``atoms``; ``None`` if not a valid state."""
        raise NotImplementedError


class BlocksworldWorld(World):
    def variables(self, objects):
        blocks = sorted(objects)
        return {b: [TABLE, HAND, *(c for c in blocks if c != b)] for b in blocks}

    def exclusive(self, objects):
        return set(objects) | {HAND}

    def atoms(self, assign, objects):
        out: set[Atom] = set()
        supported = {v for v in assign.values()}
        for b, below in assign.items():
            if below == TABLE:
                out.add(("on-table", b))
            elif below == HAND:
                out.add(("holding", b))
            else:
                out.add(("on", b, below))
            if below != HAND and b not in supported:
                out.add(("clear", b))
        if HAND not in supported:
            out.add(("arm-empty",))
        return frozenset(out)

    def ground_atoms(self, objects):
        blocks = sorted(objects)
        out: list[Atom] = [("arm-empty",)]
        for b in blocks:
            out += [("clear", b), ("on-table", b), ("holding", b)]
            out += [("on", b, c) for c in blocks if c != b]
        return out

    def restrict(self, atom, positive, domains):
        pred, args = atom[0], atom[1:]
        single = {"on-table": TABLE, "holding": HAND}
        if pred in single or pred == "on":
            block = args[0]
            value = single.get(pred) or (args[1] if len(args) > 1 else None)
            if block in domains:
                keep = (lambda v: v == value) if positive else (lambda v: v != value)
                domains[block] = [v for v in domains[block] if keep(v)]
        elif pred == "clear" and positive:
            for var, values in domains.items():
                domains[var] = [v for v in values if v != args[0] and not (var == args[0] and v == HAND)]
        elif pred == "arm-empty" and positive:
            for var, values in domains.items():
                domains[var] = [v for v in values if v != HAND]

    def partial_ok(self, var, assign):
        below = assign[var]
        # Nothing rests on a held block (it had to be clear to be picked up).
        if below == HAND and var in assign.values():
            return False
        if below not in (TABLE, HAND) and assign.get(below) == HAND:
            return False
        seen = {var}  # no cycles of blocks resting on each other
        while below in assign and below not in (TABLE, HAND):
            if below in seen:
                return False
            seen.add(below)
            below = assign[below]
        return True

    def assignment(self, atoms, objects):
        assign: Assignment = {}
        for atom in atoms:
            pred, args = atom[0], atom[1:]
            value = {"on-table": TABLE, "holding": HAND}.get(pred) or (args[1] if pred == "on" else None)
            if value is None:
                continue
            if args[0] in assign or args[0] not in objects:
                return None
            assign[args[0]] = value
        if set(assign) != set(objects) or self.atoms(assign, objects) != frozenset(atoms):
            return None
        if not all(self.partial_ok(v, assign) for v in assign):
            return None
        return assign


class GripperWorld(World):
    @staticmethod
    def _by_type(objects):
        return ({o for o, t in objects.items() if t == "room"}, {o for o, t in objects.items() if t == "ball"},
                {o for o, t in objects.items() if t == "gripper"})

    def variables(self, objects):
        rooms, balls, grippers = self._by_type(objects)
        out = {ROBOT: sorted(rooms)}
        out.update({b: sorted(rooms) + sorted(grippers) for b in sorted(balls)})
        return out

    def exclusive(self, objects):
        return self._by_type(objects)[2]

    def atoms(self, assign, objects):
        rooms, balls, grippers = self._by_type(objects)
        out: set[Atom] = {("at-robby", assign[ROBOT])}
        for b in balls:
            where = assign[b]
            out.add(("at", b, where) if where in rooms else ("carry", b, where))
        used = set(assign.values())
        out.update(("free", g) for g in grippers if g not in used)
        return frozenset(out)

    def ground_atoms(self, objects):
        rooms, balls, grippers = (sorted(s) for s in self._by_type(objects))
        out: list[Atom] = [("at-robby", r) for r in rooms] + [("free", g) for g in grippers]
        for b in balls:
            out += [("at", b, r) for r in rooms] + [("carry", b, g) for g in grippers]
        return out

    def restrict(self, atom, positive, domains):
        pred, args = atom[0], atom[1:]
        if pred in ("at", "carry", "at-robby"):
            var, value = (ROBOT, args[0]) if pred == "at-robby" else (args[0], args[-1])
            if var in domains:
                keep = (lambda v: v == value) if positive else (lambda v: v != value)
                domains[var] = [v for v in domains[var] if keep(v)]
        elif pred == "free" and positive:
            for var, values in domains.items():
                domains[var] = [v for v in values if v != args[0]]

    def assignment(self, atoms, objects):
        assign: Assignment = {}
        for atom in atoms:
            if atom[0] in ("at", "carry", "at-robby"):
                var, value = (ROBOT, atom[1]) if atom[0] == "at-robby" else (atom[1], atom[2])
                if var in assign:
                    return None
                assign[var] = value
        variables = self.variables(objects)
        if set(assign) != set(variables) or any(assign[v] not in variables[v] for v in assign):
            return None
        if len([v for v in assign.values() if v in self.exclusive(objects)]) != len(
                {v for v in assign.values() if v in self.exclusive(objects)}):
            return None
        return assign if self.atoms(assign, objects) == frozenset(atoms) else None


BLOCKSWORLD = BlocksworldWorld("blocksworld", (
    ("arm-empty", ()), ("clear", ("object",)), ("holding", ("object",)), ("on", ("object", "object")),
    ("on-table", ("object",))))
GRIPPER = GripperWorld("gripper", (
    ("at", ("ball", "room")), ("at-robby", ("room",)), ("carry", ("ball", "gripper")),
    ("free", ("gripper",))))
WORLDS = (BLOCKSWORLD, GRIPPER)


def world_for(domain: Domain) -> World | None:
    """The world model for a domain with Blocksworld's or Gripper's signature (any file name)."""
    return next((w for w in WORLDS if w.applies(domain)), None)


def _narrowed(world: World, objects: dict[str, str], pos: Iterable[Atom], neg: Iterable[Atom],
              base: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    domains = {v: list(vals) for v, vals in (base or world.variables(objects)).items()}
    for atom in pos:
        world.restrict(atom, True, domains)
    for atom in neg:
        world.restrict(atom, False, domains)
    return domains


def find_state(world: World, objects: dict[str, str], pos: Iterable[Atom], neg: Iterable[Atom],
               budget: int = 200_000, domains: dict[str, list[str]] | None = None) -> Assignment | None:
    """A valid assignment where every atom of ``pos`` holds and none of ``neg``; ``None`` if none.

    Depth-first search over variables (smallest domain first) after narrowing domains with the
    literals that constrain single variables; the rest is checked on complete assignments.
    ``domains`` may pass domains already narrowed by (some of) the literals.
    """
    pos, neg = frozenset(pos), frozenset(neg)
    domains = domains if domains is not None else _narrowed(world, objects, pos, neg)
    if not pos <= _ground(world, objects):  # an atom no valid state can contain, e.g. (on a a)
        return None
    exclusive = world.exclusive(objects)
    order = sorted(domains, key=lambda v: (len(domains[v]), v))
    assign: Assignment = {}
    taken: set[str] = set()
    nodes = 0

    def search(i: int) -> bool:
        nonlocal nodes
        nodes += 1
        if nodes > budget:
            raise SearchBudgetExceeded(f"no answer after {budget} search nodes")
        if i == len(order):
            state = world.atoms(assign, objects)
            return pos <= state and not (neg & state)
        var = order[i]
        for value in domains[var]:
            if value in exclusive and value in taken:
                continue
            assign[var] = value
            if value in exclusive:
                taken.add(value)
            if world.partial_ok(var, assign) and search(i + 1):
                return True
            taken.discard(value)
            del assign[var]
        return False

    return dict(assign) if search(0) else None


@functools.lru_cache(maxsize=64)
def _ground_cached(world: World, objects: tuple[tuple[str, str], ...]) -> frozenset[Atom]:
    return frozenset(world.ground_atoms(dict(objects)))


def _ground(world: World, objects: dict[str, str]) -> frozenset[Atom]:
    return _ground_cached(world, tuple(sorted(objects.items())))


def implied_literals(world: World, objects: dict[str, str], pos: Iterable[Atom],
                     neg: Iterable[Atom]) -> tuple[frozenset[Atom], frozenset[Atom]] | None:
    """Every atom true (first set) and false (second) in all valid states satisfying the goal.

    ``None`` when no valid state satisfies it. Each witness state found rules out many candidates
    at once, so this needs far fewer searches than there are ground atoms. Results are cached.
    """
    return _implied(world, tuple(sorted(objects.items())), frozenset(pos), frozenset(neg))


@functools.lru_cache(maxsize=4096)
def _implied(world: World, objects_items: tuple, pos: frozenset, neg: frozenset):
    objects = dict(objects_items)
    pos, neg = set(pos), set(neg)
    base = _narrowed(world, objects, pos, neg)
    witness = find_state(world, objects, pos, neg, domains=base)
    if witness is None:
        return None
    state = world.atoms(witness, objects)
    ground = sorted(_ground(world, objects))
    maybe_true = {a for a in ground if a in state} - pos  # candidates for "always true"
    maybe_false = {a for a in ground if a not in state} - neg
    for atom in ground:
        if atom in maybe_true:  # can it be false?
            other = find_state(world, objects, pos, neg | {atom},
                               domains=_narrowed(world, objects, (), [atom], base))
        elif atom in maybe_false:  # can it be true?
            other = find_state(world, objects, pos | {atom}, neg,
                               domains=_narrowed(world, objects, [atom], (), base))
        else:
            continue  # ruled out by an earlier witness
        if other is None:
            (pos if atom in maybe_true else neg).add(atom)
            maybe_true.discard(atom)
            maybe_false.discard(atom)
        else:
            seen = world.atoms(other, objects)
            maybe_true &= seen
            maybe_false -= seen
    return frozenset(pos), frozenset(neg)
