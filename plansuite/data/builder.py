"""Dataset builder: random-walk trajectories, verifier examples and test instances.

Output directory (written to a temp dir, then renamed — never half-written)::

    domain.pddl
    manifest.json            resolved config, seed, counts, timings, label noise, leakage
    train/trajectories.jsonl one walk per line (schema below)
    train/verifier.jsonl     verifier examples, referencing (traj, step)
    val/trajectories.jsonl, val/verifier.jsonl
    test/pNNNN.pddl          test instances (goals as dataset.goal says; full states by default)
    test/instances.jsonl     how each instance was made (schema below)
    val_instances/pNNNN.pddl validation instances (temperature tuning, skill filters)
    val_instances/instances.jsonl

``trajectories.jsonl``: ``{"id": int, "objects": {name: type}, "goal": [atom], "states":
[[atom]] (s_0..s_L), "actions": [action] (a_0..a_{L-1})}``; transition i is
``(goal, states[i], actions[i], states[i+1])``. ``goal`` is the walk's end state, or the part of
it ``dataset.goal`` keeps (:mod:`plansuite.data.goals`); a partial goal that holds before the end
ends the trajectory there, and a walk whose start already holds it is dropped (both counted in
the manifest: ``goal_cut_steps``, ``goal_holds_at_start_walks``). ``verifier.jsonl``:
``{"traj": int, "step": int, "action": str, "kind": "positive"|"random"|"hard", "label": 0|1,
"applicable": bool}``: ``label`` is the paper's label (random negatives are labelled 0 even when applicable), ``applicable`` the
simulator's truth (the ``relabel`` recipe trains on it). Each transition has one positive, one
random negative and at most one hard negative, made by
:func:`plansuite.data.verifier_recipes.verifier_rows`.
``instances.jsonl``: ``{"id": "p0000", "objects": int, "init": [atom], "goal": [atom],
"walk_len": int, "goal_step": int, "walk_plan": [action]}``: the instance's goal is the state after
``goal_step`` steps of a ``walk_len``-step random walk (``goal_step`` is in the walk's second
half; with ``dataset.goal`` the part of that state it keeps, never one that holds at ``init``;
``dataset.test_states`` may draw the test split's initial states from other settings, e.g. more
blocks, than training's), and ``walk_plan`` (those steps) is a valid, not necessarily optimal, plan.

No test or validation instance's ``(init, goal)`` pair is the ``(state, goal)`` prompt of any
training transition: such pairs are drawn again, counted in the manifest (``leakage``), and the
written instances are checked once more before the directory is published.
"""

from __future__ import annotations

import contextlib
import json
import math
import multiprocessing
import os
import random
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from plansuite.data.goals import GoalSpec, draw_goal, first_reached
from plansuite.data.load import pair_key
from plansuite.data.shortest import SHORTEST_FILE, ShortestPaths, drop_leaked
from plansuite.data.verifier_recipes import verifier_rows
from plansuite.domains import StateSampler
from plansuite.errors import ConfigError
from plansuite.jsonl import iter_jsonl
from plansuite.pddl.model import Atom, Domain, Problem, atom_text, problem_to_pddl
from plansuite.pddl.simulator import TaskCache
from plansuite.progress import eta, format_eta
from plansuite.settings import from_mapping

SCHEMA_VERSION = 1


