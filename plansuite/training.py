"""Train one model kind on a dataset directory and export it: ``train(TrainSpec) -> results``.

One config dataclass per model kind (the keys of ``conf/model/<kind>.yaml``), one table
(:data:`BUILDERS`) from kind to the function that builds its LightningModule, DataModule,
tokenizer and export metadata, and one :func:`train` that fits, checkpoints, validates the best
weights and writes ``export/`` and ``results.json``. ``plansuite-train`` (:mod:`plansuite.cli.train`)
turns its Hydra config into a :class:`TrainSpec`; the skill rounds build one directly.

Writes under ``out_dir``: ``checkpoints/last.ckpt`` (every ``checkpoint_every_n_steps``, with the
training data's position and the random states, so that a run killed between two saves resumes
from the last one as if never stopped: :mod:`plansuite.models.resumable`) and
``checkpoints/best.ckpt``, ``export/`` (``save_pretrained`` model + tokenizer + ``plansuite.json``,
from the best checkpoint), ``results.json`` (throughput and validation metrics) and the logger's
files.

Adding a model kind: its config dataclass and its builder, one entry in :data:`MODEL_CONFIGS` and
one in :data:`BUILDERS`, and a ``conf/model/<kind>.yaml``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from plansuite.data.generator_recipes import FinetuneConfig
from plansuite.data.verifier_recipes import OnPolicyConfig
from plansuite.errors import ConfigError, PlansuiteError
from plansuite.jsonl import write_atomic
from plansuite.models.backbone import BackboneConfig, context_length
from plansuite.models.export import check_export_domain
from plansuite.models.optim import OptimConfig
from plansuite.pddl.model import Domain
from plansuite.settings import from_mapping, settings_changes

INITS = ("base", "generator")


@dataclass
class Monitor:
    """The validation metric that picks ``checkpoints/best.ckpt``."""

    metric: str = "val/loss"
    mode: str = "min"  # min | max


def _optim(lr: float, warmup_steps: int) -> Callable[[], OptimConfig]:
    return lambda: OptimConfig(lr=lr, weight_decay=0.0, warmup_steps=warmup_steps)


def _text_backbone() -> BackboneConfig:
    return BackboneConfig(tokenizer="corpus", n_positions=512)


@dataclass
class GeneratorConfig:
    """``conf/model/generator.yaml``: the GPT-2 generator of transitions."""

    kind: str = "generator"
    backbone: BackboneConfig = field(default_factory=BackboneConfig)
    # Training-data recipes (plansuite/data/generator_recipes.py); the paper's are the defaults.
    trajectories: str = "walk"  # walk (random walks) | shortest (their shortest paths)
    train_transitions: int | None = None  # only the first N training transitions (a CPU budget)
    augment: str = "none"  # none | rename: objects renamed at random per draw (data/augment.py)
    loss_on: str = "completion"  # completion | full (every token, as the paper's run_clm)
    batch_size: int = 32
    epochs: int = 15
    optim: OptimConfig = field(default_factory=_optim(2.0e-3, 100))
    val_greedy: int = 128  # validation transitions decoded greedily and judged each epoch
    max_new_tokens: int | None = None  # stored in the export (None: twice the longest completion)
    monitor: Monitor = field(default_factory=Monitor)
    finetune: FinetuneConfig = field(default_factory=FinetuneConfig)


@dataclass
class VerifierConfig:
    """``conf/model/verifier.yaml``: a sequence-classification verifier (V_base or V_generator)."""

    kind: str = "verifier"
    backbone: BackboneConfig = field(default_factory=BackboneConfig)
    init: str = "base"  # base | generator (the generator export's weights)
    generator_dir: str | None = None  # for init=generator and recipe=onpolicy; adds the on-policy val set
    recipe: str = "random"  # random | relabel | hard | onpolicy: plansuite/data/verifier_recipes.py
    input_kind: str = "state_action"  # state_action | state_action_next | state_action_diff (the last two: onpolicy only)
    onpolicy: OnPolicyConfig = field(default_factory=OnPolicyConfig)
    augment: str = "none"  # none | rename: training texts' objects renamed at random per draw
    calibrate_on: str = "auto"  # validation set for the threshold: onpolicy if present, else random
    calibrate_metric: str = "balanced"  # balanced | accuracy: what the threshold maximises there
    batch_size: int = 32
    epochs: int = 4
    optim: OptimConfig = field(default_factory=_optim(1.0e-3, 50))
    monitor: Monitor = field(default_factory=lambda: Monitor("val/auroc", "max"))


@dataclass
class ProblemGeneratorConfig:
    """``conf/model/problem_generator.yaml``: NL -> PDDL, description to ``problem.pddl``."""

    kind: str = "problem_generator"
    backbone: BackboneConfig = field(default_factory=_text_backbone)
    vocab_size: int = 2048  # corpus tokenizer size (backbone.tokenizer=corpus)
    loss_on: str = "completion"
    batch_size: int = 16
    epochs: int = 6
    optim: OptimConfig = field(default_factory=_optim(2.0e-3, 100))
    val_greedy: int = 16  # validation pairs decoded greedily and scored against their references
    max_new_tokens: int | None = None  # stored in the export (None: twice the longest problem)
    abstract_repeat: int = 1  # times each abstract training pair is seen per epoch
    group_by_length: int = 0  # > 1: batches of similar length, sorted within chunks of this many batches
    # the training loss's divisor: "batch" (its own labelled tokens: the mean, as Hugging Face) or
    # "dataset" (batch_size x the training pairs' mean labelled tokens: each token weighs the same
    # in every batch, which length-grouped batches need)
    loss_norm: str = "batch"
    # > 1: a training batch goes through the model as up to this many runs of pairs of similar
    # length, each padded to its own longest (same loss and gradient, less padding computed)
    length_splits: int = 1
    monitor: Monitor = field(default_factory=Monitor)


@dataclass
class CriticConfig:
    """``conf/model/critic.yaml``: the NL -> PDDL critic (match | the dataset's mismatch kinds)."""

    kind: str = "critic"
    backbone: BackboneConfig = field(default_factory=_text_backbone)
    init: str = "base"  # base | generator (a problem_generator export's weights)
    generator_dir: str | None = None
    vocab_size: int = 2048
    batch_size: int = 32
    epochs: int = 4
    optim: OptimConfig = field(default_factory=_optim(1.0e-3, 50))
    monitor: Monitor = field(default_factory=lambda: Monitor("val/accuracy", "max"))


ModelConfig = GeneratorConfig | VerifierConfig | ProblemGeneratorConfig | CriticConfig
MODEL_CONFIGS: dict[str, type] = {"generator": GeneratorConfig, "verifier": VerifierConfig,
                                  "problem_generator": ProblemGeneratorConfig,
                                  "critic": CriticConfig}


def model_config(values: Mapping[str, Any]) -> ModelConfig:
    """The typed config of ``model.kind``, from the resolved ``model`` group.

    >>> model_config({"kind": "verifier", "recipe": "hard"}).recipe
    'hard'
    >>> model_config({"kind": "critc"})
    Traceback (most recent call last):
    plansuite.errors.ConfigError: model.kind 'critc': unknown (choose from generator, verifier, problem_generator, critic)
    """
    kind = values.get("kind")
    if kind not in MODEL_CONFIGS:
        raise ConfigError(f"model.kind '{kind}': unknown (choose from {', '.join(MODEL_CONFIGS)})")
    return from_mapping(MODEL_CONFIGS[kind], values, "model")


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
    model: ModelConfig = field(default_factory=GeneratorConfig)
    trainer: dict[str, Any] = field(default_factory=lambda: dict(CPU_TRAINER))  # Trainer kwargs
    seed: int = 0
    ckpt_path: str | None = None  # last: resume from out_dir/checkpoints/last.ckpt (if any); or a file
    checkpoint_every_n_steps: int = 100
    progress_every_n_steps: int = 100  # progress lines when the output is not a terminal
    num_workers: int = 0
    compile: bool = False  # training steps through torch.compile (models/compiled.py); weights as eager
    logger: LoggerFactory | None = None  # None: no logger (results.json is still written)
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
                 if f.name not in ("logger", "config")}
        return json.loads(json.dumps({**plain, "model": dataclasses.asdict(self.model)}, default=str))


