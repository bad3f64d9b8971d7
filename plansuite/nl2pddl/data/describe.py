"""Natural-language descriptions of reference problems, seeded and varied.

*Explicit* descriptions state every object and every fact of ``:init`` and ``:goal`` (one clause
per fact, in shuffled order, with a random template per fact); *abstract* ones describe the scene
("all blocks form one tower") without naming every fact. :func:`explicit_clauses` exposes the
fact → clause pairing so tests can check that nothing was left out.

>>> import random
>>> from plansuite.pddl.model import Problem
>>> p = Problem("p", "blocksworld-4ops", {"b1": "object"}, frozenset({("on-table", "b1"),
...             ("clear", "b1"), ("arm-empty",)}), frozenset({("holding", "b1")}))
>>> from plansuite.nl2pddl.data.scenes import Scenario
>>> text = describe(Scenario(p, "random", "random", {"block": "numbered"}), "explicit", random.Random(0))
>>> text.startswith(("There are one block (b1).", "You have one block (b1).", "The world contains one block (b1)."))
True
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable

from plansuite.nl2pddl.data.scenes import Scenario
from plansuite.pddl.model import Atom

NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")

FACTS = {
    "on": ["{0} is on top of {1}", "{0} sits on {1}", "{0} is stacked on {1}", "{0} rests on {1}"],
    "on-table": ["{0} is on the table", "{0} sits directly on the table", "{0} rests on the table"],
    "clear": ["{0} is clear", "nothing is on top of {0}", "{0} has nothing on it"],
    "arm-empty": ["the arm is empty", "the robot's hand is empty", "the hand holds nothing"],
    "holding": ["the arm is holding {0}", "{0} is in the hand", "the robot holds {0}"],
    "at-robby": ["the robot is in {0}", "the robot stands in {0}", "the robot is located in {0}"],
    "at": ["{0} is in {1}", "{0} lies in {1}", "{0} is located in {1}"],
    "free": ["{0} is free", "{0} is empty", "{0} holds nothing"],
    "carry": ["{1} holds {0}", "{0} is carried by {1}", "{1} is carrying {0}"],
}
INIT_HEADERS = ["Initially, {}.", "At the start, {}.", "In the initial state, {}.", "Currently, {}."]
GOAL_HEADERS = ["Your goal is to reach a state where {}.", "The goal is that {}.",
                "In the end, {}.", "We want a state in which {}."]


def named(text: str, names: Iterable[str]) -> frozenset[str]:
    """The ``names`` that occur in ``text`` as whole words (case-insensitive; PDDL names may hold
    ``-`` and ``_``).

    >>> sorted(named("Block b1 sits on block b10.", ["b1", "b10", "b2"]))
    ['b1', 'b10']
    """
    return frozenset(n for n in names
                     if re.search(r"(?<![\w-])" + re.escape(n) + r"(?![\w-])", text, re.IGNORECASE))


def count(n: int) -> str:
    return NUMBERS[n] if 0 <= n < len(NUMBERS) else str(n)


def mention(obj: str, kind: str, scheme: str) -> str:
    """How a description refers to an object.

    >>> mention("red", "block", "colors"), mention("b2", "block", "numbered")
    ('the red block', 'block b2')
    """
    if scheme == "colors":
        return f"the {obj} {kind}"
    if kind == "room" and scheme == "words":
        return f"the {obj}"
    if kind == "gripper" and scheme == "sides":
        return f"the {obj} gripper"
    return obj if kind in ("ball", "room", "gripper") else f"{kind} {obj}"


def listing(items: list[str]) -> str:
    """Objects as an English list.

    >>> listing(["a", "b", "c"])
    'a, b and c'
    """
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _kind(scenario: Scenario, obj: str) -> str:
    typ = scenario.problem.objects[obj]
    return "block" if typ == "object" else typ


def fact_clause(atom: Atom, scenario: Scenario, rng: random.Random) -> str:
    args = [mention(a, _kind(scenario, a), scenario.names[_kind(scenario, a)]) for a in atom[1:]]
    return rng.choice(FACTS[atom[0]]).format(*args)


def explicit_clauses(scenario: Scenario, rng: random.Random) -> dict[str, list[tuple[Atom, str]]]:
    """One (fact, clause) pair per fact of the initial state and of the goal, shuffled."""
    out = {}
    for part, atoms in (("init", scenario.problem.init), ("goal", scenario.problem.goal_pos)):
        pairs = [(a, fact_clause(a, scenario, rng)) for a in sorted(atoms)]
        rng.shuffle(pairs)
        out[part] = pairs
    return out


def described_order(scenario: Scenario, description: str) -> dict[str, list[Atom]] | None:
    """The facts of ``:init`` and ``:goal`` in the order an explicit ``description`` states them
    (found by the clause each template renders), or ``None`` if a fact's clause is not found.

    The generator is trained to write atoms in this order: clause *i* becomes atom *i*, a local
    translation a small model learns far sooner than re-sorting a shuffled list.
    """
    starts = [description.find(h.split("{}")[0]) for h in GOAL_HEADERS]
    goal_start = min((i for i in starts if i >= 0), default=-1)
    if goal_start < 0:
        return None
    sections = {"init": description[:goal_start], "goal": description[goal_start:]}
    out = {}
    for part, atoms in (("init", scenario.problem.init), ("goal", scenario.problem.goal_pos)):
        where = {}
        for atom in atoms:
            args = [mention(a, _kind(scenario, a), scenario.names[_kind(scenario, a)]) for a in atom[1:]]
            found = [m.start() for t in FACTS[atom[0]] for m in re.finditer(
                r"(?<![\w-])" + re.escape(t.format(*args)) + r"(?![\w-])", sections[part])]
            if not found:
                return None
            where[atom] = min(found)
        out[part] = sorted(atoms, key=lambda a: (where[a], a))
    return out


def _join(clauses: list[str], rng: random.Random) -> str:
    if len(clauses) > 2 and rng.random() < 0.5:
        return "; ".join(clauses[:-1]) + "; and " + clauses[-1]
    return listing(clauses)


def _objects_sentence(scenario: Scenario, rng: random.Random) -> str:
    by_kind: dict[str, list[str]] = {}
    for obj in sorted(scenario.problem.objects, key=_natural):
        by_kind.setdefault(_kind(scenario, obj), []).append(obj)
    parts = [f"{count(len(objs))} {kind}{'s' if len(objs) > 1 else ''} ({listing(objs)})"
             for kind, objs in by_kind.items()]
    rng.shuffle(parts)
    return rng.choice(["There are {}.", "You have {}.", "The world contains {}."]).format(listing(parts))


def _natural(name: str) -> tuple:
    digits = "".join(c for c in name if c.isdigit())
    return (name.rstrip("0123456789"), int(digits) if digits else 0, name)


def _sentence(text: str) -> str:
    return text[0].upper() + text[1:]


def describe_explicit(scenario: Scenario, rng: random.Random) -> str:
    clauses = explicit_clauses(scenario, rng)
    init = [c for _, c in clauses["init"]]
    goal = [c for _, c in clauses["goal"]]
    parts = [_objects_sentence(scenario, rng),
             _sentence(rng.choice(INIT_HEADERS).format(_join(init, rng))),
             _sentence(rng.choice(GOAL_HEADERS).format(_join(goal, rng)))]
    return " ".join(parts)


# ---- abstract descriptions --------------------------------------------------------------------
BW_INIT = {
    "on_table": ["All blocks are on the table and the arm is empty.",
                 "Every block lies directly on the table; nothing is stacked and the hand is empty."],
    "tower": ["All blocks are stacked in a single tower and the arm is empty.",
              "The blocks form one tower; the hand is empty."],
    "towers": ["The blocks are arranged in {towers} towers of {height} blocks each; the arm is empty.",
               "There are {towers} stacks, each {height} blocks high, and the hand is empty."],
    "staircase": ["The blocks form a staircase: {steps} towers with heights from one to {steps}; the arm is empty.",
                  "The blocks stand in {steps} towers of heights 1 to {steps}, and the hand is empty."],
    "holding": ["The arm holds one block and every other block is on the table.",
                "The robot has one block in its hand; the remaining blocks lie on the table."],
    "heights": ["The blocks stand in {towers} towers of {heights} blocks; the arm is empty.",
                "There are {towers} stacks, {heights} blocks high, and the hand is empty."],
}
BW_GOAL = {
    "tower": ["Your goal is to stack all blocks into a single tower.",
              "The goal is one tower containing every block."],
    "on_table": ["Your goal is to put every block on the table.",
                 "The goal is to have all blocks on the table with the arm empty."],
    "invert": ["Your goal is to invert the tower, so its order is reversed.",
               "The goal is the same tower upside down: the top block at the bottom and so on."],
    "towers": ["Your goal is to build {towers} towers of {height} blocks each.",
               "The goal is {towers} stacks of height {height}."],
    "staircase": ["Your goal is a staircase: {steps} towers with heights from one to {steps}.",
                  "The goal is to build towers of heights 1 to {steps}."],
    "holding": ["Your goal is to hold one block with every other block on the table.",
                "The goal is to have a single block in the hand and the rest on the table."],
    "heights": ["Your goal is to build {towers} towers of {heights} blocks.",
                "The goal is {towers} stacks, {heights} blocks high."],
}
GRIPPER_INIT = {
    "one_room": ["All balls are in {a}, where the robot is, and both grippers are free.",
                 "The robot and every ball are in {a}; the grippers are empty."],
    "spread": ["The balls are spread evenly over the rooms, {share} per room; the robot is in {a} and both grippers are free.",
               "Each room holds {share}, the robot stands in {a} and its grippers are empty."],
    "carrying": ["The robot is in {a} carrying one ball in each gripper; the other balls are in {a} too.",
                 "The robot stands in {a} holding a ball in each gripper, and the remaining balls lie in {a}."],
    "counts": ["The balls are spread over the rooms, {counts}; the robot is in {a} and both grippers are free.",
               "There are {counts}; the robot stands in {a} and its grippers are empty."],
}
GRIPPER_GOAL = {
    "other_room": ["The goal is for every ball to end in {b}.", "Your goal is to move all balls to {b}."],
    "spread": ["Your goal is to distribute the balls so that every room holds {share}.",
               "The goal is {share} in each room."],
    "gather": ["Your goal is to gather all balls in {a}.", "The goal is to have every ball in {a}."],
    "swap": ["Your goal is to swap the balls: each ball in {a} must end in {b} and each ball in {b} in {a}.",
             "The goal is that the balls in {a} and those in {b} trade rooms."],
    "counts": ["Your goal is to distribute the balls so that there are {counts}.", "The goal is {counts}."],
}


def _balls(n: int) -> str:
    return f"{count(n)} ball{'s' if n > 1 else ''}"


def describe_abstract(scenario: Scenario, rng: random.Random) -> str:
    p = scenario.params
    if "ball" in scenario.names:
        rooms = sorted(o for o, t in scenario.problem.objects.items() if t == "room")
        share = p["n"] // p["rooms"]
        slots = {"a": rooms[0], "b": rooms[1], "share": _balls(share)}
        if "counts" in p:  # "two balls in rooma and four balls in roomb"
            slots["counts"] = listing([f"{_balls(c)} in {room}" for c, room in zip(p["counts"], rooms, strict=True)])
        intro = rng.choice(["There are {r} rooms ({rooms}), {n} balls and a robot with two grippers.",
                            "A robot with two grippers works in {r} rooms ({rooms}) with {n} balls."])
        intro = intro.format(r=count(p["rooms"]), rooms=listing(rooms), n=count(p["n"]))
        init, goal = GRIPPER_INIT[scenario.init_scene], GRIPPER_GOAL[scenario.goal_scene]
    else:
        slots = {k: count(v) if isinstance(v, int) else v for k, v in p.items()}
        if "heights" in p:  # "two, four and one"
            slots["heights"] = listing([count(h) for h in p["heights"]])
        intro = rng.choice(["You have {n} blocks.", "There are {n} blocks."]).format(n=count(p["n"]))
        init, goal = BW_INIT[scenario.init_scene], BW_GOAL[scenario.goal_scene]
    return " ".join([intro, rng.choice(init).format(**slots), rng.choice(goal).format(**slots)])


def describe(scenario: Scenario, style: str, rng: random.Random) -> str:
    if style == "explicit":
        return describe_explicit(scenario, rng)
    if style == "abstract" and scenario.abstract:
        return describe_abstract(scenario, rng)
    raise ValueError(f"style {style!r} not available for scene {scenario.init_scene!r}")
