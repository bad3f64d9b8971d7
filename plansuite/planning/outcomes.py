"""Judging a proposed plan with the simulator: the only ground truth for every reported number."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from plansuite.pddl.codec import Step
from plansuite.pddl.judge import StepVerdict, judge_step
from plansuite.pddl.simulator import GroundTask
from plansuite.planning.episode import StepRecord


class Outcome(str, Enum):
    SUCCESS = "success"
    BAD_ACTION = "bad_action"
    BAD_NEXT_STATE = "bad_next_state"
    UNPARSEABLE = "unparseable"
    GOAL_NOT_REACHED = "goal_not_reached"
    NO_PLAN = "no_plan"

    @property
    def bad_transition(self) -> bool:
        """Counted in BTR: the proposed plan contains a bad (or undecodable) transition."""
        return self in (Outcome.BAD_ACTION, Outcome.BAD_NEXT_STATE, Outcome.UNPARSEABLE)


_FROM_VERDICT = {StepVerdict.BAD_ACTION: Outcome.BAD_ACTION,
                 StepVerdict.BAD_NEXT_STATE: Outcome.BAD_NEXT_STATE,
                 StepVerdict.UNPARSEABLE: Outcome.UNPARSEABLE}


def judge_plan(task: GroundTask, plan: Sequence[StepRecord] | None) -> tuple[Outcome, int | None]:
    """The outcome of a proposed plan and the index of its first bad step (if any).

    Steps are replayed from the true initial state; the first step that is not OK decides.

    >>> from plansuite.domains import load_builtin
    >>> from plansuite.pddl.model import Problem
    >>> from plansuite.planning.episode import decode_step
    >>> task = GroundTask(load_builtin("blocksworld"), Problem("p", "blocksworld-4ops",
    ...     {"a": "object"}, frozenset({("on-table", "a"), ("clear", "a"), ("arm-empty",)}),
    ...     frozenset({("holding", "a")})))
    >>> ok = decode_step((0, 0), (), "ACTION:\\n(pickup a)\\nNEXT STATE:\\n(holding a)\\nEND", 0)
    >>> judge_plan(task, [ok])
    (<Outcome.SUCCESS: 'success'>, None)
    >>> judge_plan(task, [ok, decode_step((0, 1), (), "garbage", 0)])
    (<Outcome.UNPARSEABLE: 'unparseable'>, 1)
    >>> judge_plan(task, []), judge_plan(task, None)
    ((<Outcome.GOAL_NOT_REACHED: 'goal_not_reached'>, None), (<Outcome.NO_PLAN: 'no_plan'>, None))
    """
    if plan is None:
        return Outcome.NO_PLAN, None
    state = task.init
    for i, step in enumerate(plan):
        verdict, true_next = judge_step(task, state, step.parsed)
        if verdict is not StepVerdict.OK:
            return _FROM_VERDICT[verdict], i
        state = true_next
    return (Outcome.SUCCESS if task.is_goal(state) else Outcome.GOAL_NOT_REACHED), None


def plan_actions(plan: Sequence[StepRecord]) -> list[str]:
    """The decoded actions of a plan, in order (an undecodable step contributes none)."""
    return [s.parsed.action for s in plan if isinstance(s.parsed, Step)]

