"""Multi-stage pipelines, run by ``plansuite-pipeline NAME [KEY=VALUE ...] [--dry-run]``
(:mod:`plansuite.cli.run_pipeline`).

``make demo``, ``make smoke`` and ``make reproduce`` are pipelines: ``conf/pipeline/NAME.yaml``
lists stages, each one run of a plansuite CLI (``module``) with Hydra overrides (``args``),
writing into ``<root>/<stage name>``. Command-line ``KEY=VALUE`` overrides the pipeline file
(``root=DIR``, ``seed=1``, ``k=8``...), as OmegaConf dot-lists; ``base: NAME`` in a pipeline
file makes it a variant of another (``smoke`` is ``demo`` at toy scale).

Caching by config: a finished stage leaves ``stage.json`` holding its fingerprint, the hash of
its command and of the fingerprints of the stages it reads (``after``). A re-run skips a stage
whose fingerprint matches; re-runs a stage that was killed (its CLI resumes: training from
``checkpoints/last.ckpt``, evaluation from its journal); and moves a stage whose config changed
to ``<dir>.stale-<old fingerprint>`` before running it afresh, so no work is ever deleted.
Stages that depend on a re-run stage change fingerprint too, and re-run. A started stage leaves
``<dir>.started`` (its fingerprint) beside its folder until it finishes, so a killed stage is
resumed only under the same fingerprint: killed, then its upstream re-run, it is stale and starts
afresh instead of resuming work made from the old upstream.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from omegaconf import OmegaConf

from plansuite import CONF_DIR
from plansuite.errors import ConfigError, PlansuiteError
from plansuite.report.collect import STALE
from plansuite.report.paper import ablation_table
from plansuite.report.tables import compare, markdown

PIPELINE_DIR = Path(CONF_DIR) / "pipeline"
STAGE_FILE = "stage.json"
STARTED_SUFFIX = ".started"  # <stage folder>.started: the fingerprint of a run not yet finished


def override_value(value) -> str:
    """A setting as a Hydra override value, for ``${plansuite.override:${setting}}`` inside a stage argument
    (a plain ``${setting}`` inside a string renders null as ``None``, which Hydra reads as text).

    >>> override_value(None), override_value(8000), override_value(True)
    ('null', '8000', 'true')
    """
    if value is None:
        return "null"
    return str(value).lower() if isinstance(value, bool) else str(value)


OmegaConf.register_new_resolver("plansuite.override", override_value, replace=True)


def choose(flag: bool, if_true, if_false):
    """``${plansuite.if:${flag},A,B}``: A when the pipeline setting ``flag`` is true, else B.

    >>> choose(True, "generator-dagger", "generator"), choose(False, "a", "b")
    ('generator-dagger', 'b')
    """
    if not isinstance(flag, bool):
        raise ValueError(f"plansuite.if: {flag!r} is not true or false")
    return if_true if flag else if_false


OmegaConf.register_new_resolver("plansuite.if", choose, replace=True)


@dataclass(frozen=True)
class Stage:
    name: str  # also its folder under root, e.g. "eval/generator"
    module: str  # e.g. plansuite.cli.train
    args: list[str]
    after: list[str] = field(default_factory=list)
    out_arg: str = "out_dir={dir}"  # how the stage's folder is passed to the CLI
    alone: bool = False  # run with no other stage beside it, on every thread (training)
    enabled: bool = True  # false: left out (a variant's switch); no enabled stage may run after it


def load_pipeline(name_or_path: str, overrides: list[str]) -> tuple[dict, list[Stage]]:
    """The pipeline's settings and its stages, interpolations resolved."""
    path = Path(name_or_path)
    if not path.suffix:
        path = PIPELINE_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in PIPELINE_DIR.glob("*.yaml")))
        raise ConfigError(f"{path}: no such pipeline (known: {known})")
    try:
        cfg = OmegaConf.load(path)
        if "base" in cfg:  # a variant of another pipeline: its settings over the base's
            cfg = OmegaConf.merge(OmegaConf.load(PIPELINE_DIR / f"{cfg.pop('base')}.yaml"), cfg)
        cfg = OmegaConf.merge(cfg, OmegaConf.from_dotlist(overrides))
        settings = OmegaConf.to_container(cfg, resolve=True)
    except Exception as exc:  # bad YAML, bad override, unresolvable interpolation
        raise ConfigError(f"{path}: {type(exc).__name__}: {str(exc).splitlines()[0]}") from exc
    stages, seen, disabled = [], set(), set()
    for raw in settings.pop("stages", []):
        unknown = set(raw) - set(Stage.__dataclass_fields__)
        if unknown or not {"name", "module"} <= set(raw):
            raise ConfigError(f"{path}: stage {raw.get('name', '?')}: needs name and module"
                              + (f"; unknown key {sorted(unknown)[0]}" if unknown else ""))
        stage = Stage(**{**raw, "args": _flat(raw.get("args", []))})
        if not isinstance(stage.enabled, bool):
            raise ConfigError(f"{path}: stage {stage.name}: enabled={stage.enabled!r} must be "
                              "true or false")
        if not stage.enabled:
            disabled.add(stage.name)
            continue
        off = [d for d in stage.after if d in disabled]
        if off:
            raise ConfigError(f"{path}: stage {stage.name} runs after stage {off[0]}, which is "
                              "disabled (enabled: false)")
        missing = [d for d in stage.after if d not in seen]
        if missing:
            raise ConfigError(f"{path}: stage {stage.name} runs after unknown or later stage {missing[0]}")
        seen.add(stage.name)
        stages.append(stage)
    if not stages:
        raise ConfigError(f"{path}: no stages")
    return settings, stages


