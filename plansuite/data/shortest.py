"""Hindsight shortest paths: a walk's start and end kept, the steps between them a planner's.

With a partial goal (``dataset.goal``) the path is a plan to the goal as written, which may end
in another state than the walk (any state holding the goal's atoms), and is often much shorter.

The verifier paper trains its generator on random walks whose goal is the walk's own end state,
so the actions it imitates are random steps, and a generator trained on them is at best a random
walk drawn toward the goal: on the paper's 3-8 blocks the CPU generator trails uniformly random
actions. With ``dataset.shortest_paths=true`` the builder also writes ``shortest.jsonl`` beside
each split's ``trajectories.jsonl``: the same walks (same ids, starts and goals, so the goals are
the paper's), each with its steps replaced by a plan from A* with the FF heuristic (pymimir, in
C++, ~10 ms per walk). h_FF is not admissible, so a plan is not proven optimal, but on 60
paper-scale walks it matched A* with h_max (optimal) on every one at 1/20 of the cost; a plan is
used only when it is no longer than the walk. The generator trains on these paths with
``model.trajectories=shortest``. The walks, verifier examples and test instances are byte for
byte those of ``shortest_paths=false``; a shortest path whose ``(state, goal)`` prompt is a test
or validation instance is dropped (counted in the manifest). Ground truth stays with our
simulator: every plan is replayed by :class:`GroundTask` and must end in the walk's end state,
or the walk is kept as it was.

Reproducible: pymimir's *grounded* mode breaks ties between equally short plans differently
from one process to the next (its ground atoms and actions are ordered by memory address:
measured, three runs over the same 40 walks gave three plan sets of the same lengths), so the
search runs in *lifted* mode, whose order comes from the PDDL text alone. Measured on 300 walks
over 3-8 blocks: the same plans in every process, in either processing order, with one planner
or a fresh one per walk; the same total length as grounded A* and as A* with h_max (optimal);
and slightly faster (3 ms per walk). ``test_plans_are_the_same_in_every_process`` keeps it so.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from plansuite.data.explorer import Walk
from plansuite.data.load import SHORTEST_FILE, pair_key
from plansuite.errors import ConfigError, PDDLError, clip
from plansuite.pddl.model import Domain, Problem, parse_atom_text, problem_to_pddl
from plansuite.pddl.simulator import GroundTask


@contextlib.contextmanager
def _quiet_c_stdout() -> Iterator[None]:
    """pymimir's grounder prints to the C-level stdout; send that to /dev/null meanwhile."""
    import sys

    sys.stdout.flush()
    saved, devnull = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


class ShortestPaths:
    """Plans between two states of one domain with pymimir's A* + h_FF (one per worker)."""

    def __init__(self, domain: Domain, domain_text: str, max_states: int = 200_000):
        try:
            import pymimir
        except ImportError as exc:  # a declared dependency: only a broken install gets here
            raise ConfigError("dataset.shortest_paths=true needs pymimir (pip install pymimir)") from exc
        self.mimir, self.domain, self.max_states = pymimir, domain, max_states
        # pymimir reads a domain from a path only; the file lives as long as this object.
        self._file = tempfile.NamedTemporaryFile(  # noqa: SIM115 (kept open for pymimir)
            "w", suffix=".pddl", prefix="plansuite-domain-")
        self._file.write(domain_text)
        self._file.flush()
        try:
            with _quiet_c_stdout():
                self._domain = pymimir.Domain(self._file.name)
        except RuntimeError as exc:  # pymimir is stricter than the suite's checks
            first = clip(str(exc).strip().splitlines()[0], 160)
            raise PDDLError(domain.source, f"domain {domain.name}",
                            f"dataset.shortest_paths=true: pymimir cannot read it: {first}") from exc

    def plan(self, task: GroundTask, start: int, goal: int, exact: bool = True) -> Walk | None:
        """A plan from ``start`` to ``goal`` (a bit set: exactly that state, or with
        ``exact=False`` any state holding its atoms) with the states it passes, replayed and
        checked by ``task`` (``None`` when the search gives up or its plan does not check out)."""
        goal_atoms = frozenset(parse_atom_text(t) for t in task.decode(goal))
        init_atoms = frozenset(parse_atom_text(t) for t in task.decode(start))
        problem = Problem("shortest", self.domain.name, dict(task.problem.objects), init_atoms,
                          goal_atoms)
        m = self.mimir
        with _quiet_c_stdout():
            mproblem = m.Problem(self._domain, problem_to_pddl(problem, self.domain),
                                 mode="lifted")  # deterministic tie-breaks: see the docstring
            result = m.astar_eager(mproblem, mproblem.get_initial_state(), m.FFHeuristic(mproblem),
                                   max_num_states=self.max_states)
        if str(result.status) != "solved":
            return None
        actions = [task.action_id(str(a)) for a in result.solution]
        if any(a is None for a in actions):
            return None
        states = [start]
        for a in actions:
            if not task.is_applicable(states[-1], a):
                return None
            states.append(task.apply(states[-1], a))
        reached = states[-1] == goal if exact else states[-1] & goal == goal
        return Walk(states, actions) if reached else None

    def shorten(self, task: GroundTask, walk: Walk, stats: Counter,
                goal: list[str] | None = None) -> Walk:
        """The walk with its steps replaced by a plan to its end state (or, given ``goal``, to
        any state holding those atoms: a partial goal, ``dataset.goal``), when one is shorter or
        as short (states and actions as in :class:`Walk`); else the walk itself."""
        if len(walk) <= 1:
            return walk
        if goal is None:
            path = self.plan(task, walk.states[0], walk.states[-1])
        else:
            path = self.plan(task, walk.states[0], task.encode(goal), exact=False)
        if path is None:
            stats["shortest_failed"] += 1
            return walk
        if len(path) > len(walk):
            stats["shortest_longer_than_walk"] += 1
            return walk
        stats["shortest_steps_saved"] += len(walk) - len(path)
        return path


def drop_leaked(path: Path, instance_keys: set[bytes]) -> int:
    """Remove from ``path`` (a ``shortest.jsonl``) every path with a ``(state, goal)`` prompt in
    ``instance_keys``; return how many were removed. The walks' own prompts were already kept
    apart from the instances when those were drawn; a shorter path can visit other states."""
    kept, dropped = [], 0
    with open(path) as f:
        for line in f:
            traj = json.loads(line)
            if any(pair_key(s, traj["goal"]) in instance_keys for s in traj["states"][:-1]):
                dropped += 1
            else:
                kept.append(line)
    path.write_text("".join(kept))
    return dropped


__all__ = ["SHORTEST_FILE", "ShortestPaths", "drop_leaked"]
