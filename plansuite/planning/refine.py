"""``refine_resume``: closed-loop refinement that resumes from the last accepted state.

AdaPlanner (Sun et al. 2023) revises its plan when the environment contradicts it and resumes
from a saved checkpoint instead of starting over. Here the generator proposes one step at a
time, so "revising" means resampling the refused step, and the checkpoint is the state after the
last accepted step::

    for episode in 1..k:                          an episode starts from s0 (a reset)
        if the generator-call budget is spent: stop
        s <- s0; plan <- []; tries <- 0           tries: failed tries at this checkpoint
        repeat:
            if s satisfies the goal: propose plan
            if |plan| = L_max: next episode (max_steps)
            if the budget is spent: stop (budget)
            step ~ G(goal, s) at temperature min(T + tries * temperature_step, temperature_max),
                   never proposing an action in refused (exclude_refused)
            if avoid_revisits and the step's next state is s0 or on the plan: refuse it
            if the step decodes and the feedback accepts it:            (a new checkpoint)
                plan <- plan + [step]; s <- its next state; tries <- 0; refused <- {}
            else:
                tries <- tries + 1; failures <- failures + 1
                if exclude_refused and the step decodes: refused <- refused + {its action}
                if failures = max_failures: stop (give up)
                if tries = reset_after: next episode (rejected: reset to s0)
    no plan (or, with propose_on_failure: last, the last episode's accepted steps)

Feedback (``planner.feedback``)
    ``verifier`` -- the learned verifier scores the step exactly as in step-wise planning; the
        next state is the generator's own prediction; the simulator is never consulted.
    ``environment`` -- the simulator executes the proposed action from the current (observed)
        state, as ALFWorld does for AdaPlanner. An inapplicable (or unknown) action is refused
        with the simulator's reason (the step's ``note``). An applicable action is executed, and
        the in-plan check compares the predicted next state with the observed one; a mismatch
        is recorded (``note``, and ``events["in_plan_mismatches"]``) and planning continues from
        the observed state. The proposed plan is what was executed: its steps carry the
        observed next states, so BTR is 0 by construction and GRR measures reaching the goal.
        No verifier is used.

Counting and seeds
    Every try is one generator call; an undecodable try is a failed try without a feedback
    call. The first try at a checkpoint uses the key ``(episode, step)`` -- the key step-wise
    restart uses for the same step -- and retry ``t`` uses ``(episode, step, t)``. So, with a
    generator seeded per request, refine_resume and step-wise restart sample the same steps
    until the first refusal (common random numbers for paired comparisons). The loop never
    looks at how much budget is left, so a run with budget B makes exactly the first B calls
    of a run with a larger budget (what GRR-at-budget curves rely on, :mod:`.budget`).

Revisits (``planner.avoid_revisits``)
    A generator imitating good plans still loops where it does not know the way (pick a block
    up, put it down, pick it up...), and its retries at a checkpoint tend to propose the same
    loop again. With ``avoid_revisits: true`` a decoded step whose *predicted* next state equals
    ``s0`` or the next state of an accepted step of the episode is refused before any feedback
    call (a failed try, ``note: revisit``, ``events["revisits"]``). It compares the generator's
    own states only -- no simulator -- so it is allowed wherever the verifier is: the classical
    search rule of never expanding a state twice on one path.

Refused actions (``planner.exclude_refused``)
    A verifier is deterministic and a generator that has learned one move for a state proposes
    it again and again: resampling a refused step then spends the budget on the same refusal.
    With ``exclude_refused: true`` the actions refused at the current checkpoint (by the
    feedback, or as revisits) go into the next request's ``exclude_actions``, and the generator
    samples among the other actions (model generators mask them while decoding,
    :class:`plansuite.models.inference.ActionExclusion`): the feedback is put into the next try,
    AdaPlanner's "revise the plan", with no simulator. The list starts empty at every checkpoint
    and every episode. Seeds and request keys are those of the plain loop.

AdaPlanner's ALFWorld code allows ``NUM_TRY = 6`` plans per task and starts the plan again from
step 1 after ``NUM_TRY_RESET = 3`` tries. With one generator call per step the counterparts are
``reset_after: 3`` (failed tries at one checkpoint before the reset) and ``budget`` (calls per
instance; ``max_failures: 6`` gives up after 6 failed tries, like its task-level limit).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from plansuite.errors import ConfigError
from plansuite.pddl.codec import Step
from plansuite.pddl.judge import StepVerdict, judge_step
from plansuite.pddl.simulator import GroundTask, Inapplicable
from plansuite.planning.episode import (
    Attempt,
    End,
    EpisodeResult,
    InstanceContext,
    StepRecord,
    decode_step,
)
from plansuite.planning.loops import (
    GENERATE,
    LOOPS,
    VERIFY,
    LoopCoroutine,
    LoopDef,
    Need,
    PlannerSpec,
    give_up,
)


@dataclass(frozen=True)
class RefineResumeSpec(PlannerSpec):
    """``conf/planner/refine_resume.yaml``: the shared planner settings plus the loop's own."""

    name: str = "refine_resume"
    loop: str = "refine_resume"
    feedback: Literal["verifier", "environment"] = "verifier"  # what accepts or refuses a step
    reset_after: int | None = 3  # failed tries at one checkpoint before a reset to s0 (None: never)
    max_failures: int | None = None  # failed tries per instance before giving up (None: no limit)
    temperature_step: float = 0.0  # added to the temperature per failed try at the checkpoint
    temperature_max: float = 2.0  # the retry temperature never exceeds this
    avoid_revisits: bool = False  # refuse a step predicting a state already on the episode's path
    exclude_refused: bool = False  # never propose again an action refused at this checkpoint

    def environment_feedback(self) -> bool:
        return self.feedback == "environment"

    def check(self) -> None:
        super().check()
        for key in ("reset_after", "max_failures"):
            if getattr(self, key) is not None and getattr(self, key) < 1:
                raise ConfigError(f"planner.{key}={getattr(self, key)}: must be >= 1 (or null)")
        if self.feedback not in ("verifier", "environment"):
            raise ConfigError(f"planner.feedback={self.feedback}: choose verifier or environment")
        if self.temperature_step < 0:
            raise ConfigError("planner.temperature_step: must be >= 0")


