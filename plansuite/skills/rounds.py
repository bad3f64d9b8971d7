"""Skill-discovery rounds (AdaPlanner's filter, expert iteration), resumable after a kill.

Round 0 evaluates the given generator on the validation and test instances. Round r then:

1. **Rollout**: the planner with the generator in use plans the round's training-distribution
   instances (:mod:`plansuite.skills.instances`; planner seed ``rollout_seed + r``).
2. **Skills**: every successful plan is replayed by the simulator (and VAL) from the true
   initial state (:func:`plansuite.skills.archive.skills_from_records`); the verified plans not
   in the archive yet are the round's *batch* (``rNN/batch.jsonl``).
3. **Candidate**: a generator finetuned from the one in use (``finetune.start_from``) on the
   transitions of archive + batch, mixed with the dataset's training transitions
   (``rNN/finetune.jsonl``, ``rNN/candidate/``).
4. **Filter**: candidate and generator in use plan the validation instances with the same seed;
   :func:`plansuite.skills.archive.keep_batch` accepts the batch only if validation GRR rises.
   Accepted: the batch joins the archive (``skills.jsonl``) and the candidate becomes the
   generator in use. Rejected: both are discarded. An empty batch is rejected without training.
5. **Test**: the generator in use after the round plans the test instances. The test set is
   only ever evaluated; nothing planned there is archived or trained on.

Output (``out_dir``)::

    run.json        what decides the results (a resume with other settings is refused)
    rounds.jsonl    one line per finished round (schema: :func:`round_record`)
    rounds.md       the per-round table (:func:`plansuite.report.tables.rounds_table`)
    skills.jsonl    the archive of accepted skills
    initial/{val,test}/                  evaluations of the given generator
    rNN/instances/ rNN/rollout/ rNN/batch.jsonl rNN/finetune.jsonl rNN/candidate/
    rNN/{val,test}/                      evaluations of round NN's candidate

Every step is resumable: evaluations journal per instance, finetuning resumes from its last
checkpoint, files are written atomically, and a round whose line is in ``rounds.jsonl`` is
skipped. Evaluations of a generator live in its own folder, so the generator in use is never
re-evaluated: its validation run from the round that accepted it is reused.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from plansuite.data.load import Instance
from plansuite.errors import ConfigError
from plansuite.jsonl import append_lines, complete_lines, write_atomic
from plansuite.pddl.model import Domain
from plansuite.planning.evaluate import EvalSettings, evaluate
from plansuite.planning.loops import PlannerSpec
from plansuite.planning.protocols import Verifier
from plansuite.report.tables import rounds_table
from plansuite.skills.archive import (
    SkillArchive,
    keep_batch,
    skills_from_records,
    solved_items,
)
from plansuite.skills.finetune import Finetuner

INITIAL = "initial"


@dataclass
class RoundSettings:
    rounds: int = 3
    seed: int = 0  # planner seed on the validation and test instances (same for every generator)
    rollout_seed: int = 1000  # round r's rollouts use rollout_seed + r
    rollout_k: int | None = None  # attempts per rollout instance (None: the planner's k)
    min_gain: int = 1  # validation items the candidate must solve beyond the generator in use
    require_significant: bool = False  # ... and the paired 95 % interval must exclude 0
    start_from: str = "current"  # finetune from the generator in use, or always the initial one
    batch_size: int = 64  # live instances per generator call (the batched engine)
    val: bool = True  # re-validate every proposed plan with VAL
    progress_every_s: float = 30.0

    def __post_init__(self) -> None:
        if self.rounds < 0:
            raise ConfigError(f"rounds={self.rounds}: must be >= 0")
        if self.rollout_k is not None and self.rollout_k < 1:
            raise ConfigError(f"rollout.k={self.rollout_k}: must be >= 1")
        if self.start_from not in ("current", "initial"):
            raise ConfigError(f"finetune.start_from={self.start_from}: choose current or initial")
        if self.min_gain < 1:
            raise ConfigError(f"filter.min_gain={self.min_gain}: must be >= 1 (a batch must raise GRR)")


@dataclass
class Evaluation:
    """One generator's results on one instance set (a summary of ``results.json``)."""

    grr: float
    grr_ci: list[float]
    solved: int
    n: int
    items: dict  # (seed, instance id) -> success

    @classmethod
    def of(cls, results: dict, records: list[dict], seed: int) -> Evaluation:
        return cls(results["grr"], list(results["grr_ci"]), results["outcomes"]["success"],
                   results["n_instances"], solved_items(records, seed))

    def summary(self) -> dict:
        return {"grr": self.grr, "grr_ci": self.grr_ci, "solved": self.solved, "n": self.n}


def read_rounds(path: Path) -> list[dict]:
    """The finished rounds; a torn last line (a kill mid-write) is ignored."""
    return [json.loads(line) for line in complete_lines(path)]