class Built(NamedTuple):
    module: Any  # LightningModule
    datamodule: Any  # LightningDataModule
    tokenizer: Any
    meta: dict  # export metadata (plansuite.json) known before training


def is_child_process() -> bool:
    """True in the processes Lightning's DDP launcher starts (they re-run the command line)."""
    return int(os.environ.get("LOCAL_RANK", 0)) > 0 or int(os.environ.get("NODE_RANK", 0)) > 0


RUN_SETTINGS = "run_settings.json"  # in out_dir: what its checkpoints were trained with
# Trainer keys that change how a run reports, not what it learns: a resume may change them.
REPORTING_KEYS = ("enable_progress_bar", "log_every_n_steps", "enable_model_summary",
                  "num_sanity_val_steps", "default_root_dir")
# Model keys that change how a step is computed, not its loss or gradient: likewise.
COMPUTE_KEYS = ("length_splits",)


def result_settings(spec: TrainSpec) -> dict:
    """The settings that decide the trained weights: dataset, model, trainer, seed (not logging,
    progress, checkpoint cadence or data-loader workers)."""
    trainer = {k: v for k, v in spec.trainer.items() if k not in REPORTING_KEYS}
    model = {k: v for k, v in dataclasses.asdict(spec.model).items() if k not in COMPUTE_KEYS}
    return json.loads(json.dumps({"data_dir": str(spec.data_dir.resolve()), "seed": spec.seed,
                                  "model": model, "trainer": trainer},
                                 default=str))


