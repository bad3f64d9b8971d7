"""Train one model kind on a dataset directory and export it: ``train(TrainSpec) -> results``.

A model kind is a plug-in (:mod:`plansuite.models.kinds`): one module holding its config
dataclass, its LightningModule and its builder as ``KIND = ModelKind(...)``, found by
``model.kind`` -- a name of :data:`MODEL_KINDS` or the dotted path of a module -- as planner
loops are found by ``planner.loop``. This module is the rest: :func:`train` fits, checkpoints,
validates the best weights and writes ``export/`` and ``results.json``, and the resume logic.
``plansuite-train`` (:mod:`plansuite.cli.train`) turns its Hydra config into a
:class:`TrainSpec`; the skill rounds build one directly.

Writes under ``out_dir``: ``checkpoints/last.ckpt`` (every ``checkpoint_every_n_steps``, with the
training data's position and the random states, so that a run killed between two saves resumes
from the last one as if never stopped: :mod:`plansuite.models.resumable`) and
``checkpoints/best.ckpt``, ``export/`` (``save_pretrained`` model + tokenizer + ``plansuite.json``,
from the best checkpoint), ``results.json`` (throughput and validation metrics) and the logger's
files.

Adding a model kind: one module with ``KIND = ModelKind(Config, build)`` and a
``conf/model/<name>.yaml`` whose ``kind`` is the module's dotted path (``tests/toy_kind.py``,
``tests/test_train_toy_kind.py``); a built-in one also gets its name in :data:`MODEL_KINDS`.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plansuite.errors import ConfigError, PlansuiteError
from plansuite.jsonl import write_atomic
from plansuite.settings import from_mapping, settings_changes

if TYPE_CHECKING:  # the kinds' modules import torch
    from plansuite.models.kinds import Built, ModelKind

# The built-in model kinds: ``model.kind`` -> the module whose ``KIND`` it is (imported when used).
MODEL_KINDS: dict[str, str] = {
    "generator": "plansuite.models.generator",
    "verifier": "plansuite.models.verifier",
    "problem_generator": "plansuite.nl2pddl.models.problem_generator_module",
    "critic": "plansuite.nl2pddl.models.critic_module",
}


def kind_def(name: str) -> ModelKind:
    """The ``KIND`` of a built-in kind's module, or of the module ``name`` (``kind: my_pkg.my_kind``).

    >>> kind_def("verifier").config.__name__
    'VerifierConfig'
    >>> kind_def("critc")
    Traceback (most recent call last):
    plansuite.errors.ConfigError: model.kind 'critc': unknown (choose from generator, verifier, problem_generator, critic, or give a module path)
    """
    from plansuite.models.kinds import ModelKind

    path = MODEL_KINDS.get(name, name) if isinstance(name, str) else None
    try:
        module = importlib.import_module(path) if path else None
    except ModuleNotFoundError as exc:
        if not (exc.name and (path == exc.name or path.startswith(f"{exc.name}."))):
            raise ConfigError(f"model.kind={name}: cannot import it ({exc})") from None
        module = None
    except (ImportError, ValueError, TypeError) as exc:  # "a..b", "": not a module path
        raise ConfigError(f"model.kind '{name}': unknown ({exc})") from None
    if module is None:
        raise ConfigError(f"model.kind '{name}': unknown (choose from {', '.join(MODEL_KINDS)}, "
                          "or give a module path)")
    if not isinstance(getattr(module, "KIND", None), ModelKind):
        raise ConfigError(f"model.kind={name}: the module has no KIND = ModelKind(...)")
    return module.KIND


def model_config(values: Mapping[str, Any]):
    """The typed config of ``model.kind``, from the resolved ``model`` group.

    >>> model_config({"kind": "verifier", "recipe": "hard"}).recipe
    'hard'
    """
    return from_mapping(kind_def(values.get("kind")).config, values, "model")


# Lightning Trainer arguments of ``conf/trainer/cpu.yaml`` (a test keeps the two the same);
# unless given, ``default_root_dir`` and ``max_epochs`` follow the spec's out_dir and the model's
# epochs (:meth:`TrainSpec.trainer_kwargs`).
CPU_TRAINER: dict[str, Any] = {
    "max_steps": -1, "accelerator": "cpu", "devices": 1, "num_nodes": 1, "precision": "32-true",
    "gradient_clip_val": 1.0, "log_every_n_steps": 20, "num_sanity_val_steps": 1,
    "enable_progress_bar": True, "enable_model_summary": False, "deterministic": False,
}

# (group, name, tags) -> a Lightning logger; the caller decides which keys its logger takes.
LoggerFactory = Callable[[str, str, list], Any]


@dataclass
class TrainSpec:
    """One training run."""

    data_dir: Path
    out_dir: Path
    model: Any  # a model kind's config (its ``kind`` names the kind: kind_def)
    trainer: dict[str, Any] = field(default_factory=lambda: dict(CPU_TRAINER))  # Trainer kwargs
    seed: int = 0
    ckpt_path: str | None = None  # last: resume from out_dir/checkpoints/last.ckpt (if any); or a file
    checkpoint_every_n_steps: int = 100
    progress_every_n_steps: int = 100  # progress lines when the output is not a terminal
    num_workers: int = 0
    compile: bool = False  # training steps through torch.compile (models/compiled.py); weights as eager
    logger: LoggerFactory | None = None  # None: no logger (results.json is still written)
    callbacks: list[Any] = field(default_factory=list)  # more Lightning callbacks (conf/callbacks)
    callback_settings: dict[str, Any] = field(default_factory=dict)  # their config: a resume
    #                                      with other settings is refused, like the model's
    config: dict | None = None  # what the export records as its training config (None: this spec)

    def __post_init__(self) -> None:
        self.data_dir, self.out_dir = Path(self.data_dir), Path(self.out_dir)

    def trainer_kwargs(self) -> dict[str, Any]:
        """Lightning Trainer arguments; by default the run's folder and the model's epochs."""
        return {"default_root_dir": str(self.out_dir), "max_epochs": self.model.epochs,
                **self.trainer}

    def record(self) -> dict:
        """The resolved training config stored in the export and the module's hyper-parameters."""
        if self.config is not None:
            return self.config
        plain = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                 if f.name not in ("logger", "config", "callbacks")}
        return json.loads(json.dumps({**plain, "model": dataclasses.asdict(self.model)}, default=str))


