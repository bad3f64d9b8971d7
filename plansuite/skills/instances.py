"""Where skill rollouts plan: training-distribution instances, never a held-out one.

Sampled (the default)
    Each round draws fresh instances exactly as ``plansuite-data`` draws its test instances (a
    state from the dataset's own state sampler, a random walk of at most ``test_max_walk_len``
    steps, the goal taken from its second half), from a random stream of its own
    (``"<seed>/skills-rNN"``, never the ``"<seed>/test"`` / ``"<seed>/val_instances"`` streams
    the dataset used), and skipping every (initial state, goal) pair of a held-out folder. They
    are written once to ``rNN/instances/`` (atomically) and re-read on resume.
Folder (``rollout.instances=DIR``)
    A folder of problems you made from the training distribution. It is refused when it is, or
    lies inside, a held-out folder, or shares an (initial state, goal) pair with one.

Held-out folders are the dataset's ``test/`` and ``val_instances/`` and the folders the rounds
validate and test on; nothing planned there ever becomes a skill
(:func:`plansuite.skills.archive.skills_from_records` refuses them too).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from plansuite.data.builder import DatasetSpec, pair_key, write_instances
from plansuite.data.load import Instance, load_instances, load_manifest
from plansuite.domains import StateSampler, state_sampler
from plansuite.errors import ConfigError
from plansuite.pddl.model import Domain, Problem, atom_text


def problem_pair(problem: Problem) -> bytes:
    """The (initial state, goal) key of a problem, as the dataset builder computes it."""
    return pair_key(sorted(map(atom_text, problem.init)), sorted(map(atom_text, problem.goal_pos)))


def held_out_pairs(folders: Iterable[Path], domain: Domain) -> set[bytes]:
    """Every (initial state, goal) pair of the held-out folders that exist."""
    return {problem_pair(inst.problem) for folder in folders if Path(folder).is_dir()
            for inst in load_instances(folder, domain)}


def check_rollout_folder(folder: Path, held_out: Sequence[Path], domain: Domain) -> list[Instance]:
    """The folder's instances, or one ConfigError if it is (or overlaps) a held-out folder."""
    resolved = Path(folder).resolve()
    for blocked in held_out:
        if resolved == Path(blocked).resolve() or resolved.is_relative_to(Path(blocked).resolve()):
            raise ConfigError(f"rollout.instances={folder}: is the held-out folder {blocked}; "
                              "skills must come from training-distribution instances, never "
                              "the test or validation set")
    instances = load_instances(folder, domain)
    pairs = held_out_pairs(held_out, domain)
    shared = [inst.id for inst in instances if problem_pair(inst.problem) in pairs]
    if shared:
        raise ConfigError(f"rollout.instances={folder}: {len(shared)} instances (e.g. "
                          f"{shared[0]}) have the initial state and goal of a held-out instance; "
                          "remove them")
    return instances


def dataset_sampler(data_dir: Path, domain: Domain) -> tuple[DatasetSpec, StateSampler]:
    """(DatasetSpec, state sampler) the dataset was built with, from its ``manifest.json``."""
    config = load_manifest(data_dir).get("config") or {}
    states = (config.get("domain") or {}).get("states")
    if not states or "dataset" not in config:
        raise ConfigError(f"{data_dir}/manifest.json: does not say which state sampler and dataset "
                          "settings built it; give rollout.instances=DIR (training-distribution "
                          "problems) instead")
    known = set(DatasetSpec.__dataclass_fields__)
    spec = DatasetSpec(**{k: v for k, v in config["dataset"].items() if k in known})
    return spec, state_sampler(states, domain)


def sample_instances(data_dir: Path, out: Path, n: int, seed: int, round_: int, domain: Domain,
                     exclude: set[bytes]) -> list[Instance]:
    """``n`` fresh instances for round ``round_`` in ``out`` (written once, atomically)."""
    if not (out / "instances.jsonl").is_file():
        spec, sampler = dataset_sampler(data_dir, domain)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
        try:
            write_instances(tmp / "p", f"skills-r{round_:02d}", n, spec, domain, sampler, seed,
                            exclude)
            if out.exists():
                shutil.rmtree(out)
            os.replace(tmp / "p", out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return load_instances(out, domain)
