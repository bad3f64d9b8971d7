"""Skill discovery, model-free parts: the archive of verified plans and the batch filter.

AdaPlanner keeps successful plans as "skills" and admits new ones only if they raise the
success rate on validation tasks (its public code never fills that store). Here a skill is a plan
the planner found for a training-distribution instance -- never a test instance -- that the
simulator has replayed from the true initial state: every action applicable and the goal
reached. The skill keeps the *true* states along the plan, so the transitions a generator is
later finetuned on come from the simulator, not from what the model claimed.

Archive (``skills.jsonl``)
    One JSON line per skill, appended and fsynced; a torn last line (a kill mid-write) is
    ignored on reading and dropped before the next append. Two skills are the same when their domain, initial state, goal and
    action sequence are equal (whichever instance id found it first is kept).

Filter (:func:`keep_batch`)
    A batch of new skills is kept only if validation GRR rises: the generator finetuned with
    the batch (the candidate) and the generator without it (the baseline) are evaluated on the
    *same* validation items (instance and seed); the batch is accepted iff the candidate solves
    at least ``min_gain`` more items than the baseline (default 1: a strictly higher validation
    GRR; a tie rejects, since the batch showed no gain and the smaller archive is kept). With
    ``require_significant`` the lower end of the paired 95 % interval of the difference
    (:func:`~.metrics.paired_difference`) must also be above 0.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from plansuite.errors import ConfigError
from plansuite.jsonl import append_lines, complete_lines
from plansuite.pddl.codec import format_completion, format_prompt
from plansuite.pddl.model import Domain, atom_text
from plansuite.pddl.parse import load_problem
from plansuite.pddl.simulator import GroundTask
from plansuite.planning.metrics import paired_difference


@dataclass(frozen=True)
class Skill:
    instance: str
    domain: str
    init: tuple[str, ...]
    goal: tuple[str, ...]
    goal_neg: tuple[str, ...]
    actions: tuple[str, ...]
    states: tuple[tuple[str, ...], ...]  # s0 .. sn, replayed by the simulator
    source: dict = field(default_factory=dict, compare=False)  # planner, seed, round, problem

    @property
    def key(self) -> str:
        """Identity for de-duplication: the problem (domain, s0, goal) and the actions."""
        payload = json.dumps([self.domain, self.init, self.goal, self.goal_neg, self.actions])
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def transitions(self) -> list[tuple[str, str]]:
        """(prompt, completion) pairs in the generator's text format, along the true states."""
        return [(format_prompt(self.goal, self.states[i]),
                 format_completion(action, self.states[i + 1]))
                for i, action in enumerate(self.actions)]

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, line: str) -> Skill:
        raw = json.loads(line)
        return cls(raw["instance"], raw["domain"], tuple(raw["init"]), tuple(raw["goal"]),
                   tuple(raw["goal_neg"]), tuple(raw["actions"]),
                   tuple(tuple(s) for s in raw["states"]), raw.get("source", {}))


def verify_plan(task: GroundTask, instance: str, actions: Sequence[str],
                source: Mapping | None = None) -> Skill | None:
    """The skill for ``actions`` if the simulator confirms they solve ``task``, else None.

    >>> from plansuite.domains import load_builtin
    >>> from plansuite.pddl.model import Problem
    >>> task = GroundTask(load_builtin("blocksworld"), Problem("p", "blocksworld-4ops",
    ...     {"a": "object"}, frozenset({("on-table", "a"), ("clear", "a"), ("arm-empty",)}),
    ...     frozenset({("holding", "a")})))
    >>> skill = verify_plan(task, "p", ["(pickup a)"])
    >>> skill.states[1]
    ('(holding a)',)
    >>> verify_plan(task, "p", ["(pickup a)", "(putdown a)"]) is None  # goal not reached
    True
    """
    if not task.check_plan(list(actions)).valid:
        return None
    states, state = [tuple(task.decode(task.init))], task.init
    for action in actions:
        state = task.step(state, action)
        states.append(tuple(task.decode(state)))
    problem = task.problem
    return Skill(instance, problem.domain_name, states[0],
                 tuple(sorted(map(atom_text, problem.goal_pos))),
                 tuple(sorted(map(atom_text, problem.goal_neg))), tuple(actions), tuple(states),
                 dict(source or {}))