def retry_temperature(spec: RefineResumeSpec, tries: int) -> float:
    """The sampling temperature after ``tries`` failed tries at the current checkpoint.

    >>> spec = RefineResumeSpec(temperature=1.0, temperature_step=0.25, temperature_max=1.6)
    >>> [retry_temperature(spec, t) for t in range(4)]
    [1.0, 1.25, 1.5, 1.6]
    >>> retry_temperature(RefineResumeSpec(temperature=0.7), 5)  # temperature_step 0: no heating
    0.7
    """
    if spec.temperature_step == 0:
        return spec.temperature
    return min(spec.temperature + tries * spec.temperature_step,
               max(spec.temperature_max, spec.temperature))


def request_key(episode: int, step: int, tries: int) -> tuple[int, ...]:
    """First try: step-wise restart's key for the same step; retries get their own seeds.

    >>> request_key(0, 3, 0), request_key(0, 3, 2)
    ((0, 3), (0, 3, 2))
    """
    return (episode, step) if tries == 0 else (episode, step, tries)


def environment_feedback(task: GroundTask, step: StepRecord) -> StepRecord | None:
    """The simulator executes ``step`` from its (observed) state.

    Returns the executed step -- the same generation, with the observed next state -- or None
    when the action is refused. Either way ``step`` (the trace entry) gets ``accepted`` and, for
    a refusal or a failed in-plan check, a ``note`` saying why.
    """
    state = task.encode(step.state)  # an observed state: its atoms always exist
    verdict, observed = judge_step(task, state, step.parsed)
    if verdict is StepVerdict.BAD_ACTION:
        refusal = task.step(state, step.parsed.action)
        step.accepted = False
        reason = refusal.reason if isinstance(refusal, Inapplicable) else verdict.value
        step.note = f"refused: {reason}"
        return None
    step.accepted = True
    if verdict is StepVerdict.BAD_NEXT_STATE:
        step.note = "in-plan check failed: the observed next state differs from the prediction"
    executed = Step(step.parsed.action, tuple(task.decode(observed)))
    return StepRecord(step.key, step.state, step.text, executed, step.tokens, None, True, step.note)


