"""Judging one proposed step against the simulator: the symbolic side is the only ground truth."""

from __future__ import annotations

from enum import Enum

from plansuite.pddl.codec import ParseFailure, Step
from plansuite.pddl.simulator import GroundTask, Inapplicable


class StepVerdict(str, Enum):
    OK = "ok"  # applicable, and the claimed next state is the true one
    BAD_ACTION = "bad_action"  # inapplicable (or unknown) action
    BAD_NEXT_STATE = "bad_next_state"  # applicable, but the claimed next state is wrong
    UNPARSEABLE = "unparseable"  # the generation did not decode

    @property
    def is_bad_transition(self) -> bool:
        return self is not StepVerdict.OK


def judge_step(task: GroundTask, state: int, step: Step | ParseFailure) -> tuple[StepVerdict, int | None]:
    """Verdict for ``step`` proposed in ``state``, and the true next state when applicable.

    >>> from plansuite.domains import load_builtin
    >>> from plansuite.pddl.model import Problem
    >>> from plansuite.pddl.codec import parse_completion
    >>> task = GroundTask(load_builtin("blocksworld"), Problem("p", "blocksworld-4ops",
    ...     {"a": "object"}, frozenset({("on-table", "a"), ("clear", "a"), ("arm-empty",)}),
    ...     frozenset()))
    >>> judge_step(task, task.init, parse_completion("ACTION:\\n(pickup a)\\nNEXT STATE:\\n(holding a)\\nEND"))[0]
    <StepVerdict.OK: 'ok'>
    >>> judge_step(task, task.init, parse_completion("ACTION:\\n(pickup a)\\nNEXT STATE:\\n(clear a)\\nEND"))[0]
    <StepVerdict.BAD_NEXT_STATE: 'bad_next_state'>
    >>> judge_step(task, task.init, parse_completion("ACTION:\\n(putdown a)\\nNEXT STATE:\\nEND"))[0]
    <StepVerdict.BAD_ACTION: 'bad_action'>
    """
    if isinstance(step, ParseFailure):
        return StepVerdict.UNPARSEABLE, None
    true_next = task.step(state, step.action)
    if isinstance(true_next, Inapplicable):
        return StepVerdict.BAD_ACTION, None
    claimed = task.try_encode(step.next_state)
    if claimed != true_next:
        return StepVerdict.BAD_NEXT_STATE, true_next
    return StepVerdict.OK, true_next
