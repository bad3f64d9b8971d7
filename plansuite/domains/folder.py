"""Initial states taken from a folder of problem files (any STRIPS domain)."""

from __future__ import annotations

import random
from pathlib import Path

from plansuite.pddl.model import Atom, Domain


class FolderStates:
    """Uniform over the problems of ``folder`` (see :func:`plansuite.data.load.load_instances`);
    a problem's goal is ignored, its objects and initial state are the sample."""

    def __init__(self, domain: Domain, folder: str | Path):
        from plansuite.data.load import load_instances

        self.problems = [inst.problem for inst in load_instances(folder, domain)]

    def sample(self, rng: random.Random) -> tuple[dict[str, str], frozenset[Atom]]:
        p = rng.choice(self.problems)
        return dict(p.objects), p.init
