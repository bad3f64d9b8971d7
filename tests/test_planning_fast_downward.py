"""``generator=fast_downward``: the classical planner's row, on a domain written elsewhere (IPC
names, letter blocks, partial goals), planned from the instance folder's own domain file."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

from experiments.elsewhere.write_blocksworld import (
    DOMAIN,
    partial_goal,
    problem_text,
    random_towers,
    state_facts,
)
from plansuite.data.load import load_instances
from plansuite.pddl.parse import load_domain
from plansuite.pddl.simulator import GroundTask
from plansuite.planning.adapters import load_generator
from plansuite.planning.evaluate import EvalSettings, evaluate
from plansuite.planning.loops import PlannerSpec
from plansuite.planning.protocols import GenRequest


def write_problems(folder: Path, n: int, seed: int = 0) -> Path:
    folder.mkdir(parents=True)
    (folder / "domain.pddl").write_text(DOMAIN)
    rng = random.Random(seed)
    for i in range(n):
        blocks = list("abcd")
        goal_towers = [["a", "b", "c", "d"]]
        init = state_facts(random_towers(blocks, rng))
        (folder / f"p{i}.pddl").write_text(problem_text(f"p{i}", blocks, init,
                                                        partial_goal(goal_towers, rng, 1, 3)))
    return folder


def test_fast_downward_solves_every_instance_step_by_step(tmp_path):
    folder = write_problems(tmp_path / "test", 3)
    domain = load_domain(folder / "domain.pddl")
    spec = PlannerSpec(name="fast_downward", loop="sample", k=1, max_steps=200,
                       propose_on_failure="last")
    generator = load_generator("fast_downward", domain_file=folder / "domain.pddl")
    results = evaluate(load_instances(folder, domain), domain, folder / "domain.pddl", generator,
                       None, EvalSettings(spec, val=True), tmp_path / "out", log=lambda _: None)
    assert results["grr"] == 1.0 and results["btr"] == 0
    assert results["val"]["agreement"] == 1.0
    # one planner call per attempt: every later step is read from the remembered plan
    assert len({key[0] for key in generator.next_action}) == 3


def test_an_unsolvable_goal_is_an_empty_completion(tmp_path):
    folder = write_problems(tmp_path / "test", 1)
    domain = load_domain(folder / "domain.pddl")
    problem = replace(load_instances(folder, domain)[0].problem, goal_pos=frozenset({("on", "a", "a")}))
    task = GroundTask(domain, problem)
    generator = load_generator("fast_downward", domain_file=folder / "domain.pddl")
    state = tuple(task.decode(task.encode_atoms(problem.init)))
    assert generator.propose([GenRequest("p", (0, 0), ("(on a a)",), state, 0, task=task)])[0].text == ""