@dataclass
class DatasetSpec:
    name: str = "tiny"
    train_states: int = 300  # initial states for training walks
    val_states: int = 30
    walks_per_state: int = 1
    max_walk_len: int = 20
    test_instances: int = 50
    val_instances: int = 50
    test_max_walk_len: int = 30
    chunk_size: int = 100  # initial states per work unit (the unit of seeding: results do not
    #                        depend on the number of workers)
    shortest_paths: bool = False  # also write each walk as a planner's path: data/shortest.py
    goal: GoalSpec = field(default_factory=GoalSpec)  # the goal of walks and instances: data/goals.py
    test_states: dict | None = None  # overrides of domain.states for the test instances only
    #                                  (e.g. {max_blocks: 12}); None: the training states
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.goal, dict):  # built directly, not through settings.from_mapping
            self.goal = from_mapping(GoalSpec, self.goal, "dataset.goal")
        if self.test_states is not None and not isinstance(self.test_states, dict):
            raise ConfigError(f"dataset.test_states={self.test_states!r}: a mapping of domain.states "
                              "settings (e.g. {max_blocks: 12}), or null")
        if not isinstance(self.shortest_paths, bool):
            raise ConfigError(f"dataset.shortest_paths={self.shortest_paths!r}: true or false")
        for name, f in self.__dataclass_fields__.items():
            if f.type not in ("int", int):
                continue
            value = getattr(self, name)
            # no training walk is no dataset (it used to end in a KeyError after writing one)
            positive = name in ("train_states", "walks_per_state", "max_walk_len",
                                "test_max_walk_len", "chunk_size")
            if not isinstance(value, int) or isinstance(value, bool) or value < int(positive):
                raise ConfigError(f"dataset.{name}={value!r}: must be an integer >= {int(positive)}")


# ---- walks (run in worker processes) --------------------------------------------------------
_WORKER: dict = {}


def _init_worker(domain: Domain, sampler: StateSampler, shortest_of: str | None = None) -> None:
    """``shortest_of``: the domain's PDDL text when walks also get their shortest path (the
    planner is made here, in the worker: pymimir objects do not cross processes)."""
    _WORKER["tasks"] = TaskCache(domain)
    _WORKER["sampler"] = sampler
    _WORKER["shortest"] = ShortestPaths(domain, shortest_of) if shortest_of else None


def _walk_chunk(job: tuple[int, str, int, int, int, int, bool, GoalSpec]):
    seed, split, chunk, n_states, walks_per_state, max_len, want_keys, goal_spec = job
    from plansuite.data.explorer import Walk, random_walk

    rng = random.Random(f"{seed}/{split}/{chunk}")
    goal_rng = random.Random(f"{seed}/{split}/{chunk}/goal")  # the walks do not depend on it
    tasks, sampler = _WORKER["tasks"], _WORKER["sampler"]
    traj_lines, ver_lines, short_lines, keys = [], [], [], []
    shortest: ShortestPaths | None = _WORKER["shortest"]
    stats = Counter()
    for _ in range(n_states):
        objects, init = sampler.sample(rng)
        task = tasks.get(objects, init)
        start = task.encode_atoms(init)
        for _ in range(walks_per_state):
            walk = random_walk(task, start, rng, max_len)
            if not walk.actions:
                stats["empty_walks"] += 1
                continue
            goal = draw_goal(task.decode(walk.states[-1]), goal_spec, goal_rng)
            if goal_spec.is_full:  # the paper's: the whole walk, whose end state is the goal
                reached = len(walk)
            else:
                reached = first_reached(walk.states, task.encode(goal)) if goal else None
            if not reached:  # a partial goal that is empty, or holds from the start
                verifier_rows(task, walk, rng, Counter())  # the same draws as a kept walk
                stats["goal_empty_walks" if not goal else "goal_holds_at_start_walks"] += 1
                continue
            if reached < len(walk):  # a partial goal holds before the end: stop there
                rest = Walk(walk.states[reached:], walk.actions[reached:])
                walk = Walk(walk.states[:reached + 1], walk.actions[:reached])
                stats["goal_cut_steps"] += len(rest)
            else:
                rest = None
            states = [task.decode(s) for s in walk.states]
            # Serialised here, in parallel; the parent only prefixes the global trajectory id.
            traj_lines.append(_dumps({"objects": objects, "goal": goal, "states": states,
                                      "actions": [task.actions[a] for a in walk.actions]}))
            ver_lines.append(verifier_rows(task, walk, rng, stats))
            if rest is not None:  # the cut steps' draws, so that the next walk is the same
                verifier_rows(task, rest, rng, Counter())
            if shortest is not None:  # draws nothing from rng: the walks stay the paper's
                short = shortest.shorten(task, walk, stats,
                                         None if goal_spec.is_full else goal)
                short_lines.append(_dumps({"objects": objects, "goal": goal,
                                           "states": [task.decode(s) for s in short.states],
                                           "actions": [task.actions[a] for a in short.actions]}))
            stats["transitions"] += len(walk)
            if want_keys:
                keys.extend(pair_key(s, goal) for s in states[:-1])
    return traj_lines, ver_lines, short_lines, keys, stats