def is_child_process() -> bool:
    """True in the processes Lightning's DDP launcher starts (they re-run the command line)."""
    return int(os.environ.get("LOCAL_RANK", 0)) > 0 or int(os.environ.get("NODE_RANK", 0)) > 0


RUN_SETTINGS = "run_settings.json"  # in out_dir: what its checkpoints were trained with
# Trainer keys that change how a run reports, not what it learns: a resume may change them.
REPORTING_KEYS = ("enable_progress_bar", "log_every_n_steps", "enable_model_summary",
                  "num_sanity_val_steps", "default_root_dir")
# Model settings removed from the code, at the value that trains as the code does now: a run
# recorded with them resumes.
REMOVED_SETTINGS = {"model.backbone.arch": "gpt2", "model.group_by_length": 0, "model.loss_norm": "batch"}


def result_settings(spec: TrainSpec) -> dict:
    """The settings that decide the trained weights: dataset, model, trainer, seed (not logging,
    progress, checkpoint cadence or data-loader workers)."""
    trainer = {k: v for k, v in spec.trainer.items() if k not in REPORTING_KEYS}
    settings = {"data_dir": str(spec.data_dir.resolve()), "seed": spec.seed,
                "model": dataclasses.asdict(spec.model), "trainer": trainer}
    if spec.callback_settings:  # absent when none: runs from before conf/callbacks resume as before
        settings["callbacks"] = spec.callback_settings
    return json.loads(json.dumps(settings, default=str))


def check_resume_settings(spec: TrainSpec) -> None:
    """A resume must train on with the settings its checkpoints were trained with: otherwise the
    export would mix old weights with new settings and record only the new ones. One line naming
    the differing keys; ``ckpt_path=fresh`` starts over instead (the old checkpoints kept aside)."""
    path = spec.out_dir / RUN_SETTINGS
    if not path.is_file():
        return  # checkpoints from before this check: nothing to compare with
    # A setting added to the code since the run started, left at its default, trains as before.
    defaults = json.loads(json.dumps({"model": dataclasses.asdict(type(spec.model)())}, default=str))
    defaults.update(REMOVED_SETTINGS)  # flattened with it
    what = settings_changes(json.loads(path.read_text()), result_settings(spec), defaults)
    if what:
        raise ConfigError(f"{spec.out_dir}: cannot resume: its checkpoints were trained with other "
                          f"settings ({what}); restore them, choose another out_dir, or "
                          "start over with ckpt_path=fresh")


