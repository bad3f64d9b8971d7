"""Planning loops over a learned generator (and verifier), judged by the simulator.

The semantics below are the suite's definition; the paper's algorithm listings are garbled.

Instance and state
    An instance is a PDDL problem: initial state ``s0`` and goal ``s_g`` (the paper's instances
    give the full goal state). The planner only sees text: the prompt is
    ``format_prompt(goal atoms, state atoms)`` and the generator answers with a completion
    ``ACTION: a / NEXT STATE: s' / END``. The state fed to the next step is the generator's own
    *predicted* next state; the simulator is never consulted while planning (except by the
    oracle verifier and the symbolic baselines, which are the simulator by definition).

Attempt (one episode)
    Starts at ``s0`` and runs at most ``max_steps`` (L_max, 40) steps. Before every step, and
    after the last one, the predicted state is tested against the goal (every positive goal atom
    present, no negative goal atom present; for full-state goals this is equality). An attempt
    ends with one of: ``goal`` (predicted state reaches the goal: the attempt may propose its
    plan), ``unparseable`` (the generation does not decode: nothing to continue from),
    ``rejected`` (the verifier refused a step, or the post-hoc filter refused the attempt),
    ``max_steps``, ``budget`` (the instance's generator-call budget ran out). Each step is one
    generator call with top-p sampling (p = 0.99, temperature 1 by default), seeded per (run
    seed, instance, attempt, step) so results do not depend on batching.

Loops (``conf/planner/``; ``loop:`` names below)
    ``sample`` -- generator@k: up to k attempts, no verifier; the first attempt that reaches the
        goal proposes its plan. With ``propose_on_failure: last`` (default for this loop) the
        last attempt is proposed when none reaches the goal, so a lone generator always
        proposes something and its failure is classified (the paper's generator@1 row).
    ``stepwise`` -- generator+verifier@k (Algorithm 2): after each decoded step the verifier
        scores ``V(s_i, a_i)`` (or ``V(s_i, a_i, s_i+1)``, per the verifier's ``input_kind``);
        a score below its threshold ends the attempt and the next one restarts from ``s0``.
        An unparseable step ends the attempt without a verifier call.
    ``posthoc`` -- the paper's published code: attempts are sampled without the verifier; the
        first attempt that reaches the goal and whose steps *all* pass the verifier is proposed.
        Attempts are sampled one after another and sampling stops at the accepted one, which
        gives the same outcome as sampling all k first (attempts are independent and seeded
        per attempt) with fewer calls; only goal-reaching attempts are scored, all steps at once.
    ``random_restart`` (a planner, ``loop: sample``) -- the symbolic baseline: the "generator"
        picks a uniformly random *applicable* action and reports the true next state; an attempt
        restarts after L_max steps (or at a dead end: no applicable action); ``no_plan`` after k.
    ``refine_resume`` -- closed-loop refinement (AdaPlanner): a refused step is resampled from
        the last accepted state (the checkpoint) instead of restarting from ``s0``; a reset to
        ``s0`` after ``reset_after`` failed tries at one checkpoint; optional heating of the
        temperature on retries; optionally (``exclude_refused``) the actions refused at the
        checkpoint are excluded from the next tries' sampling; the feedback is the verifier
        (``feedback: verifier``) or the simulator executing each action (``feedback:
        environment``). Exact semantics:
        :mod:`plansuite.planning.refine`.
    Verifier planners use ``propose_on_failure: none``: no accepted attempt means ``no_plan``.
    The oracle verifier (``verifier=oracle``) is the simulator: it accepts a step iff the action
    is applicable in the predicted state and the predicted next state is the true one
    (``oracle_action``: applicability only, a perfect version of the paper's (s, a) verifier).

Judging (the symbolic side only; :mod:`plansuite.planning.outcomes`)
    The proposed plan's steps are replayed from the true ``s0`` with
    :func:`plansuite.pddl.judge.judge_step`; the first bad step decides: ``bad_action``
    (inapplicable or unknown action), ``bad_next_state`` (applicable, predicted state wrong),
    ``unparseable`` (a generation that did not decode). Otherwise ``success`` if the true final
    state satisfies the goal, else ``goal_not_reached``. No proposal is ``no_plan``.
    GRR = success / N; BTR = (bad_action + bad_next_state + unparseable) / N, both with Wilson
    95 % intervals. VAL re-validates every proposed plan's actions; agreement with the
    simulator's plan validity (all actions applicable, goal reached) is reported.

Calls
    ``generator`` = completions requested, ``tokens`` = new tokens generated, ``verifier`` =
    (state, action) items scored. The batched engine makes exactly the same calls at every batch
    size (``engine=sequential`` is batch size 1). Every loop stops after ``budget`` generator
    calls per instance (default ``k * max_steps``, which k attempts never exceed), ending the
    attempt in progress as ``budget``. ``calls_to_success`` in ``instances.jsonl`` is the number of generator calls
    made when a successful plan was proposed; since no loop's requests depend on the budget
    left, GRR at any smaller budget B is the fraction with ``calls_to_success <= B``
    (:mod:`plansuite.planning.budget`: GRR-vs-calls curves and paired comparisons).

Adding a loop (e.g. AdaPlanner-style ``refine_resume``): one module and one config file
    1. A module (anywhere importable, e.g. ``plansuite/planning/<name>.py``) holding the
       coroutine ``loop(ctx, spec)``: it yields :class:`~.loops.Need` batches built with
       ``ctx.gen_request(state, key, ...)`` (any key tuple, e.g. ``(attempt, step, try)``, gets
       its own seed; a per-request temperature allows heating up on retries) and
       ``ctx.verify_request(step)``, decodes answers with ``episode.decode_step``, may consult
       ``ctx.task`` directly for environment feedback (no Need: the simulator is not a model),
       and returns an ``EpisodeResult`` whose ``plan`` is the list of steps it proposes (judged
       from s0 as above; :func:`~.loops.give_up` when nothing is accepted). If the loop has
       settings of its own, a frozen dataclass subclassing :class:`~.loops.PlannerSpec` holds
       them (its ``check`` validates them; ``environment_feedback()`` says when the simulator,
       not a verifier, is the feedback). The module ends with
       ``LOOP = LoopDef(loop, "required" | "forbidden" | "optional", SpecClass)``.
    2. ``conf/planner/<name>.yaml``: the shared settings, the loop's own, and ``loop:`` the
       module's import path (e.g. ``plansuite.planning.<name>``).
    The engine, journal, judging, VAL, metrics and ``plansuite-eval`` need no change.
    ``tests/toy_loop.py`` and ``tests/test_planning_toy_loop.py`` add a loop exactly so;
    ``tests/test_planning_loops.py``'s ``plan_both`` pins a loop's semantics, batched and
    sequentially (batch size 1).
"""

from plansuite.planning import refine as refine  # registers the refine_resume loop
from plansuite.planning.episode import Attempt, End, EpisodeResult, InstanceContext, StepRecord
from plansuite.planning.loops import LOOPS, LoopDef, Need, PlannerSpec, give_up
from plansuite.planning.outcomes import Outcome, judge_plan
from plansuite.planning.protocols import (
    Generator,
    GenRequest,
    Proposal,
    Score,
    Verifier,
    VerifyRequest,
)

__all__ = [
    "LOOPS", "Attempt", "End", "EpisodeResult", "GenRequest", "Generator", "InstanceContext",
    "LoopDef", "Need", "Outcome", "PlannerSpec", "Proposal", "Score", "StepRecord", "Verifier",
    "VerifyRequest", "give_up", "judge_plan",
]
