"""The generation/repair experiment over a dataset split, then its offline scoring.

Run directory::

    attempts.jsonl   one line per attempt: item, style, attempt, text, feedback, check flags,
                     diagnostics, plan, seconds, stop (null until the item's last attempt)
    scores.jsonl     the flags plus structural/semantic equivalence with the reference
    metrics.json     per-round rates, overall and per description style
    metrics.md       the same as tables

The log is appended and flushed after every attempt. A killed run resumes where it stopped:
items whose last logged attempt has no stop reason are dropped and redone. ``run.json`` holds the
settings the attempts were made with; a resume under other settings is refused (it would mix two
experiments in one table), unless told to start over, which moves the old files aside.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from plansuite.errors import ConfigError
from plansuite.jsonl import iter_jsonl, write_atomic
from plansuite.nl2pddl.data.dataset import Pair
from plansuite.nl2pddl.decoding.generators import ProblemGenerator
from plansuite.nl2pddl.judging.problem_checks import OperationalChecker
from plansuite.nl2pddl.loop.generate import GENERATE_LOG, attempt_records
from plansuite.nl2pddl.loop.repair import repair
from plansuite.nl2pddl.loop.round_metrics import gap_table, round_metrics, score_attempt
from plansuite.pddl.model import Domain
from plansuite.pddl.parse import parse_problem
from plansuite.progress import eta, format_eta
from plansuite.settings import flatten, settings_changes

ATTEMPTS, SCORES, METRICS_JSON, METRICS_MD = "attempts.jsonl", "scores.jsonl", "metrics.json", "metrics.md"
RUN_JSON = "run.json"
# Settings that do not decide an item's attempts: how many items (a resume may extend a run),
# where the run lives, what the other tasks read, and how patiently or where a model is asked.
# task=generate: the descriptions file may grow (ids already done are skipped).
RESUME_FREE = ("limit", "out_dir", "overwrite", "task", "runs", "rounds", "dataset", "descriptions", "backend.timeout_s",
               "backend.retries", "backend.api_key_env", "backend.device", "critic.device", "critic.batch_size")


def finished_records(log: Path) -> list[dict]:
    """Attempts of the items that reached a stop rule (partial items are left out)."""
    if not log.is_file():
        return []
    rows = list(iter_jsonl(log))
    done = {r["item"] for r in rows if r.get("stop")}
    return [r for r in rows if r["item"] in done]


def start_run(out_dir: str | Path, settings: dict, overwrite: bool = False,
              progress: Callable[[str], None] = print, log_name: str = ATTEMPTS) -> None:
    """Record ``settings`` in ``out_dir/run.json`` before any attempt. Attempts already there (in
    ``log_name``) made under other settings refuse the resume (one line naming the changed keys);
    ``overwrite`` moves the earlier run's files to ``out_dir/old-<time>/`` and starts afresh (no
    work deleted)."""
    out_dir = Path(out_dir)
    log, record = out_dir / log_name, out_dir / RUN_JSON
    if log.is_file() and log.stat().st_size:
        if overwrite:
            aside = out_dir / f"old-{time.strftime('%Y%m%d-%H%M%S')}"
            aside.mkdir()
            for name in (log_name, SCORES, METRICS_JSON, METRICS_MD, RUN_JSON):
                if (out_dir / name).is_file():
                    (out_dir / name).replace(aside / name)
            progress(f"[nl2pddl] overwrite=true: the earlier run moved to {aside}")
        elif record.is_file():
            def kept(cfg: dict) -> dict:
                return {k: v for k, v in flatten(cfg).items()
                        if not any(k == f or k.startswith(f + ".") for f in RESUME_FREE)}

            what = settings_changes(kept(json.loads(record.read_text())), kept(settings))
            if what:
                raise ConfigError(f"{out_dir}: cannot resume: its attempts were made with other settings "
                                  f"({what}); restore them, choose another out_dir, or start over "
                                  "with overwrite=true")
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(record, json.dumps(settings, indent=2) + "\n")


def run_repair(pairs: list[Pair], generator: ProblemGenerator, checker: OperationalChecker,
               out_dir: str | Path, max_attempts: int, progress: Callable[[str], None] = print,
               check_rewrites: bool = False, rewrite_order: str = "critic") -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    log = out_dir / ATTEMPTS
    kept = finished_records(log)
    log.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in kept))  # drop partial items
    done = {r["item"] for r in kept}
    todo = [p for p in pairs if p.id not in done]
    if done:
        progress(f"[nl2pddl] resuming: {len(done)} items already done, {len(todo)} to go")
    start = time.perf_counter()
    with open(log, "a") as f:
        for i, pair in enumerate(todo, start=1):
            def write(attempt, stop, pair=pair):
                f.write(json.dumps({"item": pair.id, "style": pair.style, **attempt.as_dict(),
                                    "stop": stop}, sort_keys=True) + "\n")
                f.flush()

            result = repair(pair.description, generator, checker, max_attempts, write, check_rewrites,
                            rewrite_order)
            elapsed = time.perf_counter() - start
            progress(f"[nl2pddl] {i}/{len(todo)} {pair.id}: {len(result.attempts)} attempt(s), "
                     f"stop={result.stop} ({elapsed:.0f}s, ETA "
                     f"{format_eta(eta(i, len(todo), elapsed))})")
    return log


def logged_attempts(out_dir: Path) -> list[dict]:
    """The finished attempts of a run: ``task=repair``'s log, else ``task=generate``'s."""
    if not (out_dir / ATTEMPTS).is_file() and (out_dir / GENERATE_LOG).is_file():
        return attempt_records(out_dir / GENERATE_LOG)
    return finished_records(out_dir / ATTEMPTS)


def score_run(out_dir: str | Path, pairs: list[Pair], domain: Domain) -> dict:
    """Offline equivalence of every logged attempt (a ``task=repair`` or ``task=generate`` run);
    writes scores and metrics files."""
    out_dir = Path(out_dir)
    records = logged_attempts(out_dir)
    if not records:
        raise ConfigError(f"{out_dir / ATTEMPTS}: no finished items to score (run task=repair or "
                          "task=generate first)")
    by_id = {p.id: p for p in pairs}
    missing = sorted({r["item"] for r in records} - set(by_id))
    if missing:
        raise ConfigError(f"{out_dir}: item {missing[0]} is not among the references "
                          "(scoring against a different data_dir, split or references file?)")
    references = {}
    scores = []
    for r in records:
        if r["item"] not in references:
            references[r["item"]] = parse_problem(by_id[r["item"]].problem, domain, source=r["item"])
        scores.append({**score_attempt(r, references[r["item"]], domain),
                       "style": r.get("style") or by_id[r["item"]].style})
    with open(out_dir / SCORES, "w") as f:
        f.writelines(json.dumps(s, sort_keys=True) + "\n" for s in scores)
    rounds = max(s["attempt"] for s in scores)
    metrics = {"overall": round_metrics(scores, rounds), "by_style": {
        style: round_metrics([s for s in scores if s["style"] == style], rounds)
        for style in sorted({s["style"] for s in scores})}}
    stops: dict[str, int] = {}
    for r in records:
        if r.get("stop"):
            stops[r["stop"]] = stops.get(r["stop"], 0) + 1
    metrics["stops"] = dict(sorted(stops.items()))
    (out_dir / METRICS_JSON).write_text(json.dumps(metrics, indent=2) + "\n")
    parts = ["## All descriptions\n", gap_table(metrics["overall"])]
    for style, rows in metrics["by_style"].items():
        parts += [f"\n## {style} descriptions\n", gap_table(rows)]
    parts.append(f"\nStop reasons: {metrics['stops']}\n")
    (out_dir / METRICS_MD).write_text("".join(parts))
    return metrics