def _flat(args: list) -> list[str]:
    """Arguments with shared lists spliced in, at any depth (``args: [${eval_common},
    planner=generator]``, where ``eval_common`` may itself hold a list such as ``${eval_domain}``).

    >>> _flat([["a=1", ["b=2", []]], "c=3", 4])
    ['a=1', 'b=2', 'c=3', '4']
    """
    return [y for x in args for y in (_flat(x) if isinstance(x, list) else [str(x)])]


def command(stage: Stage, root: Path) -> list[str]:
    """The stage's command line (the interpreter running this pipeline runs the CLI).

    >>> command(Stage("gen", "plansuite.cli.train", ["model=generator"]), Path("out"))[1:]
    ['-m', 'plansuite.cli.train', 'model=generator', 'out_dir=out/gen']
    """
    out = [stage.out_arg.format(dir=root / stage.name)] if stage.out_arg else []
    return [sys.executable, "-m", stage.module, *stage.args, *out]


def fingerprint(stage: Stage, root: Path, upstream: dict[str, str]) -> str:
    """Hash of what the stage does and of what it reads (not of the interpreter's path)."""
    what = {"module": stage.module, "args": command(stage, root)[3:],
            "after": {d: upstream[d] for d in stage.after}}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]


def _started_marker(folder: Path) -> Path:
    return folder.with_name(folder.name + STARTED_SUFFIX)


def recorded_fingerprint(folder: Path) -> tuple[str | None, bool]:
    """(the fingerprint the stage's output was made under, whether that run finished); ``None``
    when nothing (readable) records it."""
    for path, finished in ((folder / STAGE_FILE, True), (_started_marker(folder), False)):
        if path.is_file():
            try:
                return json.loads(path.read_text())["fingerprint"], finished
            except (ValueError, KeyError):
                return None, finished
    return None, False


def stage_state(folder: Path, fp: str) -> str:
    """``done`` (same fingerprint), ``stale`` (another config, finished or killed), ``partial``
    (killed under this config, or unrecorded) or ``new``."""
    if not folder.exists():
        return "new"
    old, finished = recorded_fingerprint(folder)
    if old is None:
        return "partial"
    if old != fp:
        return "stale"
    return "done" if finished else "partial"


