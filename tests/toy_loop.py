"""A toy planner loop, added the way :mod:`plansuite.planning` says: this module plus one
``planner/<name>.yaml`` (``loop: toy_loop``). ``tests/test_planning_toy_loop.py`` runs it.

One attempt from s0; a refused (or undecodable) step is resampled at the same state up to
``retries`` times, then the instance gives up. The loop's own setting is ``retries``.
"""

from __future__ import annotations

from dataclasses import dataclass

from plansuite.planning.episode import Attempt, End, EpisodeResult, InstanceContext, decode_step
from plansuite.planning.loops import (
    GENERATE,
    VERIFY,
    LoopCoroutine,
    LoopDef,
    Need,
    PlannerSpec,
    give_up,
)


@dataclass(frozen=True)
class RetryStepSpec(PlannerSpec):
    name: str = "toy"
    loop: str = "toy_loop"
    k: int = 1
    retries: int = 2  # resamples of a refused step before giving up


def retry_step(ctx: InstanceContext, spec: RetryStepSpec) -> LoopCoroutine:
    state, plan, trace, tries = ctx.init, [], [], 0
    while not ctx.reached(state) and len(plan) < spec.max_steps and len(trace) < spec.call_budget:
        request = ctx.gen_request(state, (0, len(plan), tries), spec.temperature, spec.top_p,
                                  spec.max_new_tokens)
        [proposal] = yield Need(GENERATE, [request])
        step = decode_step(request.key, state, proposal.text, proposal.n_tokens)
        trace.append(step)
        if step.parsed:
            [score] = yield Need(VERIFY, [ctx.verify_request(step)])
            step.score, step.accepted = score
            if score.accepted:
                plan.append(step)
                state, tries = step.next_state, 0
                continue
        tries += 1
        if tries > spec.retries:
            break
    attempt = Attempt(0, trace, End.GOAL if ctx.reached(state) else End.REJECTED)
    if attempt.end is End.GOAL:
        return EpisodeResult([attempt], plan, 0)
    return give_up([attempt], spec, plan)


LOOP = LoopDef(retry_step, "required", RetryStepSpec)
