"""Initial states taken from a folder of problem files (any STRIPS domain)."""

from __future__ import annotations

import random
from pathlib import Path

from plansuite.pddl.model import Atom, Domain


class FolderStates:
    """Uniform over the problems of ``folder`` (see :func:`plansuite.pddl.parse.problem_files`);
    a problem's goal is ignored, its objects and initial state are the sample."""

    def __init__(self, domain: Domain, folder: str | Path):
        from plansuite.pddl.parse import load_problem, problem_files

        self.problems = [load_problem(f, domain) for f in problem_files(folder)]

    def sample(self, rng: random.Random) -> tuple[dict[str, str], frozenset[Atom]]:
        p = rng.choice(self.problems)
        return dict(p.objects), p.init
