"""What planning loops ask of a generator and a verifier: batched requests, plain answers.

Anything with ``propose(requests) -> list[Proposal]`` is a generator and anything with
``score(requests) -> list[float]`` and a ``threshold`` is a verifier: learned models
(:mod:`.adapters`), the simulator (:mod:`.baselines`) and the test doubles of ``tests/scripted.py``.
Requests carry their instance's ground task so symbolic stand-ins can use it; model adapters
read the text fields, and the task's objects only to rename them into the model's names
(:class:`.adapters.ModelNames`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from plansuite.pddl.codec import format_prompt
from plansuite.pddl.simulator import GroundTask


def request_seed(run_seed: int, instance: str, key: tuple[int, ...]) -> int:
    """A 63-bit seed for one request, independent of batching, sharding and resuming.

    >>> request_seed(0, "p000", (0, 3)) == request_seed(0, "p000", (0, 3))
    True
    >>> request_seed(0, "p000", (0, 3)) != request_seed(1, "p000", (0, 3))
    True
    """
    digest = hashlib.blake2b(f"{run_seed}|{instance}|{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


@dataclass(frozen=True)
class GenRequest:
    """Propose the next step of one attempt from ``state`` (the predicted state)."""

    instance: str
    key: tuple[int, ...]  # (attempt, step, ...) -- unique within the instance
    goal: tuple[str, ...]
    state: tuple[str, ...]
    seed: int
    temperature: float = 1.0
    top_p: float = 0.99
    max_new_tokens: int | None = None
    task: GroundTask | None = field(default=None, repr=False, compare=False)
    # actions the completion must not propose (refused earlier at this state: refine_resume's
    # exclude_refused); model generators mask them while sampling, symbolic ones skip them
    exclude_actions: tuple[str, ...] = ()

    @property
    def prompt(self) -> str:
        return format_prompt(self.goal, self.state)


class Proposal(NamedTuple):
    text: str  # completion text, expected to start at "ACTION:"
    n_tokens: int = 0  # new tokens generated (0 for symbolic generators)


@dataclass(frozen=True)
class VerifyRequest:
    """Score the step ``action`` (claiming ``next_state``) proposed in ``state``."""

    instance: str
    key: tuple[int, ...]
    state: tuple[str, ...]
    action: str
    next_state: tuple[str, ...]
    task: GroundTask | None = field(default=None, repr=False, compare=False)


class Score(NamedTuple):
    value: float  # the verifier's P(valid)
    accepted: bool  # value >= the verifier's threshold


class Generator(Protocol):
    def propose(self, requests: Sequence[GenRequest]) -> list[Proposal]: ...


class Verifier(Protocol):
    threshold: float

    def score(self, requests: Sequence[VerifyRequest]) -> list[float]: ...


def score_batch(verifier: Verifier, requests: Sequence[VerifyRequest]) -> list[Score]:
    """Scores with the accept decision, checking the verifier answered every request."""
    values = verifier.score(requests) if requests else []
    if len(values) != len(requests):
        raise RuntimeError(f"verifier returned {len(values)} scores for {len(requests)} requests")
    return [Score(float(v), float(v) >= verifier.threshold) for v in values]


def propose_batch(generator: Generator, requests: Sequence[GenRequest]) -> list[Proposal]:
    proposals = generator.propose(requests) if requests else []
    if len(proposals) != len(requests):
        raise RuntimeError(f"generator returned {len(proposals)} texts for {len(requests)} prompts")
    out = []
    for p in proposals:
        text, n_tokens = (p.text, p.n_tokens) if isinstance(p, Proposal) else (p, 0)
        out.append(Proposal(text if isinstance(text, str) else "" if text is None else repr(text),
                            int(n_tokens or 0)))
    return out
