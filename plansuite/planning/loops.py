"""The per-instance planning loops, written once as coroutines and driven by an engine.

A loop is a generator function ``loop(ctx, spec)``: it ``yield``s a :class:`Need` (a batch of
generate or verify requests), receives the answers (a list of
:class:`~.protocols.Proposal` or :class:`~.protocols.Score`, one per request), and finally
``return``s an :class:`~.episode.EpisodeResult`. Loops never call a model themselves, so the
batched engine can advance many instances in lockstep while the code below still reads as
one instance's algorithm. Semantics: the package docstring.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, fields
from typing import Any, Literal

from plansuite.errors import ConfigError
from plansuite.planning.episode import Attempt, End, EpisodeResult, InstanceContext, decode_step

GENERATE, VERIFY = "generate", "verify"


@dataclass(frozen=True)
class Need:
    kind: Literal["generate", "verify"]
    requests: list


@dataclass(frozen=True)
class PlannerSpec:
    """One planner configuration (``conf/planner/*.yaml``)."""

    name: str = "generator_verifier"
    loop: str = "stepwise"  # a key of LOOPS
    k: int = 25  # attempts
    max_steps: int = 40  # L_max
    temperature: float = 1.0
    top_p: float = 0.99
    max_new_tokens: int | None = None  # None: the generator's default
    propose_on_failure: Literal["last", "none"] = "none"
    budget: int | None = None  # generator calls per instance; None: k * max_steps (k full attempts)
    # refine_resume only (plansuite/planning/refine.py):
    feedback: Literal["verifier", "environment"] = "verifier"  # what accepts or refuses a step
    reset_after: int | None = 3  # failed tries at one checkpoint before a reset to s0 (None: never)
    max_failures: int | None = None  # failed tries per instance before giving up (None: no limit)
    temperature_step: float = 0.0  # added to the temperature per failed try at the checkpoint
    temperature_max: float = 2.0  # the retry temperature never exceeds this
    avoid_revisits: bool = False  # refuse a step predicting a state already on the episode's path

    @property
    def call_budget(self) -> int:
        """Generator calls one instance may use (every loop stops there)."""
        return self.k * self.max_steps if self.budget is None else self.budget

    @classmethod
    def from_dict(cls, values: dict) -> PlannerSpec:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"planner.{unknown[0]}: unknown planner setting "
                              f"(known: {', '.join(sorted(known))})")
        for f in fields(cls):
            if f.name in values:
                _check_type(f.name, str(f.type), values[f.name])
        spec = cls(**values)
        if spec.loop not in LOOPS:
            raise ConfigError(f"planner.loop={spec.loop}: unknown loop (choose from "
                              f"{', '.join(LOOPS)})")
        if spec.k < 1 or spec.max_steps < 1:
            raise ConfigError(f"planner {spec.name}: k and max_steps must be >= 1")
        if spec.propose_on_failure not in ("last", "none"):
            raise ConfigError("planner.propose_on_failure: choose 'last' or 'none'")
        for key in ("budget", "reset_after", "max_failures"):
            if getattr(spec, key) is not None and getattr(spec, key) < 1:
                raise ConfigError(f"planner.{key}={getattr(spec, key)}: must be >= 1 (or null)")
        if spec.feedback not in ("verifier", "environment"):
            raise ConfigError(f"planner.feedback={spec.feedback}: choose verifier or environment")
        if spec.feedback == "environment" and not LOOPS[spec.loop].environment:
            raise ConfigError(f"planner.feedback=environment: loop '{spec.loop}' takes feedback "
                              "from a verifier only (use loop: refine_resume)")
        if spec.temperature_step < 0:
            raise ConfigError("planner.temperature_step: must be >= 0")
        return spec


def _check_type(name: str, annotation: str, value) -> None:
    """``planner.k=abc`` is one line here, not a TypeError deep in a loop."""
    if value is None and "None" in annotation:
        return
    base = annotation.split("|")[0].strip()
    numbers = {"int": (int,), "float": (int, float)}.get(base)
    if numbers and (isinstance(value, bool) or not isinstance(value, numbers)):
        kind = "an integer" if base == "int" else "a number"
        raise ConfigError(f"planner.{name}={value!r}: must be {kind}"
                          + (" (or null)" if "None" in annotation else ""))


LoopCoroutine = Generator[Need, list, EpisodeResult]


def rollout(ctx: InstanceContext, spec: PlannerSpec, attempt: int, stepwise_verifier: bool,
            calls_left: int) -> Generator[Need, list, Attempt]:
    """One attempt from s0 on the generator's own predicted states (one call per step)."""
    state, steps = ctx.init, []
    for i in range(spec.max_steps):
        if ctx.reached(state):
            return Attempt(attempt, steps, End.GOAL)
        if i == calls_left:
            return Attempt(attempt, steps, End.BUDGET)
        request = ctx.gen_request(state, (attempt, i), spec.temperature, spec.top_p,
                                  spec.max_new_tokens)
        [proposal] = yield Need(GENERATE, [request])
        step = decode_step(request.key, state, proposal.text, proposal.n_tokens)
        steps.append(step)
        if not step.parsed:
            return Attempt(attempt, steps, End.UNPARSEABLE)
        if stepwise_verifier:
            [score] = yield Need(VERIFY, [ctx.verify_request(step)])
            step.score, step.accepted = score
            if not score.accepted:
                return Attempt(attempt, steps, End.REJECTED)
        state = step.next_state
    return Attempt(attempt, steps, End.GOAL if ctx.reached(state) else End.MAX_STEPS)


def restart_at_k(ctx: InstanceContext, spec: PlannerSpec, stepwise_verifier: bool) -> LoopCoroutine:
    """generator@k (no verifier) and generator+verifier@k (step-wise, Algorithm 2)."""
    attempts: list[Attempt] = []
    calls = 0
    for a in range(spec.k):
        if calls == spec.call_budget:
            break
        attempt = yield from rollout(ctx, spec, a, stepwise_verifier, spec.call_budget - calls)
        attempts.append(attempt)
        calls += len(attempt.steps)
        if attempt.end is End.GOAL:
            return EpisodeResult(attempts, attempt.steps, a)
    return give_up(attempts, spec)


def sample_at_k(ctx: InstanceContext, spec: PlannerSpec) -> LoopCoroutine:
    return (yield from restart_at_k(ctx, spec, stepwise_verifier=False))


def stepwise_at_k(ctx: InstanceContext, spec: PlannerSpec) -> LoopCoroutine:
    return (yield from restart_at_k(ctx, spec, stepwise_verifier=True))


def posthoc_at_k(ctx: InstanceContext, spec: PlannerSpec) -> LoopCoroutine:
    """Post-hoc filter: the first goal-reaching attempt whose steps all pass the verifier."""
    attempts: list[Attempt] = []
    calls = 0
    for a in range(spec.k):
        if calls == spec.call_budget:
            break
        attempt = yield from rollout(ctx, spec, a, False, spec.call_budget - calls)
        attempts.append(attempt)
        calls += len(attempt.steps)
        if attempt.end is not End.GOAL:
            continue
        scores = yield Need(VERIFY, [ctx.verify_request(s) for s in attempt.steps])
        for step, (value, accepted) in zip(attempt.steps, scores, strict=True):
            step.score, step.accepted = value, accepted
        if all(s.accepted for s in attempt.steps):
            return EpisodeResult(attempts, attempt.steps, a)
        attempt.end = End.REJECTED
    return give_up(attempts, spec)


def give_up(attempts: list[Attempt], spec: PlannerSpec) -> EpisodeResult:
    """No attempt was accepted: propose the last one, or nothing (``no_plan``)."""
    if spec.propose_on_failure == "last" and attempts:
        return EpisodeResult(attempts, attempts[-1].steps, attempts[-1].index)
    return EpisodeResult(attempts, None, None)


@dataclass(frozen=True)
class LoopDef:
    run: Callable[[InstanceContext, PlannerSpec], LoopCoroutine]
    verifier: Literal["required", "forbidden", "optional"]  # with feedback: verifier
    environment: bool = False  # accepts feedback: environment (then no verifier)


LOOPS: dict[str, LoopDef] = {
    "sample": LoopDef(sample_at_k, "forbidden"),
    "stepwise": LoopDef(stepwise_at_k, "required"),
    "posthoc": LoopDef(posthoc_at_k, "required"),
}


def verifier_need(spec: PlannerSpec) -> Literal["required", "forbidden", "optional"]:
    return "forbidden" if spec.feedback == "environment" else LOOPS[spec.loop].verifier


def feedback_source(spec: PlannerSpec) -> Literal["none", "verifier", "environment"]:
    """What accepted or refused steps while planning (stated in results and W&B tags)."""
    if spec.feedback == "environment":
        return "environment"
    return "none" if verifier_need(spec) == "forbidden" else "verifier"


def check_verifier(spec: PlannerSpec, verifier: Any) -> None:
    """A one-line error when the verifier setting does not fit the planner's loop."""
    need = verifier_need(spec)
    if need == "required" and verifier is None:
        raise ConfigError(f"planner={spec.name} needs a verifier (verifier=DIR, oracle or "
                          "oracle_action)")
    if need == "forbidden" and verifier is not None:
        if spec.feedback == "environment":
            raise ConfigError(f"planner={spec.name} takes its feedback from the environment; "
                              "set verifier=none")
        raise ConfigError(f"planner={spec.name} uses no verifier; set verifier=none or choose "
                          "planner=generator_verifier / posthoc")
