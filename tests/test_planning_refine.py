"""Exact semantics of ``refine_resume`` on the two-block instance, with scripted generators.

The scripts are keyed by the full request key: ``(episode, step)`` for the first try at a
checkpoint, ``(episode, step, try)`` for retries. Every case runs through the batched engine and
sequential planning (batch size 1), which must agree on everything (attempts, steps, scores, notes, calls).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from scripted import ScriptedGenerator
from test_planning_engine import CHAOTIC, noisy_verifier, random_contexts
from test_planning_loops import (
    CHEAT,
    GARBAGE,
    PICK_A,
    PICK_A_WRONG,
    PUT_A,
    STACK_AB,
    applicable_only,
    batched_and_sequential,
    context,
)

from plansuite.errors import ConfigError
from plansuite.pddl.codec import format_completion
from plansuite.planning.baselines import OracleVerifier, SyntheticGenerator
from plansuite.planning.engine import plan_instance, run_batched
from plansuite.planning.loops import PlannerSpec, check_verifier, feedback_source
from plansuite.planning.outcomes import judge_plan
from plansuite.planning.refine import RefineResumeSpec

REFINE = RefineResumeSpec(k=3, reset_after=3)
ENV = replace(REFINE, name="refine_resume_env", feedback="environment")
STEP = PlannerSpec(name="generator_verifier", loop="stepwise", k=3)
# Inapplicable while holding a: the arm is not empty.
PICK_B = format_completion("(pickup b)", ["(clear a)", "(holding b)", "(on-table a)"])
FLY = format_completion("(fly a)", ["(arm-empty)"])


def run_both(spec, script, verifier_script=None):
    """Batched and sequential on the toy instance (they must agree); ``script`` maps request
    keys to texts (missing keys give garbage), or is a function of the request."""
    answer = script if callable(script) else (lambda r: script.get(r.key, GARBAGE))
    return batched_and_sequential(spec, lambda: ScriptedGenerator(answer), verifier_script, context())


def summary(result, ctx=None):
    outcome, first_bad = judge_plan((ctx or context()).task, result.plan)
    return (outcome.value, first_bad, [a.end.value for a in result.attempts],
            result.generator_calls, result.verifier_calls, result.events)


def test_rejected_step_is_resampled_from_the_checkpoint_not_s0():
    script = {(0, 0): PICK_A, (0, 1): PICK_B, (0, 1, 1): STACK_AB,  # refine: 3 calls
              (1, 0): PICK_A, (1, 1): STACK_AB}  # what restart needs after the rejection
    result, gen = run_both(REFINE, script, applicable_only)
    assert summary(result) == ("success", None, ["goal"], 3, 3,
                               {"failed_tries": 1, "resets": 0})
    assert [r.key for r in gen.batches[0] + gen.batches[1] + gen.batches[2]] == [
        (0, 0), (0, 1), (0, 1, 1)]
    assert [r.state for r in gen.batches[1] + gen.batches[2]] == [PICK_A_STATE] * 2
    assert [s.accepted for s in result.attempts[0].steps] == [True, False, True]
    restart, _ = run_both(STEP, script, applicable_only)
    assert summary(restart)[:5] == ("success", None, ["rejected", "goal"], 4, 4)


PICK_A_STATE = ("(clear b)", "(holding a)", "(on-table b)")


def test_reset_to_s0_after_reset_after_failed_tries_at_one_checkpoint():
    script = {(0, 0): PICK_A, (0, 1): PICK_B, (0, 1, 1): GARBAGE,  # 2 failures: reset
              (1, 0): PICK_A, (1, 1): STACK_AB}
    result, gen = run_both(replace(REFINE, reset_after=2), script, applicable_only)
    # the garbage try costs a generator call but no verifier call
    assert summary(result) == ("success", None, ["rejected", "goal"], 5, 4,
                               {"failed_tries": 2, "resets": 1})
    assert gen.batches[3][0].state == context().init  # the reset really went back to s0


def test_failures_count_per_checkpoint_a_new_checkpoint_starts_afresh():
    script = {(0, 0): CHEAT, (0, 0, 1): PICK_A,  # one failure at s0
              (0, 1): PICK_B, (0, 1, 1): STACK_AB}  # one at the next checkpoint: no reset
    result, _ = run_both(replace(REFINE, reset_after=2), script, applicable_only)
    assert summary(result) == ("success", None, ["goal"], 4, 4, {"failed_tries": 2, "resets": 0})


def test_no_reset_retries_at_the_checkpoint_until_the_budget():
    spec = replace(REFINE, reset_after=None, budget=7)
    script = {(0, 0): PICK_A}  # every later try is garbage
    result, gen = run_both(spec, script, applicable_only)
    assert summary(result) == ("no_plan", None, ["budget"], 7, 1,
                               {"failed_tries": 6, "resets": 0})
    assert [r.key for b in gen.batches for r in b][-1] == (0, 1, 5)


def test_budget_truncates_exactly_and_is_a_prefix_of_a_larger_run():
    script = {(0, 0): PICK_A, (0, 1): PICK_B, (0, 1, 1): PICK_B, (0, 1, 2): PICK_B,
              (1, 0): PICK_A, (1, 1): STACK_AB}
    full, full_gen = run_both(REFINE, script, applicable_only)
    assert summary(full) == ("success", None, ["rejected", "goal"], 6, 6,
                             {"failed_tries": 3, "resets": 1})
    for budget in range(1, 6):
        cut, cut_gen = run_both(replace(REFINE, budget=budget), script, applicable_only)
        assert summary(cut)[0] == "no_plan" and cut.generator_calls == budget
        # at 4 calls the first episode has just been reset: no second one is started
        assert cut.attempts[-1].end.value == ("rejected" if budget == 4 else "budget")
        keys = [r.key for b in cut_gen.batches for r in b]
        assert keys == [r.key for b in full_gen.batches for r in b][:budget]
    exact, _ = run_both(replace(REFINE, budget=6), script, applicable_only)
    assert exact == full


def test_budget_at_an_episode_boundary_starts_no_empty_episode():
    script = {(0, 0): PICK_A, (0, 1): PICK_B, (0, 1, 1): PICK_B, (0, 1, 2): PICK_B}
    result, _ = run_both(replace(REFINE, budget=4), script, applicable_only)
    assert [a.end.value for a in result.attempts] == ["rejected"]


def test_max_failures_gives_up_like_adaplanners_task_limit():
    script = {(0, 0): CHEAT, (0, 0, 1): CHEAT, (0, 0, 2): CHEAT, (1, 0): CHEAT, (1, 0, 1): PICK_A,
              (1, 1): STACK_AB}
    result, _ = run_both(replace(REFINE, max_failures=4), script, applicable_only)
    assert summary(result) == ("no_plan", None, ["rejected", "rejected"], 4, 4,
                               {"failed_tries": 4, "resets": 1})
    result, _ = run_both(replace(REFINE, max_failures=5), script, applicable_only)
    assert summary(result)[:3] == ("success", None, ["rejected", "goal"])


def test_temperature_heats_up_on_retries_and_cools_at_a_new_checkpoint():
    spec = replace(REFINE, k=2, reset_after=4, temperature=0.8, temperature_step=0.5,
                   temperature_max=1.9)
    script = {(0, 0): PICK_A, (1, 0): PICK_A, (1, 1): STACK_AB}
    result, gen = run_both(spec, script, applicable_only)
    temps = [r.temperature for b in gen.batches for r in b]
    #          s0    4 tries at the second checkpoint, reset     s0 again, next checkpoint
    assert temps == [0.8, 0.8, 1.3, 1.8, 1.9, 0.8, 0.8]
    assert summary(result)[2] == ["rejected", "goal"]
    flat, gen = run_both(replace(spec, temperature_step=0.0), script, applicable_only)
    assert {r.temperature for b in gen.batches for r in b} == {0.8} and flat.plan == result.plan


def test_max_steps_ends_the_episode():
    spec = replace(REFINE, k=2, max_steps=2)
    script = {(0, 0): PICK_A, (0, 1): PUT_A, (1, 0): PICK_A, (1, 1): STACK_AB}
    result, _ = run_both(spec, script, lambda r: 1.0)
    assert summary(result) == ("success", None, ["max_steps", "goal"], 4, 4,
                               {"failed_tries": 0, "resets": 0})


def test_propose_last_proposes_the_accepted_steps_only():
    spec = replace(REFINE, k=1, propose_on_failure="last")
    result, _ = run_both(spec, {(0, 0): PICK_A}, applicable_only)  # then garbage until reset
    assert [s.text for s in result.plan] == [PICK_A]
    assert summary(result)[:3] == ("goal_not_reached", None, ["rejected"])
    assert len(result.attempts[0].steps) == 4  # the trace keeps the refused tries


def test_verifier_false_positive_carries_the_predicted_state_into_the_plan():
    result, _ = run_both(REFINE, {(0, 0): PICK_A_WRONG, (0, 1): STACK_AB}, applicable_only)
    assert summary(result)[:3] == ("bad_next_state", 0, ["goal"])


# ---- environment feedback -----------------------------------------------------------------

def test_environment_refuses_inapplicable_actions_with_the_simulators_reason():
    script = {(0, 0): CHEAT, (0, 0, 1): FLY, (0, 0, 2): PICK_A, (0, 1): STACK_AB}
    result, _ = run_both(ENV, script)
    assert summary(result) == ("success", None, ["goal"], 4, 0,
                               {"failed_tries": 2, "resets": 0, "in_plan_mismatches": 0})
    notes = [s.note for s in result.attempts[0].steps]
    assert notes == ["refused: precondition (holding a) is false",
                     "refused: unknown action or objects", None, None]
    assert [s.trace()["note"] for s in result.attempts[0].steps][:1] == notes[:1]


def test_environment_in_plan_check_continues_from_the_observed_state():
    def script(r):  # the next step is only right if it is asked from the true state
        if r.key == (0, 0):
            return PICK_A_WRONG
        return STACK_AB if r.state == PICK_A_STATE else GARBAGE

    result, _ = run_both(ENV, script)
    assert summary(result) == ("success", None, ["goal"], 2, 0,
                               {"failed_tries": 0, "resets": 0, "in_plan_mismatches": 1})
    first = result.attempts[0].steps[0]
    assert first.note.startswith("in-plan check failed") and first.accepted
    assert "(clear a)" in first.next_state  # the trace keeps the prediction ...
    assert result.plan[0].next_state == PICK_A_STATE  # ... the plan holds what was observed
    assert result.plan[0].text == first.text


def test_environment_and_an_exact_verifier_differ_only_on_wrong_predicted_states():
    oracle = OracleVerifier()
    script = {(0, 0): PICK_A_WRONG, (0, 0, 1): PICK_A, (0, 1): STACK_AB}
    with_oracle, _ = run_both(REFINE, script, lambda r: oracle.score([r])[0])
    assert summary(with_oracle)[2:5] == (["goal"], 3, 3)  # the oracle refuses the wrong state
    with_env, _ = run_both(ENV, {(0, 0): PICK_A_WRONG, (0, 1): STACK_AB})
    assert summary(with_env)[2:5] == (["goal"], 2, 0)  # the environment executes and goes on


def test_feedback_setting_is_checked_and_reported():
    check_verifier(ENV, None)
    with pytest.raises(ConfigError, match="from the environment; set verifier=none"):
        check_verifier(ENV, OracleVerifier())
    with pytest.raises(ConfigError, match="needs a verifier"):
        check_verifier(REFINE, None)
    with pytest.raises(ConfigError, match="planner.feedback: unknown setting"):
        PlannerSpec.from_dict({"loop": "stepwise", "feedback": "environment"})  # refine's own
    with pytest.raises(ConfigError, match="choose verifier or environment"):
        PlannerSpec.from_dict({"loop": "refine_resume", "feedback": "oracle"})
    with pytest.raises(ConfigError, match="budget=0"):
        PlannerSpec.from_dict({"loop": "refine_resume", "budget": 0})
    assert [feedback_source(s) for s in (REFINE, ENV, STEP, replace(STEP, loop="sample"))] == [
        "verifier", "environment", "verifier", "none"]


# ---- batched = sequential on a mixed workload; GRR at a budget from one run ------------------

@pytest.mark.parametrize("spec", [
    replace(REFINE, k=6, max_steps=12, budget=40, temperature_step=0.3),
    replace(ENV, k=6, max_steps=12, budget=40, reset_after=2),
    replace(REFINE, k=6, max_steps=12, reset_after=None, budget=25, max_failures=6),
    replace(REFINE, k=6, max_steps=12, budget=40, exclude_refused=True),
], ids=["verifier", "environment", "no-reset", "exclude-refused"])
def test_batched_engine_equals_sequential_planning(spec):
    contexts = random_contexts(24, seed=3)
    synthetic = SyntheticGenerator(**CHAOTIC)
    verifier = noisy_verifier if feedback_source(spec) == "verifier" else (lambda: None)
    batched: dict = {}
    gen_b = ScriptedGenerator(lambda r: synthetic.propose([r])[0])
    run_batched(contexts, spec, gen_b, verifier(), lambda c, r, t: batched.__setitem__(c.id, r),
                batch_size=5)
    gen_s = ScriptedGenerator(lambda r: synthetic.propose([r])[0])
    sequential = {c.id: plan_instance(c, spec, gen_s, verifier()) for c in contexts}
    assert batched == sequential
    assert gen_b.calls == gen_s.calls and max(map(len, gen_b.batches)) > 1
    outcomes = {judge_plan(c.task, batched[c.id].plan)[0].value for c in contexts}
    ends = {a.end.value for r in batched.values() for a in r.attempts}
    assert "success" in outcomes and {"goal", "rejected"} <= ends
    if feedback_source(spec) == "environment":
        assert outcomes <= {"success", "no_plan"}  # executed plans: no bad transitions
        assert sum(r.events["in_plan_mismatches"] for r in batched.values()) > 0


@pytest.mark.parametrize("spec", [replace(REFINE, k=50, max_steps=12, budget=40),
                                  replace(ENV, k=50, max_steps=12, budget=40),
                                  replace(STEP, k=50, max_steps=12, budget=40)],
                         ids=["refine", "refine_env", "stepwise"])
def test_one_run_gives_grr_at_every_smaller_budget(spec):
    """GRR of a run capped at B = the share of a larger run's successes with calls <= B."""
    contexts = random_contexts(20, seed=5)
    synthetic = SyntheticGenerator(**CHAOTIC)
    verifier = OracleVerifier(check_next_state=False) if feedback_source(spec) == "verifier" else None

    def successes(budget: int) -> dict[str, int]:
        out = {}
        for c in contexts:
            r = plan_instance(c, replace(spec, budget=budget), synthetic, verifier)
            if judge_plan(c.task, r.plan)[0].value == "success":
                out[c.id] = r.generator_calls
        return out

    full = successes(40)
    assert 0 < len(full) < len(contexts) or feedback_source(spec) == "environment"
    for budget in (3, 8, 15):
        assert successes(budget) == {i: n for i, n in full.items() if n <= budget}