def skills_from_records(records: Iterable[Mapping], domain: Domain,
                        forbidden: Sequence[str | Path] = (), source: Mapping | None = None
                        ) -> tuple[list[Skill], list[str]]:
    """Verified skills from ``instances.jsonl`` records, and the ids of successes not kept.

    Only successful, non-empty plans are considered; each is replayed on its problem file
    (never trusted from the record), and a plan VAL rejected is dropped. A problem under one of
    the ``forbidden`` folders (the test sets) is an error: skills come from training instances.
    """
    blocked = [Path(f).resolve() for f in forbidden]
    skills, dropped = [], []
    for record in records:
        if record["outcome"] != "success" or not record.get("plan"):
            continue
        problem_file = Path(record["problem"]).resolve()
        if any(problem_file.is_relative_to(b) for b in blocked):
            raise ConfigError(f"{problem_file}: under a held-out folder; skills must come from "
                              "training-distribution instances, never the test set")
        task = GroundTask(domain, load_problem(problem_file, domain))
        skill = verify_plan(task, record["id"], record["plan"],
                            {**(source or {}), "problem": str(problem_file)})
        if skill is None or record.get("val_valid") is False:
            dropped.append(record["id"])
        else:
            skills.append(skill)
    return skills, dropped


class SkillArchive:
    """The append-only JSONL store of verified skills, de-duplicated by :attr:`Skill.key`."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._skills: dict[str, Skill] = {}
        for line in complete_lines(self.path):
            skill = Skill.from_json(line)
            self._skills.setdefault(skill.key, skill)

    def __len__(self) -> int:
        return len(self._skills)

    def __iter__(self) -> Iterator[Skill]:
        return iter(self._skills.values())

    def __contains__(self, skill: Skill) -> bool:
        return skill.key in self._skills

    def new(self, skills: Iterable[Skill]) -> list[Skill]:
        """The skills not in the archive yet (first of each duplicate), without storing them."""
        seen, out = set(self._skills), []
        for skill in skills:
            if skill.key not in seen:
                seen.add(skill.key)
                out.append(skill)
        return out

    def add(self, skills: Iterable[Skill]) -> list[Skill]:
        """Store the new skills; returns them."""
        fresh = self.new(skills)
        if fresh:
            append_lines(self.path, [s.to_json() for s in fresh])
            self._skills.update((s.key, s) for s in fresh)
        return fresh

    def transitions(self) -> list[tuple[str, str]]:
        return [t for skill in self for t in skill.transitions()]


def solved_items(records: Iterable[Mapping], seed: int) -> dict[tuple[int, str], bool]:
    """``{(seed, instance id): success}`` from one evaluation's ``instances.jsonl``."""
    return {(seed, r["id"]): r["outcome"] == "success" for r in records}


@dataclass(frozen=True)
class BatchDecision:
    accepted: bool
    baseline: int  # validation items solved without the batch
    candidate: int  # ... and with it
    n: int
    delta_ci: tuple[float, float]  # paired 95 % interval of the GRR difference
    reason: str


def keep_batch(baseline: Mapping, candidate: Mapping, min_gain: int = 1,
               require_significant: bool = False) -> BatchDecision:
    """Keep a batch of new skills only if validation GRR rises (rule: module docstring).

    ``baseline`` and ``candidate`` map the same validation items to success.

    >>> before = {("s0", i): i < 5 for i in range(20)}
    >>> keep_batch(before, {("s0", i): i < 6 for i in range(20)}).accepted
    True
    >>> keep_batch(before, before).reason
    'rejected: 5 -> 5 of 20 validation items solved (needs +1)'
    >>> keep_batch(before, {("s0", i): i < 6 for i in range(20)}, require_significant=True).reason
    'rejected: 5 -> 6 of 20, but the 95 % interval of the gain [-0.0936, 0.196] includes 0'
    """
    if set(baseline) != set(candidate):
        raise ConfigError(f"the baseline and candidate were validated on different items "
                          f"({len(set(baseline) ^ set(candidate))} not shared); use the same "
                          "instances and seeds")
    if not baseline:
        raise ConfigError("no validation items to decide on")
    if min_gain < 1:
        raise ConfigError(f"min_gain={min_gain}: must be >= 1 (a batch must raise GRR)")
    items = sorted(baseline, key=repr)
    diff = paired_difference([bool(candidate[i]) for i in items],
                             [bool(baseline[i]) for i in items])
    n = len(items)
    before, after = sum(map(bool, baseline.values())), sum(map(bool, candidate.values()))
    ci = tuple(diff["delta_ci"])
    if after - before < min_gain:
        reason = f"rejected: {before} -> {after} of {n} validation items solved (needs +{min_gain})"
        return BatchDecision(False, before, after, n, ci, reason)
    if require_significant and ci[0] <= 0:
        reason = (f"rejected: {before} -> {after} of {n}, but the 95 % interval of the gain "
                  f"[{ci[0]}, {ci[1]}] includes 0")
        return BatchDecision(False, before, after, n, ci, reason)
    return BatchDecision(True, before, after, n, ci,
                         f"accepted: {before} -> {after} of {n} validation items solved")
