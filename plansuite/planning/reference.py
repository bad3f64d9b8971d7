"""The plain sequential reference: one instance at a time, one model call per step.

Written independently of the coroutines in :mod:`.loops`, in the shape of the paper's listing,
so that tests can check the batched engine against it (identical attempts, outcomes and call
counts) and the speed benchmark can measure what batching buys.

    for attempt in 1..k:
        if the instance's generator-call budget is spent: stop
        s <- s0; plan <- []
        repeat:
            if s satisfies the goal: stop (goal)
            if the budget is spent: stop (budget)
            (a, s') ~ G(goal, s)                  one generator call
            if (a, s') does not decode: stop (unparseable)
            if step-wise and V(s, a) < threshold: stop (rejected)
            plan <- plan + [a]; s <- s'
            if |plan| = L_max: stop (goal if s satisfies it, else max_steps)
        if stopped at the goal:
            if post-hoc and some step of plan has V < threshold: rejected, next attempt
            else: propose plan
    no plan (or, for generator@k, propose the last attempt)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from plansuite.planning.episode import (
    Attempt,
    End,
    EpisodeResult,
    InstanceContext,
    StepRecord,
    decode_step,
)
from plansuite.planning.loops import PlannerSpec, give_up
from plansuite.planning.protocols import Generator, Verifier, propose_batch, score_batch


class SequentialModel:
    """The generator and verifier called one request at a time, with the calls counted."""

    def __init__(self, ctx: InstanceContext, spec: PlannerSpec, generator: Generator,
                 verifier: Verifier | None):
        self.ctx, self.spec, self.generator, self.verifier = ctx, spec, generator, verifier
        self.generator_calls = self.verifier_calls = self.tokens = 0

    def generate(self, state: tuple[str, ...], key: tuple[int, ...],
                 temperature: float | None = None) -> StepRecord:
        spec = self.spec
        request = self.ctx.gen_request(state, key, spec.temperature if temperature is None
                                       else temperature, spec.top_p, spec.max_new_tokens)
        [proposal] = propose_batch(self.generator, [request])
        self.generator_calls += 1
        self.tokens += proposal.n_tokens
        return decode_step(key, state, proposal.text, proposal.n_tokens)

    def verify(self, steps: list[StepRecord]) -> bool:
        """Score the steps (recording each score); True iff all are accepted."""
        scores = score_batch(self.verifier, [self.ctx.verify_request(s) for s in steps])
        self.verifier_calls += len(steps)
        for step, (value, accepted) in zip(steps, scores, strict=True):
            step.score, step.accepted = value, accepted
        return all(s.accepted for s in steps)


def restart_reference(ctx: InstanceContext, spec: PlannerSpec, model: SequentialModel) -> EpisodeResult:
    """The ``sample``, ``stepwise`` and ``posthoc`` loops, as in the listing above."""
    attempts: list[Attempt] = []
    for a in range(spec.k):
        if model.generator_calls == spec.call_budget:
            break
        state, plan, end = ctx.init, [], None
        while end is None:
            if ctx.reached(state):
                end = End.GOAL
                break
            if model.generator_calls == spec.call_budget:
                end = End.BUDGET
                break
            step = model.generate(state, (a, len(plan)))
            plan.append(step)
            if not step.parsed:
                end = End.UNPARSEABLE
            elif spec.loop == "stepwise" and not model.verify([step]):
                end = End.REJECTED
            else:
                state = step.next_state
                if len(plan) == spec.max_steps:
                    end = End.GOAL if ctx.reached(state) else End.MAX_STEPS
        attempts.append(Attempt(a, plan, end))
        if end is End.GOAL:
            if spec.loop == "posthoc" and not model.verify(plan):
                attempts[-1].end = End.REJECTED
                continue
            return EpisodeResult(attempts, plan, a)
    return give_up(attempts, spec)


# loop name -> its sequential reference (a new loop adds its own entry here)
REFERENCE: dict[str, Callable[[InstanceContext, PlannerSpec, SequentialModel], EpisodeResult]] = {
    "sample": restart_reference, "stepwise": restart_reference, "posthoc": restart_reference,
}


def plan_instance(ctx: InstanceContext, spec: PlannerSpec, generator: Generator,
                  verifier: Verifier | None) -> EpisodeResult:
    """Plan one instance with the reference implementation of ``spec.loop``."""
    if spec.loop not in REFERENCE:
        raise NotImplementedError(f"no sequential reference for loop '{spec.loop}'")
    model = SequentialModel(ctx, spec, generator, verifier)
    result = REFERENCE[spec.loop](ctx, spec, model)
    result.generator_calls, result.verifier_calls = model.generator_calls, model.verifier_calls
    result.tokens = model.tokens
    return result


def run_sequential(contexts: Iterable[InstanceContext], spec: PlannerSpec, generator: Generator,
                   verifier: Verifier | None,
                   on_done: Callable[[InstanceContext, EpisodeResult, float], None]) -> None:
    """Plan instances one after another with the reference (same callback data as the engine)."""
    for ctx in contexts:
        start = time.perf_counter()
        result = plan_instance(ctx, spec, generator, verifier)
        on_done(ctx, result, time.perf_counter() - start)