def write_run_settings(spec: TrainSpec) -> None:
    # Not in checkpoints/: Lightning warns about a checkpoint folder that is not empty.
    spec.out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(spec.out_dir / RUN_SETTINGS,
                 json.dumps(result_settings(spec), indent=2, sort_keys=True))


def start_fresh(out_dir: Path) -> None:
    """``ckpt_path=fresh``: move earlier checkpoints aside (never delete work) and start over."""
    folder = out_dir / "checkpoints"
    if folder.is_dir() and any(folder.iterdir()):
        aside = out_dir / f"checkpoints.old-{time.strftime('%Y%m%d-%H%M%S')}"
        os.replace(folder, aside)
        print(f"[train] ckpt_path=fresh: earlier checkpoints moved to {aside}", flush=True)


def resolve_resume(ckpt_path: str | None, out_dir: Path) -> str | None:
    """``last`` -> ``out_dir/checkpoints/last.ckpt`` when it exists (else a fresh start);
    ``fresh`` -> a fresh start, earlier checkpoints moved aside."""
    last = out_dir / "checkpoints" / "last.ckpt"
    if ckpt_path == "fresh":
        if not is_child_process():
            start_fresh(out_dir)
        return None
    if ckpt_path in (None, "", "null"):
        if not is_child_process() and any((out_dir / "checkpoints").glob("*.ckpt")):
            raise ConfigError(f"{out_dir}: has checkpoints from an earlier run; resume with "
                              "ckpt_path=last, or choose another out_dir")
        return None
    if ckpt_path == "last":
        if last.is_file():
            return str(last)
        print(f"[train] no {last} yet: starting from scratch", flush=True)
        return None
    if not Path(ckpt_path).is_file():
        raise ConfigError(f"ckpt_path={ckpt_path}: checkpoint file not found")
    return ckpt_path


def monitor_better(score: float, than: float, mode: str) -> bool:
    """Whether a monitored value improves on another.

    >>> monitor_better(0.1, 0.2, "min"), monitor_better(0.1, 0.2, "max")
    (True, False)
    """
    return score < than if mode == "min" else score > than


def final_if_better(trainer, module, dm, best_cb, last: Path,
                    validated_step: int = -1) -> tuple[str | None, list | None]:
    """The checkpoint to export, and its validation metrics when they are already measured: the
    best validated one (metrics ``None``), or ``last`` (the finished state) when it was never
    validated and validates better. A step budget (``trainer.max_steps``) that ends mid-epoch
    stops after the last epoch's validation: without this the export would be that epoch's
    weights, and the steps after it -- where the learning rate decays to zero -- lost.
    ``validated_step`` is the step of the latest validation (:class:`LastValidation`); the best
    checkpoint's own step stands in for it when unknown (-1, a checkpoint from before it)."""
    best = best_cb.best_model_path or None
    if best is None or trainer.fast_dev_run or not last.is_file():
        return best, None
    if (validated_step if validated_step >= 0 else _checkpoint_step(best)) >= trainer.global_step:
        return best, None  # the final weights were validated: the best checkpoint is the choice
    final = trainer.validate(module, datamodule=dm, verbose=False)  # the in-memory, final weights
    score = final[0].get(best_cb.monitor) if final else None
    if score is None or best_cb.best_model_score is None:
        return best, None
    if monitor_better(float(score), float(best_cb.best_model_score), best_cb.mode):
        print(f"[train] final weights (step {trainer.global_step}) validate better than "
              f"{Path(best).name}: {best_cb.monitor}={float(score):.4g}; exporting them", flush=True)
        return str(last), final
    return best, None


