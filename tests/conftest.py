"""Shared fixtures: built-in domains, a small typed test domain, random problems, a tiny dataset."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml

from plansuite.domains import domain_file, load_builtin
from plansuite.domains.blocksworld import BlocksworldStates
from plansuite.domains.gripper import GripperStates
from plansuite.pddl.model import Atom, Domain, Problem, problem_to_pddl
from plansuite.pddl.parse import parse_domain

REPO = Path(__file__).resolve().parents[1]


def _shared_dirs() -> list[Path]:
    """``../shared`` next to the repository; in a git worktree, also next to the main checkout."""
    dirs = [REPO.parent / "shared"]
    git = REPO / ".git"
    if git.is_file() and git.read_text().startswith("gitdir:"):  # .../main/.git/worktrees/<name>
        dirs.append(Path(git.read_text().split(":", 1)[1].strip()).parents[2].parent / "shared")
    return dirs


PAPER_TEST = next((d / "benchmarks" / "paper-blocksworld-test" for d in _shared_dirs()
                   if (d / "benchmarks" / "paper-blocksworld-test").is_dir()),
                  REPO.parent / "shared" / "benchmarks" / "paper-blocksworld-test")

# Typing with a subtype, constants (one used in an equality), negative preconditions on a fluent
# and a static predicate, equality and inequality: every construct the simulator supports.
KEYS_DOMAIN = """\
(define (domain keys)
  (:requirements :strips :typing :negative-preconditions :equality)
  (:types room hall - place key)
  (:constants home - hall master - key)
  (:predicates (at ?p - place) (has ?k - key) (key-at ?k - key ?p - place)
               (locked ?p - place) (opens ?k - key ?p - place) (link ?a ?b - place)
               (alarm ?p - place))
  (:action go
    :parameters (?from ?to - place)
    :precondition (and (at ?from) (link ?from ?to) (not (= ?from ?to)) (not (locked ?to)))
    :effect (and (at ?to) (not (at ?from))))
  (:action take
    :parameters (?k - key ?p - place)
    :precondition (and (at ?p) (key-at ?k ?p) (not (has ?k)))
    :effect (and (has ?k) (not (key-at ?k ?p))))
  (:action unlock
    :parameters (?k - key ?from - place ?to - room)
    :precondition (and (at ?from) (link ?from ?to) (locked ?to) (has ?k) (opens ?k ?to)
                       (not (alarm ?to)))
    :effect (not (locked ?to)))
  (:action return
    :parameters (?p - room)
    :precondition (and (at ?p) (has master) (not (= ?p home)))
    :effect (and (at home) (not (at ?p))))
  (:action stay
    :parameters (?p - place)
    :precondition (and (at ?p) (= ?p home))
    :effect (has master)))