# ---- the whole build ------------------------------------------------------------------------
def build_dataset(spec: DatasetSpec, domain: Domain, domain_text: str, sampler: StateSampler,
                  out_dir: str | Path, seed: int, workers: int = 2, config: dict | None = None,
                  overwrite: bool = False, progress=print,
                  test_sampler: StateSampler | None = None) -> dict:
    """Build the dataset directory atomically; return the manifest. ``test_sampler`` draws the
    test instances' initial states (``dataset.test_states``); ``None``: ``sampler``.

    The files are written to a hidden temp dir next to ``out_dir`` and renamed into place at the
    end, so ``out_dir`` is either the complete dataset or untouched. ``overwrite`` replaces an
    existing dataset (a directory with a manifest.json), never an arbitrary non-empty directory.
    """
    out_dir = Path(out_dir)
    spec.goal.check_domain(list(domain.predicates), domain.name)
    _check_out_dir(out_dir, overwrite)
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    except OSError as exc:
        blocker = next((p for p in out_dir.parents if p.exists()), None)
        why = f"{blocker} is not a directory" if blocker and not blocker.is_dir() else \
            (exc.strerror or str(exc))
        raise ConfigError(f"{out_dir}: cannot write here ({why})") from exc
    try:
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o777 & ~umask)  # mkdtemp makes it private; a dataset is an ordinary folder
        manifest = _build_into(tmp, spec, domain, domain_text, sampler, seed, workers, progress,
                               test_sampler or sampler)
        manifest["config"] = config or {}
        _write_json(tmp / "manifest.json", manifest)
        _publish(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest


def _check_out_dir(out_dir: Path, overwrite: bool) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"{out_dir}: exists and is not a directory")
    if out_dir.is_dir() and any(out_dir.iterdir()):
        if not overwrite:
            raise ConfigError(f"{out_dir}: output directory exists and is not empty "
                              "(choose another out_dir, or pass overwrite=true)")
        if not (out_dir / "manifest.json").is_file():
            raise ConfigError(f"{out_dir}: not a plansuite dataset (no manifest.json); refusing to "
                              "overwrite it")


