"""Reading a dataset directory written by :mod:`plansuite.data.builder`, and instance folders.

Verifier examples are read by their recipe: :mod:`plansuite.data.verifier_recipes`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from plansuite.errors import ConfigError
from plansuite.jsonl import iter_jsonl
from plansuite.pddl.codec import format_completion, format_prompt
from plansuite.pddl.model import Domain, Problem


@dataclass(frozen=True)
class TransitionRecord:
    traj: int
    step: int
    objects: dict[str, str]
    goal: tuple[str, ...]
    state: tuple[str, ...]
    action: str
    next_state: tuple[str, ...]

    @property
    def prompt(self) -> str:
        return format_prompt(self.goal, self.state)

    @property
    def completion(self) -> str:
        return format_completion(self.action, self.next_state)


@dataclass(frozen=True)
class Instance:
    id: str
    path: Path
    problem: Problem


def pair_key(state: list[str], goal: list[str]) -> bytes:
    """Digest of a (state, goal) prompt, for the leakage check."""
    text = "\n".join(state) + "\x00" + "\n".join(goal)
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


def load_manifest(data_dir: str | Path) -> dict:
    path = Path(data_dir) / "manifest.json"
    if not path.is_file():
        raise ConfigError(f"{data_dir}: not a plansuite dataset (no manifest.json; build one with "
                          "plansuite-data)")
    return json.loads(path.read_text())


def split_file(data_dir: str | Path, split: str, name: str) -> Path:
    load_manifest(data_dir)
    path = Path(data_dir) / split / name
    if not path.is_file():
        raise ConfigError(f"{path}: missing from the dataset (splits: train, val)")
    return path


def load_trajectories(data_dir: str | Path, split: str) -> list[dict]:
    return list(iter_jsonl(split_file(data_dir, split, "trajectories.jsonl")))


def transitions_of(traj: dict) -> list[TransitionRecord]:
    goal, states = tuple(traj["goal"]), traj["states"]
    return [TransitionRecord(traj["id"], i, traj["objects"], goal, tuple(states[i]), a,
                             tuple(states[i + 1])) for i, a in enumerate(traj["actions"])]


SHORTEST_FILE = "shortest.jsonl"  # beside trajectories.jsonl: plansuite/data/shortest.py
TRAJECTORY_FILES = {"walk": "trajectories.jsonl", "shortest": SHORTEST_FILE}


def load_transitions(data_dir: str | Path, split: str, limit: int | None = None,
                     trajectories: str = "walk") -> list[TransitionRecord]:
    """The transitions of a split's random walks (``walk``, the paper's), or of the same walks'
    shortest paths (``shortest``: :mod:`plansuite.data.shortest`)."""
    if trajectories not in TRAJECTORY_FILES:
        raise ConfigError(f"trajectories={trajectories!r}: choose from "
                          f"{', '.join(TRAJECTORY_FILES)}")
    name = TRAJECTORY_FILES[trajectories]
    if trajectories == "shortest" and not (Path(data_dir) / split / name).is_file():
        raise ConfigError(f"{data_dir}: has no {split}/{name}; build the dataset with "
                          "dataset.shortest_paths=true")
    out: list[TransitionRecord] = []
    for traj in iter_jsonl(split_file(data_dir, split, name)):
        out.extend(transitions_of(traj))
        if limit is not None and len(out) >= limit:
            return out[:limit]
    return out


def check_limit(limit, key: str = "limit") -> int | None:
    """``limit`` if it is null or a positive integer; else one ConfigError line (a negative
    slice would silently drop instances from the end, and 0 would evaluate nothing)."""
    if limit is None or (isinstance(limit, int) and not isinstance(limit, bool) and limit >= 1):
        return limit
    raise ConfigError(f"{key}={limit!r}: must be a positive integer, or null for all")


def load_instances(folder: str | Path, domain: Domain, limit: int | None = None) -> list[Instance]:
    """Every ``*.pddl`` problem in ``folder`` (a file named ``domain.pddl`` is skipped)."""
    from plansuite.pddl.parse import load_problem, problem_files

    check_limit(limit)
    return [Instance(f.stem, f, load_problem(f, domain)) for f in problem_files(folder)[:limit]]


def leaked_instances(data_dir: str | Path, split: str = "test") -> list[str]:
    """Ids of the ``split`` instances whose (init, goal) is the (state, goal) prompt of a training
    transition, recomputed from the files alone (the builder resamples these: expect ``[]``)."""
    from plansuite.pddl.model import atom_text
    from plansuite.pddl.parse import load_domain

    seen = {pair_key(state, traj["goal"]) for traj in load_trajectories(data_dir, "train")
            for state in traj["states"][:-1]}
    domain = load_domain(Path(data_dir) / "domain.pddl")
    leaks = []
    for inst in load_instances(Path(data_dir) / split, domain):
        init = sorted(map(atom_text, inst.problem.init))
        goal = sorted(map(atom_text, inst.problem.goal_pos))
        if pair_key(init, goal) in seen:
            leaks.append(inst.id)
    return leaks
