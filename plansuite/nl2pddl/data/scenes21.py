"""NL→PDDL data for the PDDL 2.1 domains: ``fuel-delivery`` (numeric) and ``timed-delivery``
(temporal) — reference problems, their descriptions and their number/metric corruptions.

The same roles as :mod:`.scenes` (problems), :mod:`.describe` (wording) and :mod:`.corrupt`
(critic negatives) play for Blocksworld and Gripper. Places lie on a line (a road or corridor
both ways between neighbours), so a description can name them in order. Abstract scenes say
"every package starts at the first place" instead of listing facts, and state shared numbers once.

Corruption kinds (each verified *structurally* different from the reference, under every renaming;
semantic equivalence does not decide these problems): ``value`` (one initial number changed),
``direction`` (minimize <-> maximize), ``fluent`` (one initial value dropped) and ``duration``
(temporal: a robot's move time changed).
"""

from __future__ import annotations

import random
from dataclasses import replace
from itertools import pairwise

from plansuite.nl2pddl.data.scenes import Scenario
from plansuite.nl2pddl.judging.equivalence import structural
from plansuite.pddl.model import Atom, Domain, Problem, number_text

DOMAINS21 = ("fuel-delivery", "timed-delivery")
KINDS21 = ("value", "direction", "fluent", "duration")
PLACES = ("depot", "market", "harbor", "school", "farm", "mill")
ROOMS = ("kitchen", "hall", "office", "garage", "library", "attic")
TRIES = 30


# ---- problems ---------------------------------------------------------------------------------
def _line(kind: str, names: list[str], pred: str) -> set[Atom]:
    return {(pred, a, b) for x, y in pairwise(names) for a, b in ((x, y), (y, x))}


def fuel_problem(name: str, places: int, trucks: int, packages: int, rng: random.Random,
                 *, scene: str = "random", fuel: int | None = None,
                 capacity: int | None = None) -> Scenario:
    locs, tks = list(PLACES[:places]), [f"truck{i}" for i in range(1, trucks + 1)]
    pkgs = [f"package{i}" for i in range(1, packages + 1)]
    init = _line("location", locs, "road")
    goal: set[Atom] = set()
    for t in tks:
        init.add(("at", t, locs[0] if scene != "random" else rng.choice(locs)))
    for p in pkgs:
        start = locs[0] if scene != "random" else rng.choice(locs)
        end = locs[-1] if scene != "random" else rng.choice([x for x in locs if x != start])
        init.add(("pkg-at", p, start))
        goal.add(("pkg-at", p, end))
    fluents = {"(fuel-used)": 0.0}
    for t in tks:
        # enough fuel for a round trip along the line (solvable), or the scene's shared value
        fluents[f"(fuel {t})"] = float(fuel if fuel is not None else rng.randint(2 * places, 3 * places))
        fluents[f"(capacity {t})"] = float(capacity if capacity is not None else rng.randint(1, 3))
        fluents[f"(carried {t})"] = 0.0
    objects = {**{x: "location" for x in locs}, **{t: "truck" for t in tks},
               **{p: "package" for p in pkgs}}
    problem = Problem(name, "fuel-delivery", objects, frozenset(init), frozenset(goal),
                      fluents=fluents, metric="minimize (fuel-used)")
    return Scenario(problem, scene, scene, {"location": "places", "truck": "numbered",
                                            "package": "numbered"},
                    {"places": places, "trucks": trucks, "packages": packages, "fuel": fuel,
                     "capacity": capacity})


def timed_problem(name: str, rooms: int, robots: int, items: int, rng: random.Random,
                  *, scene: str = "random", move_time: int | None = None) -> Scenario:
    rms, bots = list(ROOMS[:rooms]), [f"robot{i}" for i in range(1, robots + 1)]
    its = [f"item{i}" for i in range(1, items + 1)]
    init = _line("room", rms, "corridor")
    goal: set[Atom] = set()
    for r in bots:
        init |= {("robot-at", r, rms[0] if scene != "random" else rng.choice(rms)), ("free", r)}
    for i in its:
        start = rms[0] if scene != "random" else rng.choice(rms)
        end = rms[-1] if scene != "random" else rng.choice([x for x in rms if x != start])
        init.add(("item-at", i, start))
        goal.add(("item-at", i, end))
    fluents = {f"(move-time {r})": float(move_time if move_time is not None else rng.randint(1, 5))
               for r in bots}
    objects = {**{x: "room" for x in rms}, **{r: "robot" for r in bots}, **{i: "item" for i in its}}
    problem = Problem(name, "timed-delivery", objects, frozenset(init), frozenset(goal),
                      fluents=fluents, metric="minimize (total-time)")
    return Scenario(problem, scene, scene, {"room": "names", "robot": "numbered", "item": "numbered"},
                    {"rooms": rooms, "robots": robots, "items": items, "move_time": move_time})


def scenarios21(domain_name: str, random_problems: int, sizes: list[int], places: list[int],
                min_objects: int, max_objects: int, rng: random.Random) -> list[Scenario]:
    """Abstract scenes (every size x place count x shared number) and random problems."""
    out: list[Scenario] = []
    for n in sizes:
        for k in places:
            for shared in (2, 3):
                if domain_name == "fuel-delivery":
                    out.append(fuel_problem(f"fuel-{n}-{k}-{shared}", k, 1, n, rng, scene="gather",
                                            fuel=3 * k + shared, capacity=shared))
                else:
                    out.append(timed_problem(f"timed-{n}-{k}-{shared}", k, 1, n, rng,
                                             scene="gather", move_time=shared))
    for i in range(random_problems):
        n, k = rng.randint(min_objects, max_objects), rng.choice(places)
        if domain_name == "fuel-delivery":
            out.append(fuel_problem(f"fuel-r{i}", k, rng.randint(1, 2), n, rng))
        else:
            out.append(timed_problem(f"timed-r{i}", k, rng.randint(1, 2), n, rng))
    return out


