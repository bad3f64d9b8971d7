"""Does a Blocksworld problem generator count, or recall the scenes it trained on?

Greedy, constrained first attempts (the local backend as ``make nl2pddl-cpu`` runs it) on abstract
descriptions of towers with stated unequal heights (the counting curriculum's family,
``scenes.blocksworld_heights``, worded by the dataset's describer), split by whether the generator's
training split holds that (towers before, towers after) combination. Judged by semantic equivalence
with the scene's problem.

    python experiments/nl2pddl/counting_probe.py GENERATOR_EXPORT DATA_DIR [--per-side 40]

Measured 2026-12-03 (experiments/nl2pddl/RESULTS.md): the 6 500-step generator 21/40 trained,
13/40 never seen; the 8 000-step one 34/40 and 26/40.
"""

from __future__ import annotations

import argparse
import random
import re
from pathlib import Path

from plansuite.domains import load_builtin
from plansuite.nl2pddl.data import scenes
from plansuite.nl2pddl.data.dataset import load_pairs
from plansuite.nl2pddl.data.describe import describe
from plansuite.nl2pddl.judging.equivalence import compare
from plansuite.nl2pddl.models.learned import LocalGenerator
from plansuite.pddl.model import problem_to_pddl

SIZES = [3, 4, 5, 6, 7, 8, 9, 10]


def tower_heights(problem_text: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The heights of the towers of ``:init`` and of ``:goal``, in the order of their bottom blocks' numbers.

    >>> tower_heights("(:init (on-table b1) (on b2 b1) (on-table b3)) (:goal (on-table b1))")
    ((2, 1), (1,))
    """
    init, goal = problem_text.split("(:goal")
    out = []
    for section in (init, goal):
        below = {under: top for top, under in re.findall(r"\(on ([^\s()]+) ([^\s()]+)\)", section)}
        heights = []
        for block in sorted(re.findall(r"\(on-table ([^\s()]+)\)", section), key=lambda b: int(b[1:])):
            height = 1
            while block in below:
                block, height = below[block], height + 1
            heights.append(height)
        out.append(tuple(heights))
    return out[0], out[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("export")
    ap.add_argument("data_dir")
    ap.add_argument("--per-side", type=int, default=40)
    args = ap.parse_args()
    domain = load_builtin("blocksworld")
    domain_text = (Path(args.export) / "domain.pddl").read_text()
    trained = {tower_heights(p.problem) for p in load_pairs(args.data_dir, "train")
               if scenes.HEIGHTS in (p.init_scene, p.goal_scene)}
    generator = LocalGenerator(args.export, problem_name="domain")
    words = random.Random(1)
    right = {True: 0, False: 0}
    tried = {True: 0, False: 0}
    for scene in scenes.blocksworld_heights(domain, SIZES, 2000, random.Random("probe")):
        seen = tower_heights(problem_to_pddl(scene.problem)) in trained
        if tried[seen] >= args.per_side:
            if min(tried.values()) >= args.per_side:
                break
            continue
        text = generator.generate(describe(scene, "abstract", words), domain_text, None)
        right[seen] += bool(compare(scene.problem, text, domain, "probe").semantic)
        tried[seen] += 1
    print(f"trained combinations {right[True]}/{tried[True]}, never seen {right[False]}/{tried[False]}")


if __name__ == "__main__":
    main()