def _publish(tmp: Path, out_dir: Path) -> None:
    """Rename ``tmp`` to ``out_dir``; an old dataset there is moved aside first, then deleted."""
    old = None
    if out_dir.is_dir() and any(out_dir.iterdir()):
        old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
        os.replace(out_dir, old / "dataset")
    elif out_dir.is_dir():
        out_dir.rmdir()
    os.replace(tmp, out_dir)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _build_into(tmp: Path, spec: DatasetSpec, domain: Domain, domain_text: str,
                sampler: StateSampler, seed: int, workers: int, progress,
                test_sampler: StateSampler) -> dict:
    timings, counts = {}, {}
    noise = {}
    (tmp / "domain.pddl").write_text(domain_text)
    train_keys: set[bytes] = set()
    # forkserver: workers start from a fresh process, not a fork of this one, whose threads (torch,
    # a tokenizer, a server) may hold locks a forked child would wait on forever
    ctx = multiprocessing.get_context("forkserver" if os.name == "posix" else "spawn")
    shortest_of = domain_text if spec.shortest_paths else None
    if shortest_of:  # a domain pymimir refuses fails here, in one line (failing in the workers'
        # initializer, the pool would respawn them forever)
        ShortestPaths(domain, shortest_of)
    with ctx.Pool(max(1, workers), initializer=_init_worker,
                  initargs=(domain, sampler, shortest_of)) as pool:
        for split, n_states in (("train", spec.train_states), ("val", spec.val_states)):
            start = time.perf_counter()
            stats = _write_split(pool, tmp / split, split, n_states, spec, seed,
                                 train_keys if split == "train" else None, progress)
            timings[split] = round(time.perf_counter() - start, 3)
            if split == "train" and not stats["trajectories"] and not spec.goal.is_full:
                raise ConfigError(f"dataset.goal.predicates={spec.goal.predicates}: no training "
                                  f"walk has a goal (empty: {stats['goal_empty_walks']}, true at "
                                  f"the start: {stats['goal_holds_at_start_walks']}); keep other "
                                  "predicates")
            counts[split] = dict(sorted(stats.items()))
            n_neg = stats["random_negatives"]
            noise[split] = round(stats["random_negatives_applicable"] / n_neg, 6) if n_neg else 0.0
    _init_worker(domain, sampler)
    start = time.perf_counter()
    leakage = {}
    used: set[bytes] = set()
    for split, n in (("test", spec.test_instances), ("val_instances", spec.val_instances)):
        leakage[split] = _write_instances(tmp / split, split, n, spec, domain,
                                          test_sampler if split == "test" else sampler, seed,
                                          train_keys, used)
        counts[split] = {"instances": n}
    # Independent recount over what was written (the resampling above must have removed all).
    remaining = sum(pair_key(*key) in train_keys for split in ("test", "val_instances")
                    for key in _instance_pairs(tmp / split))
    timings["instances"] = round(time.perf_counter() - start, 3)
    if spec.shortest_paths:
        instance_keys = {pair_key(*key) for split in ("test", "val_instances")
                         for key in _instance_pairs(tmp / split)}
        for split in ("train", "val"):
            counts[split]["shortest_dropped_for_leakage"] = drop_leaked(
                tmp / split / SHORTEST_FILE, instance_keys)
    progress(f"[data] test/val instances written; leaked (init, goal) pairs resampled: {leakage}")
    return {
        "schema_version": SCHEMA_VERSION,
        "dataset": spec.name,
        "domain": domain.name,
        "seed": seed,
        "counts": counts,
        "label_noise": {"random_negatives_applicable_rate": noise},
        "leakage": {"test_pairs_found_in_train": leakage["test"],
                    "val_instance_pairs_found_in_train": leakage["val_instances"],
                    "after_resampling": remaining},
        "timings_s": timings,
    }