def _checkpoint_step(path: str) -> int:
    """The step a checkpoint was saved at, read with ``weights_only=True`` (tensors and plain
    values only): a file whose unpickling would run code is refused here, before Lightning (also
    told ``weights_only=True``) opens it."""
    import pickle

    import torch

    try:
        return int(torch.load(path, map_location="cpu", weights_only=True, mmap=True)["global_step"])
    except pickle.UnpicklingError as exc:
        raise ConfigError(f"{path}: refused: the checkpoint holds more than weights and plain values "
                          "(loading it would run code it carries)") from exc
    except Exception as exc:  # a truncated or foreign file: say which, in one line
        raise ConfigError(f"{path}: unreadable checkpoint ({type(exc).__name__})") from exc


# ---- the trainer ---------------------------------------------------------------------------
def build(spec: TrainSpec, domain) -> Built:
    """(module, datamodule, tokenizer, export meta) for ``spec.model``, by its kind's builder."""
    from plansuite.models.kinds import RunContext

    run = RunContext(spec.data_dir, spec.out_dir, domain, spec.seed, spec.num_workers, spec.record())
    return kind_def(spec.model.kind).build(spec.model, run)


def set_cpu_threads(trainer_kwargs: Mapping[str, Any]) -> None:
    """One BLAS pool per process, sized so that DDP ranks on one CPU do not oversubscribe it."""
    import torch

    if trainer_kwargs.get("accelerator") == "cpu":
        devices = trainer_kwargs.get("devices", 1)
        processes = devices if isinstance(devices, int) and devices > 0 else 1
        threads = max(1, (os.cpu_count() or 1) // processes)
        if os.environ.get("OMP_NUM_THREADS", "").isdigit():  # a caller sharing the CPU chose
            threads = max(1, min(threads, int(os.environ["OMP_NUM_THREADS"])))
        torch.set_num_threads(threads)


def run_labels(spec: TrainSpec, domain_name: str, dataset: str | None) -> tuple[str, str, list[str]]:
    """(group, name, tags) of the run, for the logger."""
    from plansuite.tracking import run_tags

    m, kind = spec.model, kind_def(spec.model.kind)
    tags = run_tags(domain=domain_name, dataset=dataset, model=m.kind, seed=spec.seed, **kind.tags(m))
    return f"{domain_name}-{m.kind}", kind.name(m) if kind.name else m.kind, tags


def make_trainer(spec: TrainSpec, domain_name: str, dataset: str | None):
    """(Trainer, best-checkpoint callback, throughput callback) with the run's logger."""
    import lightning as L
    from lightning.pytorch.callbacks import ModelCheckpoint

    from plansuite.models.callbacks import LastValidation, ProgressLines, TokensPerSecond
    from plansuite.models.resumable import ResumeState

    m = spec.model
    ckpt_dir = spec.out_dir / "checkpoints"
    last_cb = ModelCheckpoint(dirpath=ckpt_dir, save_top_k=0, save_last=True,
                              every_n_train_steps=spec.checkpoint_every_n_steps,
                              enable_version_counter=False)
    best_cb = ModelCheckpoint(dirpath=ckpt_dir, filename="best", monitor=m.monitor.metric,
                              mode=m.monitor.mode, save_top_k=1, enable_version_counter=False,
                              auto_insert_metric_name=False)
    throughput = TokensPerSecond()
    logger = spec.logger(*run_labels(spec, domain_name, dataset)) if spec.logger else False
    callbacks = [last_cb, best_cb, throughput, ResumeState(), LastValidation(),  # a resume goes
                 *spec.callbacks]                                               # on where it stopped
    bar = bool(spec.trainer.get("enable_progress_bar", True)) and sys.stdout.isatty()
    if not bar:  # a log file: plain lines instead of a redrawn bar
        callbacks.append(ProgressLines(spec.progress_every_n_steps))
    kwargs = {**spec.trainer_kwargs(), "callbacks": callbacks, "logger": logger, "enable_progress_bar": bar}
    return L.Trainer(**kwargs), best_cb, throughput


def train(spec: TrainSpec) -> dict:
    """Fit ``spec.model`` on ``spec.data_dir``; write the export and ``results.json``; the results."""
    import lightning as L

    from plansuite.data.load import load_manifest
    from plansuite.models.export import save_export
    from plansuite.models.tokenizer import tokenizer_kind
    from plansuite.pddl.parse import load_domain

    logging.getLogger("lightning.pytorch").propagate = False  # printed once, not twice via hydra
    data_dir, out_dir = spec.data_dir, spec.out_dir
    manifest = load_manifest(data_dir)
    domain = load_domain(data_dir / "domain.pddl")
    ckpt_path = resolve_resume(spec.ckpt_path, out_dir)
    if ckpt_path and Path(ckpt_path).resolve().parent == (out_dir / "checkpoints").resolve():
        check_resume_settings(spec)
    resumed_from = _checkpoint_step(ckpt_path) if ckpt_path else None
    if not ckpt_path and not is_child_process():
        write_run_settings(spec)
    set_cpu_threads(spec.trainer)
    L.seed_everything(spec.seed, workers=True, verbose=False)
    module, dm, tokenizer, meta = build(spec, domain)
    if spec.compile:
        from plansuite.models.compiled import compile_for_training

        compile_for_training(module.model)
    trainer, best_cb, throughput = make_trainer(spec, domain.name, manifest.get("dataset"))
    if trainer.logger:  # the config's own keys (model.optim.lr), not nested under the modules' "config"
        trainer.logger.log_hyperparams(spec.record())

    start = time.perf_counter()
    from lightning.fabric.utilities.exceptions import MisconfigurationException

    try:
        trainer.fit(module, datamodule=dm, ckpt_path=ckpt_path, weights_only=True)
    except MisconfigurationException as err:  # e.g. callbacks=[lr_monitor] with logger=none
        raise ConfigError(f"Lightning refused the run: {err}") from None
    fit_s = time.perf_counter() - start
    if trainer.interrupted:
        raise PlansuiteError(f"training interrupted; resume with: ckpt_path=last out_dir={out_dir}")
    if not trainer.fast_dev_run:
        trainer.save_checkpoint(out_dir / "checkpoints" / "last.ckpt")  # the finished state
    from plansuite.models.callbacks import LastValidation

    validated = next((c.step for c in trainer.callbacks if isinstance(c, LastValidation)), -1)
    best, metrics = final_if_better(trainer, module, dm, best_cb, out_dir / "checkpoints" / "last.ckpt",
                                    validated)
    if metrics is None:  # the final weights were not the ones chosen (or were never measured)
        metrics = trainer.validate(module, datamodule=dm, ckpt_path=best, verbose=False,  # best weights
                                   weights_only=True)
    if not trainer.is_global_zero:
        return {}
    kind, plugin = spec.model.kind, kind_def(spec.model.kind)
    flat = plugin.metrics(module, metrics)
    if plugin.export_meta:
        meta.update(plugin.export_meta(module))
    meta.update(domain=domain.name, tokenizer=tokenizer_kind(tokenizer), metrics=flat,
                config=spec.record(), best_checkpoint=best)
    if plugin.object_names:  # the names a planner renames each instance's objects to
        from plansuite.data.augment import model_names
        from plansuite.models.datamodules import dataset_objects

        meta["object_names"] = model_names(dataset_objects(data_dir, domain))
    export = save_export(out_dir / "export", module.model, tokenizer, meta, data_dir / "domain.pddl")
    results = {"kind": kind, "export": str(export), "fit_wall_s": round(fit_s, 2),
               "train_tokens": throughput.tokens * trainer.world_size,
               "tokens_per_s": round(throughput.tokens_per_s * trainer.world_size, 1),
               "global_step": trainer.global_step, "epochs": trainer.current_epoch,
               "resumed_from_step": resumed_from, "metrics": flat,
               "train_examples": getattr(dm, "train_counts", None)}
    write_atomic(out_dir / "results.json", json.dumps(results, indent=2) + "\n")
    print(f"[train] {kind}: {trainer.global_step} steps in {fit_s:.1f}s, "
          f"{results['tokens_per_s']:.0f} tokens/s; export: {export}", flush=True)
    print("[train] " + json.dumps(flat), flush=True)
    from plansuite.tracking import offline_notice

    notice = offline_notice(getattr(trainer.logger, "experiment", None))  # W&B offline: where, sync
    if notice:
        print(notice, flush=True)
    return results
