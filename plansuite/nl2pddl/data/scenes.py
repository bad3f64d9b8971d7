"""Reference problems for the NL→PDDL data: abstract scenes and random explicit problems.

An *abstract* scenario is a pair of named configurations ("all blocks on the table" → "one
tower") that determines the problem up to renaming of objects, so an abstract description has a
unique answer under semantic equivalence. Pairs whose goal would be ambiguous given the initial
state (a tower → "one tower", in which order?) are deliberately not generated.
A *random* scenario draws the initial state uniformly and the goal from another random state.

Reference goals come in two equivalent forms: ``full`` (every fact of the goal configuration) and
``core`` (the facts that pin each object; the rest is implied), so both forms occur in references.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field

from plansuite.domains.blocksworld import sample_towers, state_atoms
from plansuite.domains.gripper import GRIPPERS
from plansuite.pddl.model import Atom, Domain, Problem

COLORS = ("red", "blue", "green", "yellow", "orange", "purple", "white", "black", "pink", "brown")
ROOM_WORDS = ("kitchen", "hall", "office", "garage", "library")
BLOCK_NAMES = {
    "numbered": lambda n: [f"b{i}" for i in range(1, n + 1)],
    "letters": lambda n: [chr(ord("a") + i) for i in range(n)],
    "colors": lambda n: list(COLORS[:n]),
}
BALL_NAMES = {"numbered": lambda n: [f"ball{i}" for i in range(1, n + 1)],
              "colors": lambda n: list(COLORS[:n])}
ROOM_NAMES = {"letters": lambda n: [f"room{chr(ord('a') + i)}" for i in range(n)],
              "words": lambda n: list(ROOM_WORDS[:n])}
GRIPPER_NAMES = {"sides": lambda: list(GRIPPERS), "numbered": lambda: ["gripper1", "gripper2"]}


@dataclass(frozen=True)
class Scenario:
    problem: Problem
    init_scene: str  # "random" or the name of an abstract configuration
    goal_scene: str
    names: dict[str, str]  # naming scheme per kind of object, e.g. {"block": "colors"}
    params: dict = field(default_factory=dict)  # counts the abstract wording needs (n, k, h, ...)

    @property
    def abstract(self) -> bool:
        return self.init_scene != "random"

    @property
    def training_only(self) -> bool:
        """A scene of a training curriculum (:func:`blocksworld_heights`, :func:`gripper_counts`),
        never held out."""
        return bool({self.init_scene, self.goal_scene} & CURRICULUM_SCENES)


# ---- Blocksworld ------------------------------------------------------------------------------
HEIGHTS = "heights"  # towers of stated heights: the training curriculum of :func:`blocksworld_heights`
COUNTS = "counts"  # rooms holding stated numbers of balls: the curriculum of :func:`gripper_counts`
CURRICULUM_SCENES = frozenset({HEIGHTS, COUNTS})


def _core(atoms: frozenset[Atom]) -> frozenset[Atom]:
    """The facts that place each block; clear and arm-empty follow from them."""
    return frozenset(a for a in atoms if a[0] in ("on", "on-table", "holding"))


def _bw_config(scene: str, blocks: list[str], params: dict) -> frozenset[Atom]:
    if scene == "on_table":
        return state_atoms([[b] for b in blocks], None)
    if scene == "tower":
        return state_atoms([list(blocks)], None)
    if scene == "invert":
        return state_atoms([list(reversed(blocks))], None)
    if scene == "towers":
        h = params["height"]
        return state_atoms([blocks[i:i + h] for i in range(0, len(blocks), h)], None)
    if scene == "staircase":
        towers, start = [], 0
        for height in range(1, params["steps"] + 1):
            towers.append(blocks[start:start + height])
            start += height
        return state_atoms(towers, None)
    if scene == "holding":
        return state_atoms([[b] for b in blocks[1:]], blocks[0])
    if scene == HEIGHTS:
        ends = list(itertools.accumulate(params["heights"]))
        return state_atoms([blocks[end - h:end] for h, end in zip(params["heights"], ends, strict=True)], None)
    raise ValueError(f"unknown blocksworld scene {scene!r}")


def blocksworld_abstract(domain: Domain, sizes: list[int], rng: random.Random) -> list[Scenario]:
    """Every unambiguous abstract (init scene, goal scene, size) combination, once each."""
    out = []
    for n in sizes:
        shapes = [("on_table", "tower", {}), ("on_table", "holding", {}), ("tower", "on_table", {}),
                  ("tower", "invert", {}), ("holding", "on_table", {})]
        for k in range(2, n):
            if n % k == 0 and n // k >= 2:
                shapes += [("on_table", "towers", {"towers": k, "height": n // k}),
                           ("towers", "on_table", {"towers": k, "height": n // k})]
        steps = next((s for s in range(2, n + 1) if s * (s + 1) // 2 == n), None)
        if steps:
            shapes += [("on_table", "staircase", {"steps": steps}), ("staircase", "on_table", {"steps": steps})]
        out += [_bw_scene(domain, init_scene, goal_scene, {"n": n, **params}, rng)
                for init_scene, goal_scene, params in shapes]
    return out


def _bw_scene(domain: Domain, init_scene: str, goal_scene: str, params: dict, rng: random.Random) -> Scenario:
    """The abstract scenario of two named configurations over blocks b1..bn, its goal in the full
    or the core form at random."""
    blocks = BLOCK_NAMES["numbered"](params["n"])
    init = _bw_config(init_scene, blocks, params)
    goal = _bw_config(goal_scene, blocks, params)
    goal = goal if rng.random() < 0.5 else _core(goal)
    problem = Problem(f"bw-{init_scene}-{goal_scene}-{params['n']}", domain.name,
                      {b: "object" for b in blocks}, init, goal)
    return Scenario(problem, init_scene, goal_scene, {"block": "numbered"}, params)


def named_heights(heights: list[int]) -> bool:
    """Whether towers of these heights are a named scene (up to renaming): all on the table, one
    tower, equal towers, a staircase. :func:`blocksworld_heights` leaves those to the named
    scenes, so no held-out scene is ever a curriculum problem.

    >>> named_heights([2, 2]), named_heights([3, 1, 2]), named_heights([2, 4, 1])
    (True, True, False)
    """
    return len(set(heights)) == 1 or sorted(heights) == list(range(1, len(heights) + 1))


def blocksworld_heights(domain: Domain, sizes: list[int], count: int, rng: random.Random) -> list[Scenario]:
    """``count`` distinct training-only abstract problems of towers with stated heights ("three
    towers of two, four and one blocks") built from, or taken down to, the table.

    The named scenes give a tiny generator a handful of (count, height) combinations to learn
    counting from (the ``towers`` family has seven sizes); these give it hundreds, so "a tower of
    h blocks, then the next" is a skill and not a memorised size. Heights that make a named
    scene (:func:`named_heights`) are never drawn, so held-out scenes stay unseen; the dataset
    builder also drops any that equals another problem up to renaming."""
    out: list[Scenario] = []
    seen: set[tuple] = set()
    sizes = [n for n in sizes if n >= 3]  # 1 + 2 is the smallest unnamed split
    for _ in range(100 * count):
        if len(out) >= count or not sizes:
            break
        n = rng.choice(sizes)
        cuts = sorted(rng.sample(range(1, n), rng.randint(1, min(3, n - 2))))  # 2-4 towers, as named scenes have
        heights = [b - a for a, b in zip([0, *cuts], [*cuts, n], strict=True)]
        built = rng.random() < 0.5  # from the table, or taken down to it
        if len(heights) < 2 or named_heights(heights) or (built, *heights) in seen:
            continue
        seen.add((built, *heights))
        init_scene, goal_scene = ("on_table", HEIGHTS) if built else (HEIGHTS, "on_table")
        out.append(_bw_scene(domain, init_scene, goal_scene,
                             {"n": n, "towers": len(heights), "heights": heights}, rng))
    return out


def tower_order(atoms: frozenset[Atom], blocks: list[str]) -> list[Atom]:
    """A Blocksworld state's facts as a person reads the scene: the block in the hand, then tower
    by tower (in the order of their bottom blocks in ``blocks``), each bottom up, then
    ``arm-empty``; facts no tower holds last.

    The generator's target for an abstract description ("three towers of two blocks"): sorted
    atoms scatter one tower over the text (``clear``s first, then every ``on``, then every
    ``on-table``, and ``b10`` before ``b2``), so a small model has to count across the whole
    section; in reading order each tower is one run of adjacent lines, the structure the
    description names. The held block comes first, as the scenes say it first ("the arm holds one
    block and every other block is on the table"): written last, the generator had to remember
    across the towers to leave it out of them, and wrote three blocks held in the hand as three
    on the table.

    >>> state = state_atoms([["b1"], ["b2", "b3"]], None)
    >>> [" ".join(a) for a in tower_order(state, ["b1", "b2", "b3"])]
    ['on-table b1', 'clear b1', 'on-table b2', 'on b3 b2', 'clear b3', 'arm-empty']
    >>> [" ".join(a) for a in tower_order(state_atoms([["b2"]], "b1"), ["b1", "b2"])]
    ['holding b1', 'on-table b2', 'clear b2']
    """
    above = {a[2]: a[1] for a in atoms if a[0] == "on"}
    order: list[Atom] = [a for a in sorted(atoms) if a[0] == "holding"]
    for bottom in blocks:
        if ("on-table", bottom) not in atoms:
            continue
        order.append(("on-table", bottom))
        top, seen = bottom, {bottom}
        while top in above and above[top] not in seen:  # `seen`: a cycle of `on` facts ends it
            order.append(("on", above[top], top))
            top = above[top]
            seen.add(top)
        order.append(("clear", top))
    order.append(("arm-empty",))
    placed = [a for a in order if a in atoms]
    return placed + sorted(atoms - set(placed))


def scene_order(scenario: Scenario) -> dict[str, list[Atom]] | None:
    """The facts of an abstract scenario's ``:init`` and ``:goal`` in reading order (Blocksworld:
    :func:`tower_order`); ``None`` where sorted atoms already read that way (Gripper's scenes:
    ball by ball, then the robot and the grippers)."""
    if "block" not in scenario.names:
        return None
    blocks = list(scenario.problem.objects)
    return {"init": tower_order(scenario.problem.init, blocks),
            "goal": tower_order(scenario.problem.goal_pos, blocks)}


def blocksworld_random(domain: Domain, rng: random.Random, min_blocks: int, max_blocks: int) -> Scenario:
    """A uniform initial state (maybe holding a block); the goal from another uniform state.

    Named like the abstract scenes, by what the description says (here the size), never by an
    arbitrary index: a learned generator has to write the name, and an index nothing predicts
    is noise in its training targets."""
    n = rng.randint(min_blocks, max_blocks)
    scheme = rng.choice(sorted(BLOCK_NAMES))
    blocks = BLOCK_NAMES[scheme](n)
    while True:
        held = rng.choice(blocks) if rng.random() < 0.2 else None
        init = state_atoms(sample_towers([b for b in blocks if b != held], rng), held)
        full_goal = state_atoms(sample_towers(list(blocks), rng), None)
        form = rng.choice(["full", "core", "on-only"])  # on-only: IPC style, truly partial
        goal = {"full": full_goal, "core": _core(full_goal),
                "on-only": frozenset(a for a in full_goal if a[0] == "on")}[form]
        if goal and not goal <= init:
            break
    problem = Problem(f"bw-random-{n}", domain.name, {b: "object" for b in blocks}, init, goal)
    return Scenario(problem, "random", "random", {"block": scheme}, {"n": n, "goal_form": form})


# ---- Gripper ----------------------------------------------------------------------------------
def _gripper_state(robot: str, where: dict[str, str], grippers: list[str]) -> frozenset[Atom]:
    atoms: set[Atom] = {("at-robby", robot)}
    for ball, place in where.items():
        atoms.add(("carry", ball, place) if place in grippers else ("at", ball, place))
    atoms.update(("free", g) for g in grippers if g not in where.values())
    return frozenset(atoms)


def _gripper_objects(balls, rooms, grippers) -> dict[str, str]:
    return {**{b: "ball" for b in balls}, **{r: "room" for r in rooms}, **{g: "gripper" for g in grippers}}


def gripper_abstract(domain: Domain, sizes: list[int], room_counts: list[int],
                     rng: random.Random) -> list[Scenario]:
    out = []
    grippers = GRIPPER_NAMES["sides"]()
    for n in sizes:
        for r in room_counts:
            balls, rooms = BALL_NAMES["numbered"](n), ROOM_NAMES["letters"](r)
            # the first n/r balls in the first room, ... (only where the rooms get equal shares)
            spread = _consecutive(balls, rooms, [n // r] * r) if n % r == 0 else {}
            shapes = [("one_room", "other_room")]
            if n % r == 0:  # "evenly" is only unambiguous when the rooms get equal shares
                shapes += [("spread", "gather"), ("one_room", "spread")]
                if r == 2:
                    shapes.append(("spread", "swap"))
            if n >= 3:
                shapes.append(("carrying", "other_room"))
            for init_scene, goal_scene in shapes:
                params = {"n": n, "rooms": r, "per_room": n // r}
                if init_scene == "one_room":
                    init = _gripper_state(rooms[0], dict.fromkeys(balls, rooms[0]), grippers)
                elif init_scene == "spread":
                    init = _gripper_state(rooms[0], spread, grippers)
                else:  # carrying: one ball in each gripper, the others in the robot's room
                    where = {b: rooms[0] for b in balls}
                    where.update(zip(balls[:2], grippers, strict=True))
                    init = _gripper_state(rooms[0], where, grippers)
                target = {"other_room": dict.fromkeys(balls, rooms[1]), "spread": spread,
                          "gather": dict.fromkeys(balls, rooms[0]),
                          "swap": _traded(spread, rooms) if r == 2 else {}}[goal_scene]
                out.append(_numbered_scene(domain, init_scene, goal_scene, init, target, balls, rooms, params, rng))
    return out


def _consecutive(balls: list[str], rooms: list[str], counts: list[int]) -> dict[str, str]:
    """Ball -> room, the first ``counts[0]`` balls in the first room, the next in the second, ...:
    how a person counts balls into rooms, and (in sorted atoms) one run of lines per room, the
    shape :func:`gripper_counts` teaches ("two in rooma, four in roomb").

    >>> _consecutive(["b1", "b2", "b3"], ["x", "y"], [1, 2])
    {'b1': 'x', 'b2': 'y', 'b3': 'y'}
    """
    where = [room for room, c in zip(rooms, counts, strict=False) for _ in range(c)]
    return dict(zip(balls, where, strict=True))


def _traded(where: dict[str, str], rooms: list[str]) -> dict[str, str]:
    """Ball -> the other of two rooms: where each ball of ``where`` ends when the rooms trade balls.

    >>> _traded({"b1": "x", "b2": "y"}, ["x", "y"])
    {'b1': 'y', 'b2': 'x'}
    """
    return {b: rooms[1 - rooms.index(room)] for b, room in where.items()}


def _numbered_scene(domain: Domain, init_scene: str, goal_scene: str, init: frozenset[Atom],
                    target: dict[str, str], balls: list[str], rooms: list[str], params: dict,
                    rng: random.Random) -> Scenario:
    """A scene of numbered balls, lettered rooms and the left and right grippers whose goal puts
    each ball of ``target`` in its room; half the time (one draw of ``rng``) the goal also states
    the grippers free, which the placed balls imply."""
    grippers = GRIPPER_NAMES["sides"]()
    goal = {("at", b, room) for b, room in target.items()}
    if rng.random() < 0.5:  # full form: the (implied) free grippers too
        goal |= {("free", g) for g in grippers}
    problem = Problem(f"gripper-{init_scene}-{goal_scene}-{len(balls)}-{len(rooms)}", domain.name,
                      _gripper_objects(balls, rooms, grippers), init, frozenset(goal))
    return Scenario(problem, init_scene, goal_scene, {"ball": "numbered", "room": "letters", "gripper": "sides"},
                    params)


def gripper_counts(domain: Domain, sizes: list[int], room_counts: list[int], count: int,
                   rng: random.Random) -> list[Scenario]:
    """``count`` distinct training-only abstract problems of rooms holding stated numbers of
    balls ("two balls in rooma and four in roomb"), distributed from one room or gathered into it.

    Gripper's counterpart of :func:`blocksworld_heights`: the named ``spread`` scenes show a
    handful of (balls, rooms) combinations, these show hundreds of ways to count balls into rooms.
    Equal counts (the named ``spread``) are never drawn, nor an empty room (``one_room``)."""
    out: list[Scenario] = []
    seen: set[tuple] = set()
    grippers = GRIPPER_NAMES["sides"]()
    options = [(n, r) for n in sizes for r in room_counts if n > r >= 2]
    for _ in range(100 * count):
        if len(out) >= count or not options:
            break
        n, r = rng.choice(options)
        cuts = sorted(rng.sample(range(1, n), r - 1))
        counts = [b - a for a, b in zip([0, *cuts], [*cuts, n], strict=True)]
        gathered = rng.random() < 0.5  # counted out of one room, or gathered into it
        if len(set(counts)) == 1 or (gathered, *counts) in seen:
            continue
        seen.add((gathered, *counts))
        balls, rooms = BALL_NAMES["numbered"](n), ROOM_NAMES["letters"](r)
        counted, together = _consecutive(balls, rooms, counts), dict.fromkeys(balls, rooms[0])
        init_scene, goal_scene = (COUNTS, "gather") if gathered else ("one_room", COUNTS)
        init = _gripper_state(rooms[0], counted if gathered else together, grippers)
        out.append(_numbered_scene(domain, init_scene, goal_scene, init, together if gathered else counted,
                                   balls, rooms, {"n": n, "rooms": r, "counts": counts}, rng))
    return out


def gripper_random(domain: Domain, rng: random.Random, min_balls: int, max_balls: int,
                   room_counts: list[int]) -> Scenario:
    n, r = rng.randint(min_balls, max_balls), rng.choice(room_counts)
    names = {"ball": rng.choice(sorted(BALL_NAMES)), "room": rng.choice(sorted(ROOM_NAMES)),
             "gripper": rng.choice(sorted(GRIPPER_NAMES))}
    balls, rooms = BALL_NAMES[names["ball"]](n), ROOM_NAMES[names["room"]](r)
    grippers = GRIPPER_NAMES[names["gripper"]]()
    while True:
        where = {b: rng.choice(rooms) for b in balls}
        carried = rng.sample(balls, rng.choice([0, 0, 1, 2]))
        where.update(zip(carried, grippers[:len(carried)], strict=True))
        init = _gripper_state(rng.choice(rooms), where, grippers)
        moved = rng.sample(balls, rng.randint(1, n))
        goal = {("at", b, rng.choice(rooms)) for b in moved}
        if rng.random() < 0.2:
            goal.add(("at-robby", rng.choice(rooms)))
        if not goal <= init:
            break
    problem = Problem(f"gripper-random-{n}-{r}", domain.name, _gripper_objects(balls, rooms, grippers),
                      init, frozenset(goal))
    return Scenario(problem, "random", "random", names, {"n": n, "rooms": r})
