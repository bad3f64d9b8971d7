"""Exact semantics of every loop on a two-block instance with scripted generators/verifiers.

Every case runs through the batched engine and sequentially (batch size 1), and both must give
the same outcome, attempt endings and call counts (the numbers written in each case).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from scripted import ScriptedGenerator, ScriptedVerifier

from plansuite.domains import load_builtin
from plansuite.pddl.codec import format_completion
from plansuite.pddl.model import Problem
from plansuite.pddl.simulator import GroundTask
from plansuite.planning.baselines import OracleVerifier, RandomApplicableGenerator
from plansuite.planning.engine import plan_instance, run_batched
from plansuite.planning.episode import InstanceContext
from plansuite.planning.loops import PlannerSpec, check_verifier
from plansuite.planning.outcomes import judge_plan

# Two blocks on the table; goal: a on b (the full goal state).
INIT = {("on-table", "a"), ("on-table", "b"), ("clear", "a"), ("clear", "b"), ("arm-empty",)}
GOAL = {("on", "a", "b"), ("on-table", "b"), ("clear", "a"), ("arm-empty",)}
PICK_A = format_completion("(pickup a)", ["(clear b)", "(holding a)", "(on-table b)"])
STACK_AB = format_completion("(stack a b)", ["(arm-empty)", "(clear a)", "(on a b)", "(on-table b)"])
PUT_A = format_completion("(putdown a)", ["(arm-empty)", "(clear a)", "(clear b)", "(on-table a)",
                                          "(on-table b)"])
# Claims the goal right away, but stack needs a held block: an inapplicable action.
CHEAT = STACK_AB
# Applicable, but the claimed state is wrong (a stays clear), though stack a b still looks fine.
PICK_A_WRONG = format_completion("(pickup a)", ["(clear a)", "(clear b)", "(holding a)",
                                                "(on-table b)"])
GARBAGE = "lorem ipsum \x00 ACTION"


def context(goal=GOAL, instance="toy") -> InstanceContext:
    task = GroundTask(load_builtin("blocksworld"),
                      Problem(instance, "blocksworld-4ops", {"a": "object", "b": "object"},
                              frozenset(INIT), frozenset(goal)))
    return InstanceContext.of(instance, task, seed=0)


def applicable_only(request) -> float:
    """A verifier that knows applicability but never looks at the claimed next state."""
    return OracleVerifier(check_next_state=False).score([request])[0]


def batched_and_sequential(spec, make_generator, verifier_script=None, ctx=None):
    """Run one instance batched and sequentially; they must agree exactly.
    Returns the result and the engine run's generator (its batches show the requests)."""
    results = []
    for engine in ("batched", "sequential"):
        gen = make_generator()
        ver = ScriptedVerifier(verifier_script) if verifier_script else None
        check_verifier(spec, ver)
        if engine == "batched":
            done = []
            run_batched([ctx], spec, gen, ver, lambda c, r, t, d=done: d.append(r), batch_size=4)
            [result] = done
        else:
            result = plan_instance(ctx, spec, gen, ver)
        assert result.generator_calls == gen.calls
        assert result.verifier_calls == (ver.calls if ver else 0)
        results.append((result, gen))
    assert results[0][0] == results[1][0]
    return results[0]


def plan_both(spec, script, verifier_script=None, ctx=None):
    ctx = ctx or context()
    result, _ = batched_and_sequential(
        spec, lambda: ScriptedGenerator.from_table({"toy": script}, default=GARBAGE),
        verifier_script, ctx)
    outcome, first_bad = judge_plan(ctx.task, result.plan)
    return (outcome.value, first_bad, [a.end.value for a in result.attempts],
            result.generator_calls, result.verifier_calls)


GEN = PlannerSpec(name="generator", loop="sample", k=1, propose_on_failure="last")
STEP = PlannerSpec(name="generator_verifier", loop="stepwise", k=3)
POST = PlannerSpec(name="posthoc", loop="posthoc", k=3)


@pytest.mark.parametrize("script, expected", [
    ([[PICK_A, STACK_AB]], ("success", None, ["goal"], 2, 0)),
    ([[CHEAT]], ("bad_action", 0, ["goal"], 1, 0)),  # claims the goal: proposed, then judged
    ([[PICK_A_WRONG, STACK_AB]], ("bad_next_state", 0, ["goal"], 2, 0)),
    ([[GARBAGE]], ("unparseable", 0, ["unparseable"], 1, 0)),  # the lone attempt is proposed
    ([[PICK_A, GARBAGE]], ("unparseable", 1, ["unparseable"], 2, 0)),
])
def test_generator_at_1(script, expected):
    assert plan_both(GEN, script) == expected


def test_generator_at_k_proposes_first_goal_reaching_attempt():
    spec = replace(GEN, k=3)
    script = [[GARBAGE], [PICK_A, GARBAGE], [PICK_A, STACK_AB]]
    assert plan_both(spec, script) == ("success", None, ["unparseable", "unparseable", "goal"], 5, 0)