def is_revisit(step: StepRecord, init: tuple[str, ...], plan: list[StepRecord]) -> bool:
    """Does the step predict ``init`` or a state the episode's accepted steps already reached?"""
    nxt = step.parsed.next_state
    return nxt == init or any(p.next_state == nxt for p in plan)


def new_events(spec: RefineResumeSpec) -> dict[str, int]:
    events = {"failed_tries": 0, "resets": 0}
    if spec.avoid_revisits:
        events["revisits"] = 0
    if spec.feedback == "environment":
        events["in_plan_mismatches"] = 0
    return events


def refine_resume(ctx: InstanceContext, spec: RefineResumeSpec) -> LoopCoroutine:
    """The loop of the module docstring, as a coroutine for the batched engine."""
    attempts: list[Attempt] = []
    events = new_events(spec)
    calls, plan = 0, []
    for episode in range(spec.k):
        if calls == spec.call_budget:
            break
        state, plan, trace, tries, end = ctx.init, [], [], 0, None
        refused: list[str] = []  # actions refused at this checkpoint (exclude_refused)
        while end is None:
            if ctx.reached(state):
                end = End.GOAL
            elif len(plan) == spec.max_steps:
                end = End.MAX_STEPS
            elif calls == spec.call_budget:
                end = End.BUDGET
            else:
                request = ctx.gen_request(state, request_key(episode, len(plan), tries),
                                          retry_temperature(spec, tries), spec.top_p,
                                          spec.max_new_tokens, tuple(refused))
                [proposal] = yield Need(GENERATE, [request])
                calls += 1
                step = decode_step(request.key, state, proposal.text, proposal.n_tokens)
                trace.append(step)
                accepted = None  # an undecodable try stays None: a failed try, nothing to check
                if step.parsed and spec.avoid_revisits and is_revisit(step, ctx.init, plan):
                    step.accepted, step.note = False, "revisit"
                    events["revisits"] += 1
                elif step.parsed and spec.feedback == "environment":
                    accepted = environment_feedback(ctx.task, step)
                    events["in_plan_mismatches"] += bool(accepted and accepted.note)
                elif step.parsed:
                    [score] = yield Need(VERIFY, [ctx.verify_request(step)])
                    step.score, step.accepted = score
                    accepted = step if score.accepted else None
                if accepted is not None:
                    plan.append(accepted)
                    state, tries, refused = accepted.next_state, 0, []
                    continue
                if spec.exclude_refused and step.parsed and step.parsed.action not in refused:
                    refused.append(step.parsed.action)
                tries += 1
                events["failed_tries"] += 1
                if spec.max_failures is not None and events["failed_tries"] == spec.max_failures:
                    end = End.REJECTED
                elif spec.reset_after is not None and tries == spec.reset_after:
                    end = End.REJECTED
                    events["resets"] += 1
        attempts.append(Attempt(episode, trace, end))
        if end is End.GOAL:
            return EpisodeResult(attempts, plan, episode, events=events)
        if end is End.BUDGET or events["failed_tries"] == spec.max_failures:
            break
    return give_up(attempts, spec, plan, events)


LOOP = LoopDef(refine_resume, "required", RefineResumeSpec)
LOOPS["refine_resume"] = LOOP  # built in: conf/planner/refine_resume.yaml says loop: refine_resume
