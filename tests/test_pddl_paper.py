"""The paper's 200 Blocksworld test instances (../shared/benchmarks; skipped when absent)."""

from __future__ import annotations

import pytest

from plansuite.data.load import load_instances
from plansuite.domains import load_builtin
from plansuite.pddl import fast_downward
from plansuite.pddl.parse import load_domain
from plansuite.pddl.simulator import GroundTask
from plansuite.pddl.val import validate


@pytest.fixture(scope="module")
def paper_instances(paper_test_dir, blocksworld):
    return load_instances(paper_test_dir, blocksworld)


def test_all_paper_instances_load_with_the_builtin_domain(paper_test_dir, paper_instances):
    paper_domain = load_domain(paper_test_dir / "domain.pddl")
    assert (paper_domain.name, paper_domain.actions) == (
        "blocksworld-4ops", load_builtin("blocksworld").actions)  # the paper's own domain file
    instances = paper_instances
    assert len(instances) == 200
    for inst in instances:
        p = inst.problem
        n = len(p.objects)
        assert 3 <= n <= 8 and p.domain_name == "blocksworld-4ops"
        # Full-state goals: every block is placed (on something, on the table or held).
        placed = {a[1] for a in p.goal_pos if a[0] in ("on", "on-table", "holding")}
        assert placed == set(p.objects)


@pytest.mark.parametrize("index", [0, 57, 123, 199])
def test_fast_downward_solves_and_val_and_simulator_agree(paper_test_dir, paper_instances,
                                                         blocksworld, index):
    instance = paper_instances[index]
    domain_file = paper_test_dir / "domain.pddl"
    result = fast_downward.solve(domain_file, instance.path, mode="optimal", time_limit=60)
    assert result.solved, result.message
    assert validate(domain_file, instance.path, result.plan).valid
    task = GroundTask(blocksworld, instance.problem)
    assert task.check_plan(result.plan).valid
    if result.plan:  # and a plan one step short is rejected by both
        short = result.plan[:-1]
        assert not validate(domain_file, instance.path, short).valid
        assert not task.check_plan(short).valid
