"""One instance as the planner sees it, and the record of what happened while planning it."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from plansuite.pddl.codec import ParseFailure, Step, parse_completion
from plansuite.pddl.model import atom_text
from plansuite.pddl.simulator import GroundTask
from plansuite.planning.protocols import GenRequest, VerifyRequest, request_seed


class End(str, Enum):
    """How an attempt ended (see the package docstring)."""

    GOAL = "goal"
    UNPARSEABLE = "unparseable"
    REJECTED = "rejected"
    MAX_STEPS = "max_steps"
    BUDGET = "budget"  # the instance's generator-call budget ran out


@dataclass
class StepRecord:
    key: tuple[int, ...]
    state: tuple[str, ...]  # the predicted state the step was proposed from
    text: str
    parsed: Step | ParseFailure
    tokens: int = 0
    score: float | None = None  # verifier score, when scored
    accepted: bool | None = None
    note: str | None = None  # what environment feedback said (a refusal's reason, a mismatch)

    @property
    def next_state(self) -> tuple[str, ...]:
        assert isinstance(self.parsed, Step), "only decoded steps have a next state"
        return self.parsed.next_state

    def trace(self) -> dict:
        parsed = self.parsed
        return {"key": list(self.key), "text": self.text, "tokens": self.tokens,
                "action": parsed.action if isinstance(parsed, Step) else None,
                "parse_error": None if isinstance(parsed, Step) else parsed.reason,
                "score": self.score, "accepted": self.accepted, "note": self.note}


@dataclass
class Attempt:
    index: int
    steps: list[StepRecord]
    end: End


@dataclass
class EpisodeResult:
    """A loop's answer for one instance: every attempt, and the proposed steps (or None)."""

    attempts: list[Attempt]
    plan: list[StepRecord] | None
    proposed_attempt: int | None = None
    generator_calls: int = 0
    verifier_calls: int = 0
    tokens: int = 0
    events: dict[str, int] = field(default_factory=dict)  # loop-specific counts (refine_resume)


@dataclass
class InstanceContext:
    """What a loop may use: the instance's text view, its id and the run seed.

    ``task`` (the simulator) is carried for judging and for the symbolic stand-ins (oracle,
    random baseline); learned-model loops never read it.
    """

    id: str
    task: GroundTask
    goal: tuple[str, ...]
    init: tuple[str, ...]
    seed: int = 0
    goal_neg: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, instance_id: str, task: GroundTask, seed: int = 0) -> InstanceContext:
        problem = task.problem
        return cls(instance_id, task, tuple(sorted(map(atom_text, problem.goal_pos))),
                   tuple(task.decode(task.init)), seed,
                   frozenset(map(atom_text, problem.goal_neg)))

    def reached(self, state: tuple[str, ...]) -> bool:
        atoms = set(state)
        return atoms.issuperset(self.goal) and not atoms & self.goal_neg

    def gen_request(self, state: tuple[str, ...], key: tuple[int, ...], temperature: float,
                    top_p: float, max_new_tokens: int | None,
                    exclude_actions: tuple[str, ...] = ()) -> GenRequest:
        return GenRequest(self.id, key, self.goal, state, request_seed(self.seed, self.id, key),
                          temperature, top_p, max_new_tokens, self.task, exclude_actions)

    def verify_request(self, step: StepRecord) -> VerifyRequest:
        return VerifyRequest(self.id, step.key, step.state, step.parsed.action, step.next_state,
                             self.task)


def decode_step(key: tuple[int, ...], state: tuple[str, ...], text: str, tokens: int) -> StepRecord:
    """A step record from raw generator output; garbage becomes a ParseFailure, never an error."""
    return StepRecord(key, state, text, parse_completion(text), tokens)
