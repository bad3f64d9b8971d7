"""The plain sequential reference: one instance at a time, one model call per step.

Written independently of the coroutines in :mod:`.loops`, in the shape of the paper's listing,
so that tests can check the batched engine against it (identical attempts, outcomes and call
counts) and the speed benchmark can measure what batching buys.

    for attempt in 1..k:
        s <- s0; plan <- []
        repeat:
            if s satisfies the goal: stop (goal)
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


def plan_instance(ctx: InstanceContext, spec: PlannerSpec, generator: Generator,
                  verifier: Verifier | None) -> EpisodeResult:
    """The reference for the ``sample``, ``stepwise`` and ``posthoc`` loops."""
    if spec.loop not in REFERENCE_LOOPS:
        raise NotImplementedError(f"no sequential reference for loop '{spec.loop}'")
    calls = {"generator": 0, "verifier": 0, "tokens": 0}

    def generate(state: tuple[str, ...], key: tuple[int, ...]) -> StepRecord:
        request = ctx.gen_request(state, key, spec.temperature, spec.top_p, spec.max_new_tokens)
        [proposal] = propose_batch(generator, [request])
        calls["generator"] += 1
        calls["tokens"] += proposal.n_tokens
        return decode_step(key, state, proposal.text, proposal.n_tokens)

    def verify(steps: list[StepRecord]) -> bool:
        scores = score_batch(verifier, [ctx.verify_request(s) for s in steps])
        calls["verifier"] += len(steps)
        for step, (value, accepted) in zip(steps, scores, strict=True):
            step.score, step.accepted = value, accepted
        return all(s.accepted for s in steps)

    attempts: list[Attempt] = []
    result = None
    for a in range(spec.k):
        state, plan, end = ctx.init, [], None
        while end is None:
            if ctx.reached(state):
                end = End.GOAL
                break
            step = generate(state, (a, len(plan)))
            plan.append(step)
            if not step.parsed:
                end = End.UNPARSEABLE
            elif spec.loop == "stepwise" and not verify([step]):
                end = End.REJECTED
            else:
                state = step.next_state
                if len(plan) == spec.max_steps:
                    end = End.GOAL if ctx.reached(state) else End.MAX_STEPS
        attempts.append(Attempt(a, plan, end))
        if end is End.GOAL:
            if spec.loop == "posthoc" and not verify(plan):
                attempts[-1].end = End.REJECTED
                continue
            result = EpisodeResult(attempts, plan, a)
            break
    result = result or give_up(attempts, spec)
    result.generator_calls, result.verifier_calls = calls["generator"], calls["verifier"]
    result.tokens = calls["tokens"]
    return result


REFERENCE_LOOPS = ("sample", "stepwise", "posthoc")


def run_sequential(contexts: Iterable[InstanceContext], spec: PlannerSpec, generator: Generator,
                   verifier: Verifier | None,
                   on_done: Callable[[InstanceContext, EpisodeResult, float], None]) -> None:
    """Plan instances one after another with the reference (same callback data as the engine)."""
    for ctx in contexts:
        start = time.perf_counter()
        result = plan_instance(ctx, spec, generator, verifier)
        on_done(ctx, result, time.perf_counter() - start)