def check_resume_settings(spec: TrainSpec) -> None:
    """A resume must train on with the settings its checkpoints were trained with: otherwise the
    export would mix old weights with new settings and record only the new ones. One line naming
    the differing keys; ``ckpt_path=fresh`` starts over instead (the old checkpoints kept aside)."""
    path = spec.out_dir / RUN_SETTINGS
    if not path.is_file():
        return  # checkpoints from before this check: nothing to compare with
    # A setting added to the code since the run started, left at its default, trains as before.
    defaults = json.loads(json.dumps({"model": dataclasses.asdict(type(spec.model)())}, default=str))
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


# ---- tokenizers and backbones ------------------------------------------------------------------
def make_tokenizer(backbone: BackboneConfig, domain: Domain, data_dir: Path):
    """The atom tokenizer of the dataset's objects, or a pretrained backbone's own (``bpe``)."""
    from plansuite.models.backbone import missing_backbone
    from plansuite.models.datamodules import dataset_objects
    from plansuite.models.tokenizer import (
        TOKENIZER_KINDS,
        build_atom_tokenizer,
        load_pretrained_tokenizer,
    )

    if backbone.tokenizer not in TOKENIZER_KINDS:
        raise ConfigError(f"model.backbone.tokenizer '{backbone.tokenizer}': unknown (choose from "
                          f"{', '.join(TOKENIZER_KINDS)})")
    if backbone.tokenizer == "atom":
        return build_atom_tokenizer(domain, dataset_objects(data_dir, domain), backbone.n_positions)
    if not backbone.path:
        raise ConfigError("model.backbone.tokenizer=bpe: set model.backbone.path to a directory "
                          "(or hub id) holding a GPT-2 tokenizer")
    try:
        return load_pretrained_tokenizer(backbone.path)
    except ConfigError:
        if not Path(backbone.path).exists():
            raise missing_backbone(backbone.path) from None
        raise


def make_text_tokenizer(backbone: BackboneConfig, vocab_size: int, data_dir: Path, kind: str,
                        domain: Domain):
    """NL -> PDDL: a byte-level BPE trained on the split (``corpus``), or the backbone's (``bpe``)."""
    from plansuite.nl2pddl.models.text_datamodules import text_corpus
    from plansuite.nl2pddl.models.text_tokenizer import train_text_tokenizer

    if backbone.tokenizer == "corpus":
        return train_text_tokenizer(text_corpus(data_dir, kind), vocab_size, max_length=backbone.n_positions)
    if backbone.tokenizer == "atom":
        raise ConfigError("model.backbone.tokenizer=atom: one token per ground atom cannot spell "
                          "descriptions; use corpus (model/backbone=tiny_text) or bpe (model/backbone=gpt2)")
    return make_tokenizer(backbone, domain, data_dir)


def make_model(backbone: BackboneConfig, head: str, tokenizer, labels: dict[int, str] | None = None):
    from plansuite.models.backbone import pretrained_model, tiny_model

    if backbone.name == "tiny":
        return tiny_model(backbone, head, tokenizer, labels)
    if backbone.name == "pretrained":
        if not backbone.path:
            raise ConfigError("model.backbone.name=pretrained: set model.backbone.path")
        if backbone.arch != BackboneConfig.arch:  # the saved config says what it is
            raise ConfigError(f"model.backbone.arch={backbone.arch}: only for name=tiny (a pretrained "
                              "backbone's architecture is its saved config's)")
        return pretrained_model(backbone.path, head, tokenizer, labels)
    raise ConfigError(f"model.backbone.name '{backbone.name}': unknown (choose from tiny, pretrained)")