def test_avoid_revisits_refuses_a_step_back_to_a_state_on_the_path_without_scoring_it():
    script = {(0, 0): PICK_A, (0, 1): PUT_A, (0, 1, 1): STACK_AB}  # PUT_A predicts s0 again
    spec = replace(REFINE, avoid_revisits=True)
    result, _ = run_both(spec, script, applicable_only)
    assert summary(result) == ("success", None, ["goal"], 3, 2,
                               {"failed_tries": 1, "resets": 0, "revisits": 1})
    assert [(s.accepted, s.note) for s in result.attempts[0].steps] == [
        (True, None), (False, "revisit"), (True, None)]
    plain, _ = run_both(REFINE, script, applicable_only)  # without it the loop is accepted
    assert [s.accepted for s in plain.attempts[0].steps][:2] == [True, True]


def test_exclude_refused_passes_the_checkpoints_refused_actions_to_the_next_tries():
    def script(r):  # proposes pickup b until it is excluded, then the right step
        if r.key == (0, 0):
            return PICK_A
        return STACK_AB if "(pickup b)" in r.exclude_actions else PICK_B

    spec = replace(REFINE, reset_after=None, budget=6, exclude_refused=True)
    result, gen = run_both(spec, script, applicable_only)
    assert summary(result) == ("success", None, ["goal"], 3, 3, {"failed_tries": 1, "resets": 0})
    assert [r.exclude_actions for b in gen.batches for r in b] == [(), (), ("(pickup b)",)]
    plain, gen = run_both(replace(spec, exclude_refused=False), script, applicable_only)
    assert summary(plain)[:4] == ("no_plan", None, ["budget"], 6)  # the same refusal, again and again
    assert {r.exclude_actions for b in gen.batches for r in b} == {()}


def test_exclusions_start_empty_at_a_new_checkpoint_and_a_new_episode():
    script = {(0, 0): CHEAT, (0, 0, 1): PICK_A, (0, 1): PICK_B, (0, 1, 1): PICK_B,
              (1, 0): PICK_A, (1, 1): STACK_AB}
    spec = replace(REFINE, reset_after=2, exclude_refused=True)
    result, gen = run_both(spec, script, applicable_only)
    assert summary(result)[:3] == ("success", None, ["rejected", "goal"])
    assert [r.exclude_actions for b in gen.batches for r in b] == [
        (), ("(stack a b)",),  # stack a b from s0 (CHEAT) is refused, then excluded
        (), ("(pickup b)",),  # a new checkpoint starts afresh; the reset then clears it too
        (), ()]