# ---- descriptions -----------------------------------------------------------------------------
def _listing(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _value(problem: Problem, fn: str, obj: str | None = None) -> str:
    return number_text(problem.fluents[f"({fn} {obj})" if obj else f"({fn})"])


def _objects(problem: Problem, typ: str) -> list[str]:
    return sorted(o for o, t in problem.objects.items() if t == typ)


def _places(problem: Problem, pred: str) -> list[str]:
    """The places in line order (the line's two ends have one neighbour)."""
    names = sorted({a[1] for a in problem.init if a[0] == pred})
    order = PLACES if problem.domain_name == "fuel-delivery" else ROOMS
    return sorted(names, key=order.index)


def describe21(scenario: Scenario, style: str, rng: random.Random) -> str:
    p = scenario.problem
    fuel = p.domain_name == "fuel-delivery"
    kinds = ("truck", "package", "location", "road", "at", "pkg-at") if fuel else \
        ("robot", "item", "room", "corridor", "robot-at", "item-at")
    movers, things = _objects(p, kinds[0]), _objects(p, kinds[1])
    line = _places(p, kinds[3])
    where = {a[1]: a[2] for a in p.init if a[0] in (kinds[4], kinds[5])}
    goal = {a[1]: a[2] for a in p.goal_pos}
    link = "Roads" if fuel else "Corridors"
    sentences = [f"{link} join {_listing([f'{a} to {b}' for a, b in pairwise(line)])}, "
                 "in both directions."]
    if style == "abstract" and scenario.abstract:
        m, t = movers[0], kinds[1] + "s"
        count = f"one {kinds[1]}" if len(things) == 1 else f"{len(things)} {t}"
        sentences.append(f"There is one {kinds[0]}, {m}, and {count} ({_listing(things)}); "
                         f"everything starts at {line[0]}.")
        if fuel:
            sentences.append(f"{m} has {_value(p, 'fuel', m)} units of fuel, can carry "
                             f"{_value(p, 'capacity', m)} packages at a time and carries none yet; "
                             "no fuel has been used so far.")
        else:
            sentences.append(f"{m} is empty-handed and needs {_value(p, 'move-time', m)} time units "
                             "to pass one corridor.")
        sentences.append(f"Every {kinds[1]} must end up at {line[-1]}.")
    else:
        for m in movers:
            if fuel:
                sentences.append(f"{m} is at {where[m]} with {_value(p, 'fuel', m)} units of fuel; "
                                 f"it can carry {_value(p, 'capacity', m)} packages and carries "
                                 f"{_value(p, 'carried', m)}.")
            else:
                sentences.append(f"{m} is in the {where[m]}, holds nothing and takes "
                                 f"{_value(p, 'move-time', m)} time units per corridor.")
        facts = [f"{x} is at {where[x]}" for x in things]
        rng.shuffle(facts)
        sentences.append(f"Initially {_listing(facts)}.")
        if fuel:
            sentences.append(f"The fuel used so far is {_value(p, 'fuel-used')}.")
        wants = [f"{x} at {goal[x]}" for x in sorted(goal)]
        rng.shuffle(wants)
        sentences.append(f"The goal is to have {_listing(wants)}.")
    sentences.append("Use as little fuel as possible." if fuel and "minimize" in (p.metric or "")
                     else "Use as much fuel as possible." if fuel
                     else "Finish as early as possible." if "minimize" in (p.metric or "")
                     else "Take as long as possible.")
    return " ".join(sentences)


# ---- corruptions ------------------------------------------------------------------------------
def _changed_value(problem: Problem, keys: list[str], rng: random.Random) -> tuple[Problem, str] | None:
    if not keys:
        return None
    key = rng.choice(keys)
    old = problem.fluents[key]
    new = old + rng.choice([-2, -1, 1, 2, 3])
    if new < 0 or new == old:
        return None
    return replace(problem, fluents={**problem.fluents, key: new}), \
        f"{key} {number_text(old)} -> {number_text(new)}"


def _make(kind: str, problem: Problem, rng: random.Random) -> tuple[Problem, str] | None:
    durations = sorted(k for k in problem.fluents if k.startswith("(move-time"))
    if kind == "value":
        return _changed_value(problem, sorted(set(problem.fluents) - set(durations)), rng)
    if kind == "duration":
        return _changed_value(problem, durations, rng)
    if kind == "direction":
        metric = problem.metric or ""
        flipped = metric.replace("minimize", "maximize") if metric.startswith("minimize") \
            else metric.replace("maximize", "minimize")
        return replace(problem, metric=flipped), f"{metric} -> {flipped}"
    if kind == "fluent":
        key = rng.choice(sorted(problem.fluents))
        return replace(problem, fluents={k: v for k, v in problem.fluents.items() if k != key}), \
            f"dropped (= {key} {number_text(problem.fluents[key])})"
    raise ValueError(f"unknown corruption kind {kind!r} (choose from {', '.join(KINDS21)})")


def corrupt21(scenario: Scenario, domain: Domain, kind: str, rng: random.Random):
    """A corruption of ``kind`` that no renaming undoes, or ``None`` (e.g. ``duration`` in the
    numeric domain, whose actions have no durations)."""
    from plansuite.nl2pddl.data.corrupt import Corruption

    for _ in range(TRIES):
        made = _make(kind, scenario.problem, rng)
        if made is not None and structural(scenario.problem, made[0]).equivalent is False:
            return Corruption(made[0], kind, made[1])
    return None