def first_difference(a: dict, b: dict, prefix: str = "") -> tuple[str, object, object]:
    """(dotted key, value in a, value in b) of the first difference between two dicts.

    >>> first_difference({"planner": {"k": 1, "max_steps": 20}}, {"planner": {"k": 1, "max_steps": 40}})
    ('planner.max_steps', 20, 40)
    """
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        if x != y:
            if isinstance(x, dict) and isinstance(y, dict):
                return first_difference(x, y, f"{prefix}{key}.")
            return f"{prefix}{key}", x, y
    return prefix.rstrip("."), a, b





class SkillDiscovery:
    """The rounds of the module docstring over a finetuner (exports, or test doubles).

    ``rollout_instances(round) -> [Instance]`` gives each round's training-distribution
    instances; ``held_out`` are the folders nothing may be learned from.
    """

    def __init__(self, out_dir: str | Path, domain: Domain, domain_file: str | Path,
                 initial: str, finetuner: Finetuner, planner: PlannerSpec,
                 verifier: Verifier | None, rollout_instances: Callable[[int], list[Instance]],
                 val_instances: list[Instance], test_instances: list[Instance],
                 held_out: Sequence[Path], settings: RoundSettings,
                 fingerprint: dict | None = None, log: Callable[[str], None] = print):
        self.out = Path(out_dir)
        self.domain, self.domain_file, self.initial = domain, domain_file, initial
        self.finetuner, self.planner, self.verifier = finetuner, planner, verifier
        self.rollout_instances, self.val_set, self.test_set = rollout_instances, val_instances, test_instances
        self.held_out, self.settings, self.log = list(held_out), settings, log
        self.fingerprint = {"initial": initial, "planner": asdict(planner),
                            "settings": {k: v for k, v in asdict(settings).items()
                                         if k not in ("rounds", "progress_every_s", "batch_size")},
                            "val": [i.id for i in val_instances],
                            "test": [i.id for i in test_instances], **(fingerprint or {})}
        self._loaded: dict[str, object] = {}

    # -- plumbing --------------------------------------------------------------------------
    def _check_run(self) -> None:
        path = self.out / "run.json"
        mine = json.loads(json.dumps(self.fingerprint, sort_keys=True, default=str))
        if path.is_file():
            theirs = json.loads(path.read_text())
            if theirs != mine:
                key, before, now = first_difference(theirs, mine)
                raise ConfigError(f"{self.out}: has rounds made with another {key} ({before!r}, "
                                  f"now {now!r}); use another out_dir, or the same settings "
                                  "to resume")
        else:
            self.out.mkdir(parents=True, exist_ok=True)
            write_atomic(path, json.dumps(mine, indent=2, sort_keys=True) + "\n")

    def _generator(self, name: str):
        """Loaded once and kept while used: the generator in use and the latest candidate."""
        model = self._loaded.pop(name, None) or self.finetuner.generator(name)
        self._loaded[name] = model  # most recently used last
        while len(self._loaded) > 2:
            self._loaded.pop(next(iter(self._loaded)))
        return model

    def _evaluate(self, name: str, instances: list[Instance], out: Path, seed: int,
                  planner: PlannerSpec | None = None) -> tuple[dict, list[dict]]:
        spec = planner or self.planner
        settings = EvalSettings(spec, seed=seed, batch_size=self.settings.batch_size,
                                val=self.settings.val,
                                progress_every_s=self.settings.progress_every_s)
        results = evaluate(instances, self.domain, self.domain_file, self._generator(name),
                           self.verifier, settings, out, fingerprint={"generator": name},
                           log=self.log)
        if results is None:  # cannot happen with one shard
            raise ConfigError(f"{out}: evaluation did not finish")
        records = [json.loads(x) for x in (out / "instances.jsonl").read_text().splitlines()]
        return results, records

    def _score(self, name: str, home: Path, split: str) -> Evaluation:
        instances = self.val_set if split == "val" else self.test_set
        results, records = self._evaluate(name, instances, home / split, self.settings.seed)
        return Evaluation.of(results, records, self.settings.seed)

    # -- the rounds ------------------------------------------------------------------------
    def run(self) -> list[dict]:
        self._generator(self.initial)  # a bad export fails now, before anything is written
        self._check_run()
        rounds_file = self.out / "rounds.jsonl"
        done = {r["round"]: r for r in read_rounds(rounds_file)}
        if 0 not in done:
            start = time.perf_counter()
            self.log(f"[skills] round 0: the given generator on {len(self.val_set)} validation "
                     f"and {len(self.test_set)} test instances")
            val = self._score(self.initial, self.out / INITIAL, "val")
            test = self._score(self.initial, self.out / INITIAL, "test")
            done[0] = {"round": 0, "generator": self.initial, "home": str(self.out / INITIAL),
                       "archive": 0, "accepted": None, "val": {"current": val.summary()},
                       "test": test.summary(), "wall_s": round(time.perf_counter() - start, 2)}
            append_lines(rounds_file, [json.dumps(done[0], sort_keys=True)])
        for r in range(1, self.settings.rounds + 1):
            if r in done:
                self.log(f"[skills] round {r}: already done ({'accepted' if done[r]['accepted'] else 'rejected'})")
                continue
            previous = done[max(done)]
            done[r] = self.round(r, previous["generator"], Path(previous["home"]))
            append_lines(rounds_file, [json.dumps(done[r], sort_keys=True)])
            write_atomic(self.out / "rounds.md", rounds_table([done[i] for i in sorted(done)]))
        rows = [done[i] for i in sorted(done) if i <= self.settings.rounds]
        write_atomic(self.out / "rounds.md", rounds_table(rows))
        return rows

    def round(self, r: int, current: str, home: Path) -> dict:
        start = time.perf_counter()
        timings: dict[str, float] = {}
        rdir = self.out / f"r{r:02d}"
        archive = SkillArchive(self.out / "skills.jsonl")

        # 1. rollouts on training-distribution instances
        t = time.perf_counter()
        instances = self.rollout_instances(r)
        spec = replace(self.planner, k=self.settings.rollout_k or self.planner.k)
        self.log(f"[skills] round {r}: rollouts on {len(instances)} training-distribution "
                 f"instances ({spec.name}, k={spec.k})")
        _, rollout = self._evaluate(current, instances, rdir / "rollout",
                                    self.settings.rollout_seed + r, spec)
        timings["rollout_s"] = round(time.perf_counter() - t, 2)

        # 2. verified, new plans: the batch (fixed once written, so a resume sees the same)
        skills, dropped = skills_from_records(rollout, self.domain, forbidden=self.held_out,
                                              source={"round": r, "planner": spec.name,
                                                      "seed": self.settings.rollout_seed + r})
        batch_file = rdir / "batch.jsonl"
        if not batch_file.is_file():
            write_atomic(batch_file, "".join(s.to_json() + "\n" for s in archive.new(skills)))
        batch = list(SkillArchive(batch_file))
        archive_before = len(archive) - sum(s in archive for s in batch)  # (a resume may have added it)
        row = {"round": r, "archive_before": archive_before, "batch": len(batch),
               "rollout": {"instances": len(instances),
                           "successes": sum(x["outcome"] == "success" for x in rollout),
                           "verified": len(skills), "dropped": len(dropped)}}
        current_val = self._score(current, home, "val")
        if not batch:
            decision, candidate = None, None
            row.update(accepted=False, reason="rejected: no new verified skills",
                       val={"current": current_val.summary(), "candidate": None})
        else:
            # 3. the candidate: finetuned on archive + batch (transitions along the true states)
            t = time.perf_counter()
            transitions = rdir / "finetune.jsonl"
            pairs = [p for s in [*archive, *archive.new(batch)] for p in s.transitions()]
            write_atomic(transitions, "".join(json.dumps({"prompt": p, "completion": c}) + "\n"
                                              for p, c in pairs))
            base = current if self.settings.start_from == "current" else self.initial
            self.log(f"[skills] round {r}: finetuning a candidate from {base} on {len(pairs)} "
                     f"transitions of {len(archive) + len(archive.new(batch))} skills")
            candidate = self.finetuner.finetune(base, transitions, rdir / "candidate",
                                              self.settings.seed + r)
            timings["finetune_s"] = round(time.perf_counter() - t, 2)

            # 4. the filter: same validation items, same seed
            t = time.perf_counter()
            cand_val = self._score(candidate, rdir, "val")
            timings["val_s"] = round(time.perf_counter() - t, 2)
            decision = keep_batch(current_val.items, cand_val.items, self.settings.min_gain,
                                  self.settings.require_significant)
            row.update(accepted=decision.accepted, reason=decision.reason,
                       finetune_transitions=len(pairs),
                       val={"current": current_val.summary(), "candidate": cand_val.summary(),
                            "delta": round((decision.candidate - decision.baseline) / decision.n, 4),
                            "delta_ci": list(decision.delta_ci)})
            if decision.accepted:
                archive.add(batch)
                current, home = candidate, rdir
        self.log(f"[skills] round {r}: {row['reason']}")

        # 5. test GRR of the generator in use after the round (evaluated only)
        t = time.perf_counter()
        test = self._score(current, home, "test")
        timings["test_s"] = round(time.perf_counter() - t, 2)
        row.update(generator=current, home=str(home), candidate=candidate, archive=len(archive),
                   test=test.summary(), timings=timings,
                   wall_s=round(time.perf_counter() - start, 2))
        self.log(f"[skills] round {r}: archive {len(archive)}, test GRR {test.grr:.3f} "
                 f"[{test.grr_ci[0]:.3f}, {test.grr_ci[1]:.3f}] ({row['wall_s']:.0f}s)")
        return row
