"""Initial states taken from a folder of problem files (any STRIPS domain)."""

from __future__ import annotations

import random
from pathlib import Path

from plansuite.errors import ConfigError
from plansuite.pddl.model import Atom, Domain


class FolderStates:
    def __init__(self, domain: Domain, folder: str | Path):
        from plansuite.pddl.parse import load_problem

        files = sorted(Path(folder).glob("*.pddl"))
        files = [f for f in files if "domain" not in f.stem]
        if not files:
            raise ConfigError(f"{folder}: no problem files (*.pddl) to take initial states from")
        self.problems = [load_problem(f, domain) for f in files]

    def sample(self, rng: random.Random) -> tuple[dict[str, str], frozenset[Atom]]:
        p = rng.choice(self.problems)
        return dict(p.objects), p.init
