"""Evaluate a planner on a folder of instances: plan, judge, re-validate, journal, merge.

Output (``out_dir``)::

    results.json     GRR/BTR with 95 % CIs, every outcome's count, calls/tokens, attempts,
                     feedback (none | verifier | environment), the call budget per instance, VAL
                     agreement, plan quality vs Fast Downward, GRR [95 % CI] and n per object
                     count (by_objects) and per number of goal atoms (by_goal_size), wall time,
                     resolved config
    instances.jsonl  one line per instance: id, problem (its PDDL file), outcome, objects (how
                     many the problem has), goal_size (its goal's atoms), first_bad_step,
                     plan, plan_length, optimal_length, attempts, attempt_ends, calls,
                     calls_to_success (generator calls when a successful plan was proposed, else
                     null), events (loop-specific counts), sim_valid, val_valid/val_message,
                     shard, elapsed_s (first request to last; instances overlap in the batched
                     engine), optimal_message (only where Fast Downward refused the problem)
    plans/<id>.plan  every proposed plan in IPC format
    journal/         per-shard journals, run.json, sessions.jsonl (resume and merge state)

Sharding is a rank split of the sorted instance list (instance ``n`` belongs to rank
``n % world``); every shard writes only its journal, and whichever shard finds all instances
journaled writes the merged files. A re-run with the same ``out_dir`` skips journaled instances.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from plansuite.data.load import Instance
from plansuite.errors import ConfigError
from plansuite.jsonl import write_atomic
from plansuite.pddl.model import Domain
from plansuite.pddl.plans import write_plan
from plansuite.pddl.simulator import GroundTask
from plansuite.pddl.val import ValidatorTimeout, validate, validate_binary
from plansuite.planning.engine import run_batched, run_sequential
from plansuite.planning.episode import EpisodeResult, InstanceContext
from plansuite.planning.journal import Journal, lock_shard
from plansuite.planning.loops import PlannerSpec, check_verifier, feedback_source
from plansuite.planning.metrics import summarize
from plansuite.planning.optimal import InstanceRefused, OptimalLengths
from plansuite.planning.outcomes import Outcome, judge_plan, plan_actions
from plansuite.planning.protocols import Generator, Verifier
from plansuite.progress import ProgressReport

ENGINES = ("batched", "sequential")


@dataclass
class EvalSettings:
    planner: PlannerSpec
    seed: int = 0
    engine: str = "batched"  # batched | sequential (one instance and one request at a time)
    batch_size: int = 64
    rank: int = 0
    world: int = 1
    val: bool = True  # re-validate every proposed plan with VAL
    save_traces: bool = False  # keep every generation in instances.jsonl (large)
    val_timeout_s: float = 60.0  # per plan; a timeout is recorded for that instance only
    progress_every_s: float = 10.0

    def __post_init__(self):
        if self.engine not in ENGINES:
            raise ConfigError(f"engine={self.engine}: choose from {', '.join(ENGINES)}")
        if not 0 <= self.rank < self.world:
            raise ConfigError(f"shard.rank={self.rank}: must be in [0, shard.world={self.world})")
        if self.batch_size < 1:
            raise ConfigError("batch_size must be >= 1")


def instance_record(ctx: InstanceContext, result: EpisodeResult, problem: Path,
                    optimal_length: int | None, traces: bool = False) -> dict:
    """The judged, JSON-ready line of ``instances.jsonl`` for one instance."""
    outcome, first_bad = judge_plan(ctx.task, result.plan)
    actions = plan_actions(result.plan) if result.plan is not None else None
    record = {
        "id": ctx.id, "problem": str(problem), "outcome": outcome.value,
        "objects": len(ctx.task.problem.objects), "goal_size": len(ctx.goal) + len(ctx.goal_neg),
        "first_bad_step": first_bad, "plan": actions,
        "plan_length": None if actions is None else len(actions),
        "optimal_length": optimal_length,
        "attempts": len(result.attempts), "proposed_attempt": result.proposed_attempt,
        "attempt_ends": [a.end.value for a in result.attempts],
        "calls": {"generator": result.generator_calls, "verifier": result.verifier_calls,
                  "tokens": result.tokens},
        # every loop stops at its proposal, so its calls so far are what success cost
        "calls_to_success": result.generator_calls if outcome is Outcome.SUCCESS else None,
        "events": result.events,
        "sim_valid": None if actions is None else ctx.task.check_plan(actions).valid,
        "val_valid": None, "val_message": None,
    }
    if traces:
        record["trace"] = [[s.trace() for s in a.steps] for a in result.attempts]
    return record


class Progress:
    """Done/total, outcomes so far, BTR, throughput and an ETA: a bar on a terminal, else a
    line every ``every_s`` seconds (:class:`plansuite.progress.ProgressReport`)."""

    def __init__(self, label: str, total: int, every_s: float, log: Callable[[str], None],
                 on_update: Callable[[dict], None] | None = None):
        self.on_update = on_update  # e.g. a W&B run's log: the running rates after each instance
        self.report = ProgressReport(f"[eval] {label}", total, every_s, log, unit="instance")
        self.start = time.perf_counter()
        self.done, self.attempts, self.outcomes = 0, 0, Counter()

    def update(self, record: dict) -> None:
        self.done += 1
        self.attempts += record["attempts"]
        self.outcomes[record["outcome"]] += 1
        success = self.outcomes["success"]
        bad = sum(c for o, c in self.outcomes.items() if Outcome(o).bad_transition)
        if self.on_update is not None:
            self.on_update({"progress/done": self.done, "progress/total": self.report.total,
                            "progress/grr": success / self.done, "progress/btr": bad / self.done})
        secs = max(time.perf_counter() - self.start, 1e-9)
        self.report.update(1, success=f"{success} ({success / self.done:.2f})",
                           btr=f"{bad / self.done:.2f}", attempts=f"{self.attempts / secs:.1f}/s")


def evaluate(instances: Sequence[Instance], domain: Domain, domain_file: str | Path,
             generator: Generator, verifier: Verifier | None, settings: EvalSettings,
             out_dir: str | Path, fingerprint: dict | None = None, config: dict | None = None,
             optimal: OptimalLengths | None = None,
             log: Callable[[str], None] = print,
             on_progress: Callable[[dict], None] | None = None) -> dict | None:
    """Run this shard's unfinished instances; return the merged results once all are done.
    ``on_progress`` gets the running counts and rates of this session after every instance."""
    spec = settings.planner
    check_verifier(spec, verifier)
    ids = [inst.id for inst in instances]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ConfigError(f"instance id '{dup}' appears twice; instance ids must be unique")
    if settings.val:
        validate_binary()  # a missing VAL is an error now, not after hours of planning
    out = Path(out_dir)
    (out / "plans").mkdir(parents=True, exist_ok=True)
    lock = lock_shard(out, settings.rank, settings.world)  # before the journal repairs "torn" lines of a live run
    journal = Journal(out, settings.rank)
    journal.check_run({"planner": asdict(spec), "seed": settings.seed, "instances": ids,
                       **(fingerprint or {})})
    done = journal.records()
    mine = [inst for n, inst in enumerate(instances)
            if n % settings.world == settings.rank and inst.id not in done]
    log(f"[eval] {spec.name}: {len(instances)} instances; shard {settings.rank}/{settings.world} "
        f"has {len(mine)} to plan ({sum(i in done for i in ids)} already journaled)")
    session_start = time.perf_counter()

    lengths: dict[str, int | None] = {}
    refused: dict[str, str] = {}  # id -> why FD refused it: recorded with the instance, still planned
    if optimal is not None and mine:
        for inst in mine:
            try:
                lengths[inst.id] = optimal.get(inst.path)
            except InstanceRefused as exc:
                refused[inst.id] = exc.message
                log(f"[eval] {inst.id}: no optimal length: {exc}")
        log(f"[eval] Fast Downward optimal lengths for {len(mine)} instances in "
            f"{time.perf_counter() - session_start:.1f}s")

    by_id = {inst.id: inst for inst in mine}
    progress = Progress(f"{spec.name} shard {settings.rank}", len(mine), settings.progress_every_s, log,
                        on_progress)

    def finish(ctx: InstanceContext, result: EpisodeResult, elapsed_s: float) -> None:
        inst = by_id[ctx.id]
        record = instance_record(ctx, result, inst.path, lengths.get(ctx.id), settings.save_traces)
        record.update(shard=settings.rank, elapsed_s=round(elapsed_s, 4))
        if ctx.id in refused:
            record["optimal_message"] = refused[ctx.id]
        if record["plan"] is not None:
            write_plan(record["plan"], out / "plans" / f"{ctx.id}.plan")
            unknown = [a for a in record["plan"] if ctx.task.action_id(a) is None]
            if unknown:  # VAL rejects unknown operators as bad input; the simulator has judged
                record["val_message"] = f"not checked by VAL: unknown action {unknown[0]}"
            elif settings.val:
                try:
                    verdict = validate(domain_file, inst.path, record["plan"],
                                       timeout=settings.val_timeout_s)
                except ValidatorTimeout as exc:  # this instance only: recorded, the run goes on
                    record["val_message"] = f"not checked by VAL: {exc}"
                    log(f"[eval] {ctx.id}: {exc}")
                else:
                    record["val_valid"] = verdict.valid
                    record["val_message"] = None if verdict.valid else verdict.message
        journal.append(record)
        progress.update(record)

    contexts = (InstanceContext.of(inst.id, GroundTask(domain, inst.problem), settings.seed)
                for inst in mine)
    engine_start = time.perf_counter()
    if settings.engine == "batched":
        run_batched(contexts, spec, generator, verifier, finish, settings.batch_size)
    else:
        run_sequential(contexts, spec, generator, verifier, finish)
    now = time.perf_counter()
    if mine:
        journal.log_session({"rank": settings.rank, "world": settings.world, "instances": len(mine),
                             "attempts": progress.attempts, "engine": settings.engine,
                             "engine_s": round(now - engine_start, 3),
                             "wall_s": round(now - session_start, 3),
                             "finished": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    lock.close()
    return merge(out, ids, spec, config, log)


def merge(out_dir: Path, ids: Sequence[str], spec: PlannerSpec, config: dict | None,
          log: Callable[[str], None] = print) -> dict | None:
    """Write ``instances.jsonl`` and ``results.json`` if every instance is journaled."""
    journal = Journal(out_dir)
    records = journal.records()
    missing = [i for i in ids if i not in records]
    if missing:
        log(f"[eval] {len(ids) - len(missing)}/{len(ids)} instances journaled; the merged results "
            "are written when the other shards finish")
        return None
    ordered = [records[i] for i in ids]
    write_atomic(out_dir / "instances.jsonl",
                 "".join(json.dumps(r, sort_keys=True) + "\n" for r in ordered))
    sessions = journal.sessions()
    engine_s = sum(s["engine_s"] for s in sessions)
    run = json.loads((journal.dir / "run.json").read_text())
    run.pop("instances", None)
    results = {"planner": spec.name, "loop": spec.loop, "k": spec.k,
               "feedback": feedback_source(spec), "budget": spec.call_budget, **summarize(ordered),
               "run": run,  # what decided the outcomes: planner, seed, generator, verifier, ...
               "wall_s": round(sum(s["wall_s"] for s in sessions), 3),
               "engine_s": round(engine_s, 3),
               "attempts_per_s": round(sum(s["attempts"] for s in sessions) / engine_s, 2)
               if engine_s else None,
               "sessions": len(sessions), "config": config or {}}
    refused = {r["id"]: r["optimal_message"] for r in ordered if r.get("optimal_message")}
    if refused:  # planned and judged by the suite, but without an optimal length
        results["optimal_refused"] = refused
    write_results(out_dir, results)
    if results["val"]["disagree_ids"]:
        log(f"[eval] WARNING: VAL and the simulator disagree on {results['val']['disagree_ids']}")
    return results


def write_results(out_dir: Path, results: dict) -> None:
    write_atomic(Path(out_dir) / "results.json", json.dumps(results, indent=2) + "\n")