def _write_split(pool, folder: Path, split: str, n_states: int, spec: DatasetSpec, seed: int,
                 keys: set[bytes] | None, progress) -> Counter:
    folder.mkdir(parents=True)
    jobs = []
    for chunk, first in enumerate(range(0, n_states, spec.chunk_size)):
        size = min(spec.chunk_size, n_states - first)
        jobs.append((seed, split, chunk, size, spec.walks_per_state, spec.max_walk_len,
                     keys is not None, spec.goal))
    stats: Counter = Counter()
    traj_id = 0
    start = time.perf_counter()
    with contextlib.ExitStack() as files:
        ft = files.enter_context(open(folder / "trajectories.jsonl", "w"))
        fv = files.enter_context(open(folder / "verifier.jsonl", "w"))
        fs = files.enter_context(open(folder / SHORTEST_FILE, "w")) if spec.shortest_paths else None
        for done, (trajs, vers, shorts, chunk_keys, chunk_stats) in enumerate(
                pool.imap(_walk_chunk, jobs), 1):
            for i, (traj, rows) in enumerate(zip(trajs, vers, strict=True)):  # JSON without id
                ft.write(f'{{"id":{traj_id},{traj[1:]}\n')
                fv.writelines(f'{{"traj":{traj_id},{r[1:]}\n' for r in rows)
                if fs is not None:
                    fs.write(f'{{"id":{traj_id},{shorts[i][1:]}\n')
                traj_id += 1
            stats.update(chunk_stats)
            if keys is not None:
                keys.update(chunk_keys)
            if done % max(1, len(jobs) // 10) == 0 or done == len(jobs):
                left = eta(done, len(jobs), time.perf_counter() - start)
                progress(f"[data] {split}: {done}/{len(jobs)} chunks, {traj_id} trajectories, "
                         f"ETA {format_eta(left)}")
    stats["initial_states"] = n_states
    stats["trajectories"] = traj_id
    return stats


def _write_instances(folder: Path, split: str, n: int, spec: DatasetSpec, domain: Domain,
                     sampler: StateSampler, seed: int, train_keys: set[bytes],
                     used: set[bytes]) -> int:
    """Instances from walks of <= test_max_walk_len steps; goal (``spec.goal``) from the state
    in the walk's second half; a partial goal that already holds at the start is drawn again."""
    from plansuite.data.explorer import random_walk

    folder.mkdir(parents=True)
    rng = random.Random(f"{seed}/{split}")
    goal_rng = random.Random(f"{seed}/{split}/goal")  # the walks do not depend on it
    tasks = _WORKER["tasks"]
    leaked = attempts = 0
    index = []
    for i in range(n):
        while True:
            attempts += 1
            if attempts > 100 * n + 1000:
                why = "" if spec.goal.is_full else ", with a dataset.goal that is false at init,"
                raise ConfigError(f"dataset.{split}: found only {i} of {n} distinct instances{why} "
                                  "whose (init, goal) is not a training prompt; ask for fewer, or "
                                  "give the domain more initial states")
            objects, init = sampler.sample(rng)
            task = tasks.get(objects, init)
            walk = random_walk(task, task.encode_atoms(init), rng, spec.test_max_walk_len)
            if not walk.actions:
                continue
            j = rng.randint(math.ceil(len(walk) / 2), len(walk))
            state = task.decode(walk.states[0])
            goal = draw_goal(task.decode(walk.states[j]), spec.goal, goal_rng)
            if not spec.goal.is_full and (not goal or
                                          first_reached(walk.states[:1], task.encode(goal)) == 0):
                continue  # a partial goal must be something to do
            key = pair_key(state, goal)
            if key in train_keys:
                leaked += 1
                continue
            if key in used:
                continue
            used.add(key)
            break
        goal_atoms = frozenset(_atom(t) for t in goal)
        problem = Problem(f"{spec.name}-{split}-{i:04d}".replace("_", "-"), domain.name, objects,
                          init, goal_atoms)
        (folder / f"p{i:04d}.pddl").write_text(problem_to_pddl(problem, domain))
        index.append({"id": f"p{i:04d}", "objects": len(objects), "walk_len": len(walk),
                      "goal_step": j, "walk_plan": [task.actions[a] for a in walk.actions[:j]],
                      "init": state, "goal": goal})
    with open(folder / "instances.jsonl", "w") as f:
        f.writelines(_dumps(row) + "\n" for row in index)
    return leaked


def write_instances(folder: Path, split: str, n: int, spec: DatasetSpec, domain: Domain,
                    sampler: StateSampler, seed: int, exclude: set[bytes]) -> None:
    """``n`` instances in ``folder``, drawn exactly as the builder draws its test instances but
    from the random stream ``"<seed>/<split>"``, skipping every (init, goal) pair in ``exclude``
    (:func:`pair_key`); the folder has a dataset's ``test/`` layout."""
    _init_worker(domain, sampler)
    _write_instances(folder, split, n, spec, domain, sampler, seed, set(), set(exclude))


def _instance_pairs(folder: Path) -> Iterator[tuple[list[str], list[str]]]:
    for row in iter_jsonl(folder / "instances.jsonl"):
        yield row["init"], row["goal"]


def _atom(text: str) -> Atom:
    return tuple(text[1:-1].split())


def _dumps(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), sort_keys=True)


def _write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


__all__ = ["DatasetSpec", "atom_text", "build_dataset", "write_instances"]