def test_generator_at_k_without_goal_proposes_last_attempt_or_nothing():
    spec = replace(GEN, k=2, max_steps=2)
    script = [[PICK_A, PUT_A], [PICK_A, PUT_A]]  # correct steps that go nowhere
    assert plan_both(spec, script) == ("goal_not_reached", None, ["max_steps"] * 2, 4, 0)
    spec = replace(spec, propose_on_failure="none")
    assert plan_both(spec, script) == ("no_plan", None, ["max_steps"] * 2, 4, 0)


def test_stepwise_rejection_restarts_from_s0():
    script = [[CHEAT], [PICK_A, STACK_AB]]
    assert plan_both(STEP, script, applicable_only) == (
        "success", None, ["rejected", "goal"], 3, 3)


def test_stepwise_unparseable_ends_attempt_without_verifier_call():
    script = [[GARBAGE], [PICK_A, GARBAGE], [PICK_A, STACK_AB]]
    assert plan_both(STEP, script, applicable_only) == (
        "success", None, ["unparseable", "unparseable", "goal"], 5, 3)


def test_stepwise_no_plan_after_k_rejections():
    assert plan_both(STEP, [[CHEAT]] * 3, applicable_only) == (
        "no_plan", None, ["rejected"] * 3, 3, 3)


def test_stepwise_verifier_false_positive_is_judged_bad():
    # An (s, a) verifier cannot see a wrong next state: the bad transition gets through.
    assert plan_both(STEP, [[PICK_A_WRONG, STACK_AB]], applicable_only) == (
        "bad_next_state", 0, ["goal"], 2, 2)
    assert plan_both(STEP, [[CHEAT]], lambda r: 0.9) == ("bad_action", 0, ["goal"], 1, 1)


def test_stepwise_threshold_is_the_verifiers():
    ver = ScriptedVerifier(lambda r: 0.6, threshold=0.7)
    done = []
    run_batched([context()], STEP, ScriptedGenerator.from_table({"toy": [[PICK_A]] * 3}), ver,
                lambda c, r, t: done.append(r))
    assert [a.end.value for a in done[0].attempts] == ["rejected"] * 3
    assert done[0].attempts[0].steps[0].score == pytest.approx(0.6)


def test_posthoc_scores_only_goal_reaching_attempts_all_steps_at_once():
    spec = replace(POST, max_steps=2)
    script = [[PICK_A, PUT_A],  # max_steps: never scored
              [PICK_A_WRONG, STACK_AB],  # reaches the (claimed) goal; the oracle rejects step 0
              [PICK_A, STACK_AB]]
    oracle = OracleVerifier()
    assert plan_both(spec, script, lambda r: oracle.score([r])[0]) == (
        "success", None, ["max_steps", "rejected", "goal"], 6, 4)


def test_posthoc_no_plan_when_filter_rejects_everything():
    assert plan_both(POST, [[CHEAT]] * 3, lambda r: 0.0) == ("no_plan", None, ["rejected"] * 3, 3, 3)


@pytest.mark.parametrize("spec", [GEN, STEP, POST])
def test_initial_state_already_at_goal_is_the_empty_plan(spec):
    ctx = context(goal=INIT)
    verdict = plan_both(spec, [], None if spec is GEN else (lambda r: 0.0), ctx=ctx)
    assert verdict == ("success", None, ["goal"], 0, 0)


def test_max_steps_bounds_every_attempt():
    spec = replace(STEP, k=2, max_steps=3)
    script = [[PICK_A, PUT_A] * 5] * 2
    assert plan_both(spec, script, lambda r: 1.0) == ("no_plan", None, ["max_steps"] * 2, 6, 6)


def test_random_restart_finds_valid_plans_reproducibly():
    spec = PlannerSpec(name="random_restart", loop="sample", k=25, propose_on_failure="none")
    ctx = context()
    first = plan_instance(ctx, spec, RandomApplicableGenerator(), None)
    again = plan_instance(ctx, spec, RandomApplicableGenerator(), None)
    assert first == again
    assert judge_plan(ctx.task, first.plan)[0].value == "success"
    assert ctx.task.check_plan([s.parsed.action for s in first.plan]).valid
    other = plan_instance(replace(ctx, seed=1), spec, RandomApplicableGenerator(), None)
    assert [s.text for s in other.plan] != [s.text for s in first.plan] or other.attempts != first.attempts


def test_verifier_setting_must_fit_the_loop():
    from plansuite.errors import ConfigError

    with pytest.raises(ConfigError, match="needs a verifier"):
        check_verifier(STEP, None)
    with pytest.raises(ConfigError, match="uses no verifier"):
        check_verifier(GEN, OracleVerifier())
    with pytest.raises(ConfigError, match="planner.kk: unknown"):
        PlannerSpec.from_dict({"kk": 3})
    with pytest.raises(ConfigError, match="unknown loop"):
        PlannerSpec.from_dict({"loop": "beam"})
