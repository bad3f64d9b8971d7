"""Symbolic stand-ins behind the model interfaces: the random baseline, a synthetic generator
with known error rates, and the oracle verifier. They read the request's ground task.

Every random choice uses the request's own seed, so results never depend on batching.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from plansuite.errors import ConfigError
from plansuite.pddl.codec import Step, format_completion
from plansuite.pddl.fast_downward import solve
from plansuite.pddl.judge import StepVerdict, judge_step
from plansuite.pddl.model import parse_atom_text, problem_to_pddl
from plansuite.pddl.simulator import GroundTask, Inapplicable
from plansuite.planning.loops import PlannerSpec
from plansuite.planning.protocols import Generator, GenRequest, Proposal, VerifyRequest

NO_ACTION = Proposal("", 0)  # what a symbolic generator says at a dead end: nothing to decode


def _task(request: GenRequest | VerifyRequest) -> GroundTask:
    if request.task is None:
        raise ValueError(f"{request.instance}: symbolic generators/verifiers need the ground task")
    return request.task


class RandomApplicableGenerator:
    """Uniformly random applicable action, reported with its true next state.

    Under the ``sample`` loop this is "random applicable actions with restarts @k": an attempt
    restarts after L_max steps or at a dead end (no applicable action: an empty completion).
    On the paper's 200 instances with L_max = 40 it solves 24.8 / 79.0 / 93.8 / 103.6 at
    k = 1 / 8 / 16 / 25 (mean of seeds 0-4); the paper's code reported 32 / 77 / 92 / 94, each
    inside the Wilson 95 % interval of the seed-0 run (tests/test_planning_random_baseline.py).
    """

    def propose(self, requests: Sequence[GenRequest]) -> list[Proposal]:
        out = []
        for r in requests:
            task = _task(r)
            state = task.try_encode(r.state)
            actions = task.applicable(state) if state is not None else []
            if not actions:
                out.append(NO_ACTION)
                continue
            a = random.Random(r.seed).choice(actions)
            out.append(Proposal(format_completion(task.actions[a], task.decode(task.apply(state, a)))))
        return out


class FastDownwardGenerator:
    """Fast Downward's plan from the request's state, one step per request, each with its true
    next state: the classical planner as a row of the same tables (``planner=fast_downward``).

    A plan is made once per (instance, state) and every state along it is remembered, so an
    attempt costs one planner call; a dead end or an unsolvable state is an empty completion.
    ``mode`` is an FD alias or ``optimal`` / ``satisficing`` (:mod:`plansuite.pddl.fast_downward`).
    """

    def __init__(self, domain_file: str | Path, mode: str = "satisficing", time_limit: float = 60):
        self.domain_file, self.mode, self.time_limit = Path(domain_file), mode, time_limit
        self.next_action: dict[tuple[str, int], str | None] = {}

    def propose(self, requests: Sequence[GenRequest]) -> list[Proposal]:
        out = []
        for r in requests:
            task = _task(r)
            state = task.try_encode(r.state)
            if state is not None and (r.instance, state) not in self.next_action:
                self._plan(r.instance, task, state)
            action = None if state is None else self.next_action.get((r.instance, state))
            a = None if action is None else task.action_id(action)
            if a is None or a not in task.applicable(state) or action in r.exclude_actions:
                out.append(NO_ACTION)
                continue
            out.append(Proposal(format_completion(task.actions[a], task.decode(task.apply(state, a)))))
        return out

    def _plan(self, instance: str, task: GroundTask, state: int) -> None:
        init = frozenset(filter(None, map(parse_atom_text, task.decode(state))))
        problem = replace(task.problem, init=init)
        with tempfile.TemporaryDirectory(prefix="plansuite-fd-gen-") as tmp:
            path = Path(tmp) / f"{instance}.pddl"
            path.write_text(problem_to_pddl(problem, task.domain))
            result = solve(self.domain_file, path, self.mode, self.time_limit)
        self.next_action[(instance, state)] = None
        for action in result.plan or []:
            a = task.action_id(action)
            if a is None:
                break
            self.next_action[(instance, state)] = action
            state = task.apply(state, a)


@dataclass
class SyntheticGenerator:
    """A goal-directed generator with known error rates, for the pipeline without a model.

    Per step: garbage text with probability ``p_garbage``; else an inapplicable action with
    ``p_bad_action``; else an applicable action with a wrong next state (one atom dropped)
    with ``p_bad_state``; else a correct step whose action is, with probability ``greedy``, one
    that satisfies the most goal atoms (ties broken at random), and otherwise uniform.
    """

    p_garbage: float = 0.02
    p_bad_action: float = 0.05
    p_bad_state: float = 0.02
    greedy: float = 0.8

    def propose(self, requests: Sequence[GenRequest]) -> list[Proposal]:
        return [self._one(r) for r in requests]

    def _one(self, r: GenRequest) -> Proposal:
        rng, task = random.Random(r.seed), _task(r)
        state = task.try_encode(r.state)
        if state is None or rng.random() < self.p_garbage:
            return Proposal(rng.choice(["ACTION:\n(pick", "NEXT STATE:\nEND", "\x00\x01 garbage",
                                        "ACTION:\n(pickup b1)\nNEXT STATE:\n(holding b1"]))
        valid, excluded = task.applicable(state), {task.action_id(a) for a in r.exclude_actions}
        applicable = [a for a in valid if a not in excluded]
        inapplicable = sorted(set(range(len(task.actions))) - set(valid) - excluded)
        if inapplicable and (not applicable or rng.random() < self.p_bad_action):
            a = rng.choice(inapplicable)
            return Proposal(format_completion(task.actions[a], task.decode(task.apply(state, a))))
        if not applicable:
            return NO_ACTION
        if rng.random() < self.greedy:
            gain = [bin(task.apply(state, a) & task.goal_pos).count("1") for a in applicable]
            applicable = [a for a, g in zip(applicable, gain, strict=True) if g == max(gain)]
        a = rng.choice(applicable)
        next_atoms = task.decode(task.apply(state, a))
        if next_atoms and rng.random() < self.p_bad_state:
            next_atoms.remove(rng.choice(next_atoms))
        return Proposal(format_completion(task.actions[a], next_atoms))


class OracleVerifier:
    """The simulator as verifier: 1.0 for a correct step, 0.0 otherwise (an upper bound).

    ``check_next_state=False`` checks applicability only, like a perfect (s, a) verifier.
    """

    threshold = 0.5

    def __init__(self, check_next_state: bool = True):
        self.check_next_state = check_next_state
        self.input_kind = "state_action_next" if check_next_state else "state_action"

    def score(self, requests: Sequence[VerifyRequest]) -> list[float]:
        return [float(self._ok(r)) for r in requests]

    def _ok(self, r: VerifyRequest) -> bool:
        task = _task(r)
        state = task.try_encode(r.state)
        if state is None:
            return False
        if self.check_next_state:
            return judge_step(task, state, Step(r.action, r.next_state))[0] is StepVerdict.OK
        return not isinstance(task.step(state, r.action), Inapplicable)


BASELINES = ("oracle", "random_restart")


def baseline_planner(name: str, spec: PlannerSpec, generator: Generator
                     ) -> tuple[PlannerSpec, Generator, OracleVerifier | None]:
    """A baseline run next to ``spec``: same k, L_max and sampling settings.

    ``oracle``: the same generator, step-wise with the simulator as verifier (an upper bound
    for any verifier). ``random_restart``: random applicable actions with restarts.
    """
    if name == "oracle":
        return (replace(spec, name="oracle_verifier", loop="stepwise", propose_on_failure="none"),
                generator, OracleVerifier())
    if name == "random_restart":
        return (replace(spec, name="random_restart", loop="sample", propose_on_failure="none"),
                RandomApplicableGenerator(), None)
    raise ConfigError(f"baselines: unknown baseline '{name}' (choose from {', '.join(BASELINES)})")