def check_init(init: str) -> None:
    if init not in INITS:
        raise ConfigError(f"model.init '{init}': unknown (choose from {', '.join(INITS)})")


def start_from_export(export_dir: str, head: str, labels: dict[int, str] | None = None):
    """(tokenizer, model) with an export's weights and tokenizer (a new head for ``classifier``)."""
    from plansuite.models.backbone import pretrained_model
    from plansuite.models.tokenizer import load_pretrained_tokenizer

    tokenizer = load_pretrained_tokenizer(export_dir)
    return tokenizer, pretrained_model(export_dir, head, tokenizer, labels)


# ---- one builder per model kind ------------------------------------------------------------
def build_generator(spec: TrainSpec, domain: Domain) -> Built:
    from plansuite.models.datamodules import GeneratorDataModule
    from plansuite.models.generator import GeneratorModule

    m: GeneratorConfig = spec.model
    base_max_new = None
    if m.finetune.init_from:  # finetuning: the export's weights and tokenizer
        base_max_new = check_export_domain(m.finetune.init_from, "generator", domain,
                                           "model.finetune.init_from").get("max_new_tokens")
        tokenizer, model = start_from_export(m.finetune.init_from, "causal")
    else:
        tokenizer = make_tokenizer(m.backbone, domain, spec.data_dir)
        model = make_model(m.backbone, "causal", tokenizer)
    dm = GeneratorDataModule(spec.data_dir, tokenizer, context_length(model.config), m.batch_size,
                             m.loss_on, m.val_greedy, num_workers=spec.num_workers, seed=spec.seed,
                             finetune=m.finetune, trajectories=m.trajectories,
                             train_transitions=m.train_transitions, augment=m.augment)
    dm.setup()  # data problems surface now, as one line, before any training
    max_new = m.max_new_tokens or base_max_new or 2 * dm.max_completion
    module = GeneratorModule(model, tokenizer, domain, m.optim, max_new, spec.record())
    return Built(module, dm, tokenizer, {"kind": "generator", "max_new_tokens": max_new})


def build_verifier(spec: TrainSpec, domain: Domain) -> Built:
    from plansuite.data.verifier_recipes import EXTRA_TOKENS, INPUT_KINDS, val_set_names
    from plansuite.models.backbone import add_tokens
    from plansuite.models.datamodules import VerifierDataModule
    from plansuite.models.verifier import VerifierModule

    m: VerifierConfig = spec.model
    check_init(m.init)
    if m.input_kind not in INPUT_KINDS:
        raise ConfigError(f"model.input_kind '{m.input_kind}': unknown (choose from {', '.join(INPUT_KINDS)})")
    if m.generator_dir:
        check_export_domain(m.generator_dir, "generator", domain, "model.generator_dir")
    if m.init == "generator":
        if not m.generator_dir:
            raise ConfigError("model.init=generator: set model.generator_dir to a generator export")
        tokenizer, model = start_from_export(m.generator_dir, "classifier")
    else:
        tokenizer = make_tokenizer(m.backbone, domain, spec.data_dir)
        model = make_model(m.backbone, "classifier", tokenizer)
    add_tokens(model, tokenizer, EXTRA_TOKENS.get(m.input_kind, ()))
    dm = VerifierDataModule(spec.data_dir, domain, tokenizer, context_length(model.config), m.recipe,
                            m.input_kind, m.batch_size, m.generator_dir, m.onpolicy,
                            spec.out_dir / "data", spec.num_workers, spec.seed,
                            augment=m.augment)
    module = VerifierModule(model, m.optim, val_set_names(m.generator_dir), m.calibrate_on,
                            spec.record(), m.calibrate_metric)
    meta = {"kind": "verifier", "input_kind": m.input_kind, "init": m.init, "recipe": m.recipe}
    return Built(module, dm, tokenizer, meta)


