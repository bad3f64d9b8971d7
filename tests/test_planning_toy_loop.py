"""Adding a planner loop is one module plus one config file (the package docstring's recipe):
``tests/toy_loop.py`` and a ``planner/toy.yaml`` written here, run by ``plansuite-eval``."""

from __future__ import annotations

import json

from scripted import ScriptedGenerator
from test_eval_cli import evaluate_cli, lines
from test_planning_loops import (
    GARBAGE,
    PICK_A,
    STACK_AB,
    applicable_only,
    batched_and_sequential,
    context,
)
from toy_loop import RetryStepSpec

from plansuite.planning.loops import PlannerSpec
from plansuite.planning.outcomes import judge_plan

TOY_YAML = """\
name: toy
loop: toy_loop
k: 1
max_steps: 40
temperature: 1.0
top_p: 0.99
max_new_tokens: null
propose_on_failure: none
budget: null
retries: 2
"""


def test_the_toy_loop_comes_from_its_module_with_its_own_settings():
    spec = PlannerSpec.from_dict({"name": "toy", "loop": "toy_loop", "retries": 1})
    assert isinstance(spec, RetryStepSpec) and spec.retries == 1
    script = {(0, 0, 0): PICK_A, (0, 1, 0): GARBAGE, (0, 1, 1): STACK_AB}
    result, gen = batched_and_sequential(
        spec, lambda: ScriptedGenerator(lambda r: script.get(r.key, GARBAGE)), applicable_only,
        context())
    assert judge_plan(context().task, result.plan)[0].value == "success"
    assert (result.generator_calls, result.verifier_calls) == (3, 2)


def test_plansuite_eval_runs_a_loop_added_by_a_module_and_a_config(tmp_path):
    from scripted import write_toy_instances

    conf = tmp_path / "conf" / "planner"
    conf.mkdir(parents=True)
    (conf / "toy.yaml").write_text(TOY_YAML)
    instances = write_toy_instances(tmp_path / "data", n=4, seed=3)
    results = evaluate_cli(f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "planner=toy",
                           "generator=synthetic", "verifier=oracle", f"instances={instances}",
                           f"out_dir={tmp_path / 'out'}", "planner.retries=3")
    assert results["loop"] == "toy_loop" and results["planner"] == "toy"
    assert results["config"]["planner"]["retries"] == 3
    assert json.loads((tmp_path / "out" / "results.json").read_text())["n_instances"] == 4
    assert len(lines(tmp_path / "out" / "instances.jsonl")) == 4
