"""Critic training data: reference problems and labelled, subtly wrong variants of them.

Each corruption changes one kind of thing — the objects, one part of the initial state, or the
goal — and keeps the problem domain-consistent, its initial state valid and its goal
satisfiable, so only a comparison with the description can reveal it. Every corruption is
confirmed to be semantically *different* from the reference (offline equivalence labels the
data; it is never used in the loop). Positives are the reference in shuffled order, sometimes with
its goal completed by implied facts (an equivalent rewording of the same problem).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from plansuite.nl2pddl.data.scenes import BALL_NAMES, BLOCK_NAMES, Scenario
from plansuite.nl2pddl.judging.equivalence import semantic
from plansuite.nl2pddl.judging.worlds import BLOCKSWORLD, find_state, implied_literals, world_for
from plansuite.pddl.model import Atom, Domain, Problem, atom_text, number_text, rename_atoms
from plansuite.pddl.simulator import GroundTask

KINDS = ("object", "init", "goal")
TRIES = 30


@dataclass(frozen=True)
class Corruption:
    problem: Problem
    kind: str  # object | init | goal
    detail: str  # what was changed, for inspection


def shuffled_pddl(problem: Problem, domain: Domain, rng: random.Random) -> str:
    """PDDL text of ``problem`` with objects and atoms in random order (same problem): a function
    of ``rng`` alone, so the atoms are sorted before the shuffle (a frozenset of strings iterates
    in an order that changes with each process's hash seed)."""
    objects = list(problem.objects.items())
    rng.shuffle(objects)
    typed = ":typing" in domain.requirements
    decl = " ".join(f"{o} - {t}" if typed else o for o, t in objects)
    init = [atom_text(a) for a in sorted(problem.init)]
    goal = [atom_text(a) for a in sorted(problem.goal_pos)] + [f"(not {atom_text(a)})" for a in sorted(problem.goal_neg)]
    init += [f"(= {term} {number_text(v)})" for term, v in problem.fluents.items()]
    rng.shuffle(init)
    rng.shuffle(goal)
    metric = f"\n  (:metric {problem.metric})" if problem.metric else ""
    return (f"(define (problem {problem.name})\n  (:domain {problem.domain_name})\n"
            f"  (:objects {decl})\n  (:init {' '.join(init)})\n  (:goal (and {' '.join(goal)})){metric})\n")


def _same_type_pair(problem: Problem, rng: random.Random) -> tuple[str, str] | None:
    by_type: dict[str, list[str]] = {}
    for obj, typ in sorted(problem.objects.items()):
        by_type.setdefault(typ, []).append(obj)
    choices = [objs for objs in by_type.values() if len(objs) >= 2]
    if not choices:
        return None
    a, b = rng.sample(rng.choice(choices), 2)
    return a, b


# ---- the three kinds --------------------------------------------------------------------------
def _fresh_name(scenario: Scenario) -> tuple[str, str]:
    """A new object in the scenario's naming scheme: (name, type)."""
    p = scenario.problem
    if "ball" in scenario.names:
        kind, names = "ball", BALL_NAMES[scenario.names["ball"]]
    else:
        kind, names = "object", BLOCK_NAMES[scenario.names["block"]]
    n = sum(1 for t in p.objects.values() if t == kind)
    fresh = [x for x in names(n + 2) if x not in p.objects]
    return fresh[0], kind


def _object_corruption(scenario: Scenario, domain: Domain, rng: random.Random) -> tuple[Problem, str] | None:
    p = scenario.problem
    world = world_for(domain)
    if rng.random() < 0.5:  # add an object that the description never mentions
        name, typ = _fresh_name(scenario)
        if world is BLOCKSWORLD:
            extra = {("on-table", name), ("clear", name)}
        else:
            extra = {("at", name, rng.choice(sorted(o for o, t in p.objects.items() if t == "room")))}
        return replace(p, objects={**p.objects, name: typ}, init=p.init | extra), f"added {typ} {name}"
    movable = sorted(o for o, t in p.objects.items() if t in ("object", "ball"))
    if len(movable) < 2:
        return None
    gone = rng.choice(movable)
    assign = world.assignment(p.init, p.objects)
    if assign is None:
        return None
    objects = {o: t for o, t in p.objects.items() if o != gone}
    if world is BLOCKSWORLD:  # what rested on the removed block now rests where it stood
        assign = {b: (assign[gone] if v == gone else v) for b, v in assign.items() if b != gone}
    else:
        del assign[gone]
    goal = frozenset(a for a in p.goal_pos if gone not in a[1:])
    if not goal:
        return None
    return replace(p, objects=objects, init=world.atoms(assign, objects), goal_pos=goal), f"removed {gone}"


def _walk(problem: Problem, domain: Domain, init, rng: random.Random) -> tuple[frozenset[Atom], list[str]]:
    """The state after 1-3 random legal actions from ``init``, and the actions taken."""
    task = GroundTask(domain, replace(problem, init=frozenset(init)))
    state, steps = task.init, []
    for _ in range(rng.randint(1, 3)):
        options = task.applicable(state)
        if not options:
            break
        action = rng.choice(options)
        steps.append(task.actions[action])
        state = task.apply(state, action)
    return frozenset(tuple(t[1:-1].split()) for t in task.decode(state)), steps


def _init_corruption(scenario: Scenario, domain: Domain, rng: random.Random) -> tuple[Problem, str] | None:
    p = scenario.problem
    if rng.random() < 0.5:  # two objects trade places in the initial state only
        pair = _same_type_pair(p, rng)
        if pair is None:
            return None
        a, b = pair
        return replace(p, init=rename_atoms(p.init, {a: b, b: a})), f"swapped {a} and {b} in init"
    init, steps = _walk(p, domain, p.init, rng)  # or: a few random legal actions later
    return replace(p, init=init), "init advanced by " + " ".join(steps)


def _goal_corruption(scenario: Scenario, domain: Domain, rng: random.Random) -> tuple[Problem, str] | None:
    p = scenario.problem
    choice = rng.random()
    if choice < 0.3:  # two objects trade places in the goal only
        pair = _same_type_pair(p, rng)
        if pair is None:
            return None
        a, b = pair
        return replace(p, goal_pos=rename_atoms(p.goal_pos, {a: b, b: a})), f"swapped {a} and {b} in goal"
    if choice < 0.55:  # a goal state a few actions away, stated with the same predicates
        world = world_for(domain)
        witness = find_state(world, p.objects, p.goal_pos, p.goal_neg)
        moved, steps = _walk(p, domain, world.atoms(witness, p.objects), rng)
        used = {a[0] for a in p.goal_pos}
        goal = frozenset(a for a in moved if a[0] in used) or moved
        return replace(p, goal_pos=goal), "goal moved by " + " ".join(steps)
    atoms = sorted(p.goal_pos)
    victim = rng.choice(atoms)
    if choice < 0.75 and len(atoms) > 1:  # drop a goal fact that was not implied by the others
        return replace(p, goal_pos=frozenset(atoms) - {victim}), f"dropped {atom_text(victim)}"
    if len(victim) < 2:
        return None
    i = rng.randrange(1, len(victim))  # one argument replaced by another object of its type
    others = [o for o, t in p.objects.items() if t == p.objects[victim[i]] and o != victim[i]]
    if not others:
        return None
    changed = (*victim[:i], rng.choice(sorted(others)), *victim[i + 1:])
    goal = (frozenset(atoms) - {victim}) | {changed}
    return replace(p, goal_pos=goal), f"{atom_text(victim)} -> {atom_text(changed)}"


MAKERS = {"object": _object_corruption, "init": _init_corruption, "goal": _goal_corruption}


def corrupt(scenario: Scenario, domain: Domain, kind: str, rng: random.Random) -> Corruption | None:
    """A verified corruption of ``kind``, or ``None`` if none was found in a few tries."""
    world = world_for(domain)
    ref = scenario.problem
    for _ in range(TRIES):
        made = MAKERS[kind](scenario, domain, rng)
        if made is None:
            continue
        problem, detail = made
        if world.assignment(problem.init, problem.objects) is None:
            continue  # the initial state must stay a valid state
        if find_state(world, problem.objects, problem.goal_pos, problem.goal_neg) is None:
            continue  # and the goal satisfiable
        if problem.goal_pos <= problem.init and not problem.goal_neg:
            continue  # a trivially solved goal would be caught by other means
        if semantic(ref, problem, domain).equivalent is False:
            return Corruption(problem, kind, detail)
    return None


def equivalent_variant(problem: Problem, domain: Domain, rng: random.Random) -> Problem:
    """The same problem, half the time with its goal completed by the facts it implies."""
    completed = implied_literals(world_for(domain), problem.objects, problem.goal_pos, problem.goal_neg)
    if completed is None or rng.random() < 0.5:
        return problem
    return replace(problem, goal_pos=completed[0])
