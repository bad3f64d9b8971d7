"""The per-instance planning loops, written once as coroutines and driven by an engine.

A loop is a generator function ``loop(ctx, spec)``: it ``yield``s a :class:`Need` (a batch of
generate or verify requests), receives the answers (a list of
:class:`~.protocols.Proposal` or :class:`~.protocols.Score`, one per request), and finally
``return``s an :class:`~.episode.EpisodeResult`. Loops never call a model themselves, so the
batched engine can advance many instances in lockstep while the code below still reads as
one instance's algorithm. Semantics: the package docstring.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Literal

from plansuite.errors import ConfigError
from plansuite.planning.episode import Attempt, End, EpisodeResult, InstanceContext, decode_step
from plansuite.settings import from_mapping

GENERATE, VERIFY = "generate", "verify"


@dataclass(frozen=True)
class Need:
    kind: Literal["generate", "verify"]
    requests: list


@dataclass(frozen=True)
class PlannerSpec:
    """The settings every loop shares (``conf/planner/*.yaml``); a loop with settings of its own
    declares a subclass (e.g. :class:`~.refine.RefineResumeSpec`) as its :attr:`LoopDef.spec`."""

    name: str = "generator_verifier"
    loop: str = "stepwise"  # a key of LOOPS, or the dotted path of a loop module
    k: int = 25  # attempts
    max_steps: int = 40  # L_max
    temperature: float = 1.0
    top_p: float = 0.99
    max_new_tokens: int | None = None  # None: the generator's default
    propose_on_failure: Literal["last", "none"] = "none"
    budget: int | None = None  # generator calls per instance; None: k * max_steps (k full attempts)

    @property
    def call_budget(self) -> int:
        """Generator calls one instance may use (every loop stops there)."""
        return self.k * self.max_steps if self.budget is None else self.budget

    def environment_feedback(self) -> bool:
        """True when the simulator, not a verifier, accepts or refuses steps."""
        return False

    def check(self) -> None:
        """One-line errors for bad values (a subclass adds its own after ``super().check()``)."""
        if self.k < 1 or self.max_steps < 1:
            raise ConfigError(f"planner {self.name}: k and max_steps must be >= 1")
        if self.propose_on_failure not in ("last", "none"):
            raise ConfigError("planner.propose_on_failure: choose 'last' or 'none'")
        if self.budget is not None and self.budget < 1:
            raise ConfigError(f"planner.budget={self.budget}: must be >= 1 (or null)")
        if not self.temperature >= 0:  # checked with or without a model (NaN fails too)
            raise ConfigError(f"planner.temperature={self.temperature}: must be >= 0 (0: greedy)")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"planner.top_p={self.top_p}: must be in (0, 1]")

    @classmethod
    def from_dict(cls, values: dict) -> PlannerSpec:
        """The spec class of ``values["loop"]``, filled from the resolved ``planner`` group."""
        spec = from_mapping(loop_def(values.get("loop", cls.loop)).spec, values, "planner")
        spec.check()
        return spec


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


def give_up(attempts: list[Attempt], spec: PlannerSpec, last_plan: list | None = None,
            events: dict[str, int] | None = None) -> EpisodeResult:
    """No attempt was accepted: propose the last one (``last_plan``, by default its steps) with
    ``propose_on_failure: last``, or nothing (``no_plan``)."""
    if spec.propose_on_failure == "last" and attempts:
        plan = attempts[-1].steps if last_plan is None else last_plan
        return EpisodeResult(attempts, plan, attempts[-1].index, events=events or {})
    return EpisodeResult(attempts, None, None, events=events or {})


@dataclass(frozen=True)
class LoopDef:
    run: Callable[[InstanceContext, Any], LoopCoroutine]
    verifier: Literal["required", "forbidden", "optional"]  # unless the spec's feedback is the environment
    spec: type[PlannerSpec] = PlannerSpec  # its settings: PlannerSpec or a subclass with its own


LOOPS: dict[str, LoopDef] = {
    "sample": LoopDef(sample_at_k, "forbidden"),
    "stepwise": LoopDef(stepwise_at_k, "required"),
    "posthoc": LoopDef(posthoc_at_k, "required"),
}


def loop_def(name: str) -> LoopDef:
    """A built-in loop, or the ``LOOP`` of the module ``name`` (``loop: my_package.my_loop``).

    >>> loop_def("stepwise").verifier
    'required'
    >>> loop_def("beam")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    plansuite.errors.ConfigError: planner.loop=beam: unknown loop (choose from sample, stepwise, posthoc, ...)
    """
    if name not in LOOPS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name and (name == exc.name or name.startswith(f"{exc.name}.")):
                raise ConfigError(f"planner.loop={name}: unknown loop (choose from "
                                  f"{', '.join(LOOPS)}, or give a module path)") from None
            raise ConfigError(f"planner.loop={name}: cannot import it ({exc})") from None
        if not isinstance(getattr(module, "LOOP", None), LoopDef):
            raise ConfigError(f"planner.loop={name}: the module has no LOOP = LoopDef(...)")
        LOOPS[name] = module.LOOP
    return LOOPS[name]


def verifier_need(spec: PlannerSpec) -> Literal["required", "forbidden", "optional"]:
    return "forbidden" if spec.environment_feedback() else loop_def(spec.loop).verifier


def feedback_source(spec: PlannerSpec) -> Literal["none", "verifier", "environment"]:
    """What accepted or refused steps while planning (stated in results and W&B tags)."""
    if spec.environment_feedback():
        return "environment"
    return "none" if verifier_need(spec) == "forbidden" else "verifier"


def check_verifier(spec: PlannerSpec, verifier: Any) -> None:
    """A one-line error when the verifier setting does not fit the planner's loop."""
    need = verifier_need(spec)
    if need == "required" and verifier is None:
        raise ConfigError(f"planner={spec.name} needs a verifier (verifier=DIR, oracle or "
                          "oracle_action)")
    if need == "forbidden" and verifier is not None:
        if spec.environment_feedback():
            raise ConfigError(f"planner={spec.name} takes its feedback from the environment; "
                              "set verifier=none")
        raise ConfigError(f"planner={spec.name} uses no verifier; set verifier=none or choose "
                          "planner=generator_verifier / posthoc")