def run_pipeline(settings: dict, stages: list[Stage], dry_run: bool = False,
                 only: list[str] | None = None) -> dict[str, str]:
    """Run (or, dry, print) every stage not already done; returns each stage's state.

    ``jobs: N`` in the settings runs up to N stages at once, each as soon as the stages it reads
    have finished, with ``OMP_NUM_THREADS`` split between them: two one-thread evaluations on
    two cores finish in about half the time of one after the other. A stage marked ``alone``
    (training: one-thread verifier training measured 4x slower) runs by itself on every thread."""
    root = Path(settings["root"])
    jobs = int(settings.get("jobs", 1))
    env = {**os.environ, **{k: str(v) for k, v in settings.get("env", {}).items()}}
    # beside other stages: the cores split between them, unless the user chose a thread count
    shared = {"OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // jobs)), **env}
    prints, states, todo = {}, {}, []
    for i, stage in enumerate(stages, 1):
        folder = root / stage.name
        fp = prints[stage.name] = fingerprint(stage, root, prints)
        state = states[stage.name] = stage_state(folder, fp)
        head = f"[pipeline] {i}/{len(stages)} {stage.name}"
        if only and stage.name not in only:
            print(f"{head}: not selected ({state})")
        elif state == "done":
            print(f"{head}: done, skipped ({folder / STAGE_FILE})")
        else:
            print(f"{head}: {'would run' if dry_run else 'to run'} ({state}): "
                  f"{shlex.join(['python', *command(stage, root)[1:]])}", flush=True)
            todo.append(stage)
    if not dry_run and todo:
        _schedule(todo, root, prints, states, (env, shared), jobs)
    return states


def _schedule(todo: list[Stage], root: Path, prints: dict[str, str], states: dict[str, str],
              envs: tuple[dict[str, str], dict[str, str]], jobs: int) -> None:
    """Start stages in file order as their inputs finish; ``envs``: (alone, beside others)."""
    started, running, failed = time.monotonic(), {}, []
    pending = list(todo)
    while pending or running:
        blocked = {s.name for s in pending} | set(running)
        for stage in [s for s in pending if not failed and not blocked & set(s.after)]:
            busy = len(running) >= jobs or any(r[0].alone for r in running.values())
            if busy or (stage.alone and running):
                break  # in file order: a stage that must run alone waits for the others
            pending.remove(stage)
            solo = stage.alone or jobs == 1
            running[stage.name] = (stage, _start(stage, root, states[stage.name], envs[not solo],
                                                 not solo, prints[stage.name]), time.monotonic())
        if failed and not running:
            break
        time.sleep(0.2)
        for name, (_, proc, t0) in list(running.items()):
            if proc.poll() is None:
                continue
            if hasattr(proc, "relay"):
                proc.relay.join()  # its last lines before ours
            del running[name]
            if proc.returncode != 0:
                failed.append(f"{name} (exit {proc.returncode})")
                continue
            folder, seconds = root / name, time.monotonic() - t0
            folder.mkdir(parents=True, exist_ok=True)
            (folder / STAGE_FILE).write_text(json.dumps(
                {"stage": name, "fingerprint": prints[name], "command": proc.args[1:],
                 "seconds": round(seconds, 1), "finished": time.strftime("%Y-%m-%dT%H:%M:%S")},
                indent=1) + "\n")
            _started_marker(folder).unlink(missing_ok=True)
            states[name] = "ran"
            print(f"[pipeline] {name}: finished in {seconds:.0f}s "
                  f"(pipeline {time.monotonic() - started:.0f}s)", flush=True)
    if failed:
        raise PlansuiteError(f"pipeline stage {', '.join(failed)} failed; fix and re-run the same "
                             "command to resume from it")


def _start(stage: Stage, root: Path, state: str, env: dict[str, str], prefix: bool, fp: str):
    """Launch one stage (after moving a stale output aside); in parallel, its lines are prefixed."""
    folder = root / stage.name
    if state == "stale":
        old, finished = recorded_fingerprint(folder)
        aside = folder.with_name(f"{folder.name}{STALE}{old}")  # the report leaves it out
        n = 1
        while aside.exists():  # that config's output was moved aside before (A, B, A, B, ...)
            n += 1
            aside = folder.with_name(f"{folder.name}{STALE}{old}-{n}")
        folder.rename(aside)
        killed = "" if finished else " (a killed run's)"
        print(f"[pipeline] {stage.name}: config changed; previous output{killed} moved to {aside}")
    folder.parent.mkdir(parents=True, exist_ok=True)  # beside the folder: some CLIs want it absent
    _started_marker(folder).write_text(json.dumps({"stage": stage.name, "fingerprint": fp}) + "\n")
    print(f"[pipeline] {stage.name}: running", flush=True)
    if not prefix:
        return subprocess.Popen(command(stage, root), env=env)
    proc = subprocess.Popen(command(stage, root), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, bufsize=1)
    proc.relay = threading.Thread(target=_relay, args=(proc.stdout, f"[{stage.name}] "))
    proc.relay.start()
    return proc


def _relay(stream, prefix: str) -> None:
    for line in stream:
        print(line if line.startswith(prefix) else prefix + line, end="", flush=True)


def print_comparisons(root: Path, pairs: list[list[str]]) -> None:
    """The pipeline's claims (``compare:`` pairs of result folders), checked on their results."""
    for a, b in pairs:
        files = [root / name / "results.json" for name in (a, b)]
        if all(f.is_file() for f in files):
            ra, rb = (json.loads(f.read_text()) for f in files)
            print("[compare] " + compare(a.split("/")[-1], ra, b.split("/")[-1], rb))


def write_ablation(root: Path, steps: list[list[str]]) -> None:
    """The pipeline's ``ablation:`` steps (run, baseline, what the run adds) as a paired table,
    printed and written to ``<root>/ablation.md``."""
    table = ablation_table(root, steps) if steps else None
    if table is not None:
        text = markdown(*table)
        (root / "ablation.md").write_text(
            "What each change bought (paired on the same instances and seed; 95 % intervals)\n\n"
            + text + "\n")
        print(f"[ablation] {root / 'ablation.md'}\n{text}")