"""


@pytest.fixture(scope="session")
def blocksworld() -> Domain:
    return load_builtin("blocksworld")


@pytest.fixture(scope="session")
def gripper() -> Domain:
    return load_builtin("gripper")


@pytest.fixture(scope="session")
def keys_domain() -> Domain:
    return parse_domain(KEYS_DOMAIN, "keys.pddl")


@pytest.fixture(scope="session")
def keys_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("keys") / "domain.pddl"
    path.write_text(KEYS_DOMAIN)
    return path


def _keys_problem(rng: random.Random, rooms: int = 3) -> Problem:
    """A random problem of the keys domain: rooms linked to the hall (some locked), keys about."""
    names = [f"r{i}" for i in range(1, rooms + 1)]
    objects = {**{r: "room" for r in names}, "h2": "hall", "k1": "key", "k2": "key"}
    places = [*names, "h2", "home"]
    init: set[Atom] = {("at", rng.choice(places))}
    for r in names:
        for hall in ("home", "h2"):
            if rng.random() < 0.7:
                init |= {("link", r, hall), ("link", hall, r)}
        if rng.random() < 0.5:
            init.add(("locked", r))
        if rng.random() < 0.2:
            init.add(("alarm", r))
    init |= {("link", "home", "h2"), ("link", "h2", "home"), ("link", "home", "home")}
    for k in ("k1", "k2", "master"):
        init.add(("key-at", k, rng.choice(places)))
        init |= {("opens", k, r) for r in names if rng.random() < 0.5}
    goal = {("at", rng.choice(places))}
    return Problem("keys-p", "keys", objects, frozenset(init), frozenset(goal))


SAMPLERS = {"blocksworld": BlocksworldStates(3, 6), "gripper": GripperStates(1, 4, 3)}


def _random_problem(domain_name: str, rng: random.Random) -> Problem:
    if domain_name == "keys":
        return _keys_problem(rng)
    objects, init = SAMPLERS[domain_name].sample(rng)
    return Problem("rand", load_builtin(domain_name).name, objects, init, frozenset())


@pytest.fixture(scope="session")
def random_problem():
    """``random_problem(name, rng)``: a problem of blocksworld, gripper or keys with a random
    initial state (and, for the built-ins, no goal: tests set the goal they need)."""
    return _random_problem


@pytest.fixture(scope="session")
def domains(blocksworld, gripper, keys_domain, keys_file) -> dict[str, tuple[Domain, Path]]:
    """name -> (domain, domain file) for the three domains the cross-checks run on."""
    return {"blocksworld": (blocksworld, domain_file("blocksworld")),
            "gripper": (gripper, domain_file("gripper")), "keys": (keys_domain, keys_file)}


def write_problem(problem: Problem, domain: Domain, path: Path) -> Path:
    path.write_text(problem_to_pddl(problem, domain))
    return path


@pytest.fixture(scope="session")
def builtin_file():
    """``builtin_file(name) -> Path`` of a built-in domain's PDDL file."""
    return domain_file


@pytest.fixture(scope="session")
def write_pddl():
    """``write_pddl(problem, domain, path) -> path``: the problem as canonical PDDL."""
    return write_problem


@pytest.fixture(scope="session")
def paper_test_dir() -> Path:
    if not (PAPER_TEST / "domain.pddl").is_file():
        pytest.skip(f"{PAPER_TEST} not present")
    return PAPER_TEST


@pytest.fixture(scope="session")
def tiny_dataset(tmp_path_factory) -> Path:
    """The tiny preset on blocksworld, built once per session (well under a second)."""
    from plansuite.data.builder import DatasetSpec, build_dataset

    out = tmp_path_factory.mktemp("data") / "tiny"
    domain = load_builtin("blocksworld")
    preset = yaml.safe_load((REPO / "conf" / "dataset" / "tiny.yaml").read_text())
    build_dataset(DatasetSpec(**preset), domain, domain_file("blocksworld").read_text(),
                  BlocksworldStates(3, 8), out, seed=7, workers=2, config={"dataset": preset},
                  progress=lambda _: None)
    return out


@pytest.fixture(scope="session")
def train_problem_generator():
    """``train(data_dir, out_dir, steps, max_new_tokens, *overrides) -> export``: a tiny problem
    generator (one 32-wide layer, a 400-token corpus BPE) trained for ``steps`` steps on an NL→PDDL
    data folder."""
    import os

    from hydra import compose, initialize_config_dir

    from plansuite.cli import CONF_DIR
    from plansuite.cli.train import run as train_run

    def train(data_dir: Path, out_dir: Path, steps: int, max_new_tokens: int, *overrides: str) -> Path:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            cfg = compose("train", [
                "model=problem_generator", f"data_dir={data_dir}", f"out_dir={out_dir}",
                "model.backbone.n_layer=1", "model.backbone.n_embd=32", "model.backbone.n_head=2",
                "model.vocab_size=400", "logger=none", "trainer.enable_progress_bar=false",
                f"trainer.max_steps={steps}", "model.val_greedy=1", f"model.max_new_tokens={max_new_tokens}",
                *overrides])
        train_run(cfg)
        return out_dir / "export"

    return train
