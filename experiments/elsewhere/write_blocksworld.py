"""A Blocksworld written the way other people write it, for ``make demo DOMAIN_FILE=... PROBLEMS=...
TEST=...``: the IPC names (``ontable``, ``handempty``, ``pick-up``, ``put-down``), blocks named by
letters, goals of one to four ``on`` facts (a partial goal: where the other blocks end up is free).
Nothing here reads the suite's built-in domain, so a study on these files measures the pipeline,
not the built-in names.

``python -m experiments.elsewhere.write_blocksworld OUT [--problems N] [--test N] [--blocks 4 5]``
writes ``OUT/domain.pddl``, ``OUT/problems/`` (initial states for the random walks; their goals are
ignored by training) and ``OUT/test/`` (with ``domain.pddl`` beside them, so ``plansuite-eval
instances=OUT/test`` plans against it). Every goal is reachable: it is a set of ``on`` facts of one
random arrangement of the blocks. Deterministic per ``--seed``; the two folders use separate
random streams and no test (init, goal) pair appears among the problems.

>>> import random
>>> towers = random_towers(list("abcd"), random.Random(0))
>>> sorted(b for t in towers for b in t)
['a', 'b', 'c', 'd']
>>> facts = state_facts(towers)
>>> sum(f.startswith("(ontable") for f in facts) == len(towers)
True
>>> goal = partial_goal([["a", "b", "c"]], random.Random(1), 1, 4)
>>> set(goal) <= {"(on b a)", "(on c b)"} and len(goal) >= 1
True
"""

from __future__ import annotations

import argparse
import random
import string
from itertools import pairwise
from pathlib import Path

DOMAIN = """\
; Blocksworld as the IPC writes it (4 operators, untyped).
(define (domain blocks)
  (:requirements :strips)
  (:predicates (on ?x ?y) (ontable ?x) (clear ?x) (handempty) (holding ?x))
  (:action pick-up
    :parameters (?x)
    :precondition (and (clear ?x) (ontable ?x) (handempty))
    :effect (and (not (ontable ?x)) (not (clear ?x)) (not (handempty)) (holding ?x)))
  (:action put-down
    :parameters (?x)
    :precondition (holding ?x)
    :effect (and (not (holding ?x)) (clear ?x) (handempty) (ontable ?x)))
  (:action stack
    :parameters (?x ?y)
    :precondition (and (holding ?x) (clear ?y))
    :effect (and (not (holding ?x)) (not (clear ?y)) (clear ?x) (handempty) (on ?x ?y)))
  (:action unstack
    :parameters (?x ?y)
    :precondition (and (on ?x ?y) (clear ?x) (handempty))
    :effect (and (holding ?x) (clear ?y) (not (clear ?x)) (not (handempty)) (not (on ?x ?y)))))
"""


def random_towers(blocks: list[str], rng: random.Random) -> list[list[str]]:
    """A uniformly shuffled arrangement of ``blocks`` into towers, each listed bottom to top."""
    order = list(blocks)
    rng.shuffle(order)
    towers: list[list[str]] = []
    for block in order:
        if towers and rng.random() < 0.5:
            rng.choice(towers).append(block)
        else:
            towers.append([block])
    return towers


def state_facts(towers: list[list[str]]) -> list[str]:
    facts = ["(handempty)"]
    for tower in towers:
        facts.append(f"(ontable {tower[0]})")
        facts += [f"(on {top} {below})" for below, top in pairwise(tower)]
        facts.append(f"(clear {tower[-1]})")
    return facts


def partial_goal(towers: list[list[str]], rng: random.Random, low: int, high: int) -> list[str]:
    """One to four ``on`` facts of ``towers`` (all of them when there are fewer)."""
    on = [f"(on {top} {below})" for t in towers for below, top in pairwise(t)]
    return sorted(rng.sample(on, min(len(on), rng.randint(low, high))))


def problem_text(name: str, blocks: list[str], init: list[str], goal: list[str]) -> str:
    lines = "\n    ".join(init)
    goals = "\n      ".join(goal)
    return (f"(define (problem {name})\n  (:domain blocks)\n  (:objects {' '.join(blocks)})\n"
            f"  (:init\n    {lines})\n  (:goal (and\n      {goals})))\n")


def write_set(folder: Path, count: int, sizes: tuple[int, int], rng: random.Random,
              taken: set, prefix: str) -> set:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "domain.pddl").write_text(DOMAIN)
    pairs = set()
    n = 0
    while n < count:
        blocks = list(string.ascii_lowercase[:rng.randint(*sizes)])
        init = state_facts(random_towers(blocks, rng))
        goal_towers = random_towers(blocks, rng)
        while not any(len(t) > 1 for t in goal_towers):
            goal_towers = random_towers(blocks, rng)
        goal = partial_goal(goal_towers, rng, 1, 4)
        key = (tuple(sorted(init)), tuple(goal))
        if key in taken or key in pairs or set(goal) <= set(init):
            continue
        pairs.add(key)
        name = f"{prefix}{n:03d}"
        (folder / f"{name}.pddl").write_text(problem_text(name, blocks, init, goal))
        n += 1
    return pairs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--problems", type=int, default=200)
    parser.add_argument("--test", type=int, default=100)
    parser.add_argument("--blocks", type=int, nargs=2, default=(4, 5), metavar=("MIN", "MAX"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "domain.pddl").write_text(DOMAIN)
    sizes = tuple(args.blocks)
    taken = write_set(args.out / "problems", args.problems, sizes, random.Random(f"{args.seed}/problems"),
                      set(), "train")
    write_set(args.out / "test", args.test, sizes, random.Random(f"{args.seed}/test"), taken, "p")
    print(f"wrote {args.out}/domain.pddl, {args.problems} problems, {args.test} test problems")


if __name__ == "__main__":
    main()