def build_problem_generator(spec: TrainSpec, domain: Domain) -> Built:
    from plansuite.nl2pddl.data.dataset import load_nl2pddl_manifest
    from plansuite.nl2pddl.models.problem_generator_module import LOSS_NORMS, ProblemGeneratorModule
    from plansuite.nl2pddl.models.text_datamodules import ProblemDataModule

    load_nl2pddl_manifest(spec.data_dir)
    m: ProblemGeneratorConfig = spec.model
    if m.loss_norm not in LOSS_NORMS:  # before the tokenizer and the data: a bad setting costs nothing
        raise ConfigError(f"model.loss_norm={m.loss_norm}: choose one of {', '.join(LOSS_NORMS)}")
    if m.length_splits < 1:
        raise ConfigError(f"model.length_splits={m.length_splits}: must be >= 1 (1: the batch as one run)")
    tokenizer = make_text_tokenizer(m.backbone, m.vocab_size, spec.data_dir, m.kind, domain)
    model = make_model(m.backbone, "causal", tokenizer)
    dm = ProblemDataModule(spec.data_dir, tokenizer, context_length(model.config), m.batch_size,
                           m.loss_on, m.val_greedy, num_workers=spec.num_workers, seed=spec.seed,
                           abstract_repeat=m.abstract_repeat, group_by_length=m.group_by_length)
    dm.setup()  # data problems surface now, as one line, before any training
    max_new = m.max_new_tokens or 2 * dm.max_completion
    tokens = m.batch_size * dm.mean_completion if m.loss_norm == "dataset" else None
    module = ProblemGeneratorModule(model, tokenizer, domain, m.optim, max_new, spec.record(),
                                    tokens_per_batch=tokens, length_splits=m.length_splits)
    return Built(module, dm, tokenizer, {"kind": m.kind, "max_new_tokens": max_new})


def build_critic(spec: TrainSpec, domain: Domain) -> Built:
    from plansuite.nl2pddl.data.dataset import load_nl2pddl_manifest
    from plansuite.nl2pddl.models.critic_module import CriticModule
    from plansuite.nl2pddl.models.text_datamodules import CriticDataModule, dataset_critic_labels

    load_nl2pddl_manifest(spec.data_dir)
    m: CriticConfig = spec.model
    classes = dataset_critic_labels(spec.data_dir)  # classical: match/object/init/goal
    labels = dict(enumerate(classes))
    check_init(m.init)
    if m.init == "generator":
        if not m.generator_dir:
            raise ConfigError("model.init=generator: set model.generator_dir to a problem_generator export")
        check_export_domain(m.generator_dir, "problem_generator", domain, "model.generator_dir")
        tokenizer, model = start_from_export(m.generator_dir, "classifier", labels)
    else:
        tokenizer = make_text_tokenizer(m.backbone, m.vocab_size, spec.data_dir, m.kind, domain)
        model = make_model(m.backbone, "classifier", tokenizer, labels)
    dm = CriticDataModule(spec.data_dir, tokenizer, context_length(model.config), m.batch_size,
                          spec.num_workers, spec.seed, classes)
    dm.setup()
    module = CriticModule(model, m.optim, spec.record(), classes)
    return Built(module, dm, tokenizer, {"kind": m.kind, "labels": list(classes), "init": m.init,
                                         "generator_dir": str(Path(m.generator_dir)) if m.generator_dir else None})


BUILDERS: dict[str, Callable[[TrainSpec, Domain], Built]] = {
    "generator": build_generator, "verifier": build_verifier,
    "problem_generator": build_problem_generator, "critic": build_critic,
}


def build(spec: TrainSpec, domain: Domain) -> Built:
    """(module, datamodule, tokenizer, export meta) for ``spec.model``."""
    return BUILDERS[spec.model.kind](spec, domain)


# ---- the trainer ---------------------------------------------------------------------------
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

    m = spec.model
    verifier = m.kind == "verifier"
    tags = run_tags(domain=domain_name, dataset=dataset, model=m.kind, seed=spec.seed,
                    backbone="generator" if verifier and m.init == "generator" else m.backbone.name,
                    init=m.init if verifier else None, recipe=m.recipe if verifier else None)
    name = f"verifier-{m.init}-{m.recipe}" if verifier else m.kind
    return f"{domain_name}-{m.kind}", name, tags


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
    callbacks = [last_cb, best_cb, throughput, ResumeState(), LastValidation()]  # a resume goes on where it stopped
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
    trainer.fit(module, datamodule=dm, ckpt_path=ckpt_path, weights_only=True)
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
    kind = spec.model.kind
    flat = {k: round(float(v), 6) for d in metrics for k, v in d.items()}
    if kind == "verifier":
        meta["threshold"] = float(module.threshold)
        flat = {"threshold": meta["threshold"], **{f"{s}/{k}": v for s, r in module.reports.items()
                                                    for k, v in r.items()}}
    meta.update(domain=domain.name, tokenizer=tokenizer_kind(tokenizer), metrics=flat,
                config=spec.record(), best_checkpoint=best)
    if kind in ("generator", "verifier"):  # the names a planner renames each instance's objects to
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
