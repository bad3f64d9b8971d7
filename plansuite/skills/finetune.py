"""How the rounds load a generator and finetune a candidate: exports and :func:`plansuite.training.train`.

The round loop (:mod:`plansuite.skills.rounds`) only needs two things from a finetuner, so tests
can swap in scripted generators and a fake finetuning step:

- ``generator(name) -> Generator``: the planner-side generator for a generator name;
- ``finetune(base, transitions, out_dir, seed) -> name``: a candidate trained from ``base`` on
  the JSONL of (prompt, completion) transitions, written under ``out_dir``; resumable.

:class:`ExportFinetuner` is the real one: names are export directories, and finetuning is a
generator training run (:func:`plansuite.training.train`) started from ``base``
(``model.finetune.init_from``) on the transitions mixed with the dataset's own training
transitions (:func:`plansuite.data.generator_recipes.mix_examples`), one epoch of ``steps * batch_size``
examples.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from plansuite.errors import ConfigError
from plansuite.models.generator import GeneratorConfig
from plansuite.planning.protocols import Generator
from plansuite.training import CPU_TRAINER, TrainSpec


class Finetuner(Protocol):
    def generator(self, name: str) -> Generator: ...

    def finetune(self, base: str, transitions: Path, out_dir: Path, seed: int) -> str: ...


@dataclass
class FinetuneSettings:
    """``finetune:`` in ``conf/skills.yaml``: one expert-iteration step."""

    steps: int = 300  # optimizer steps per candidate
    batch_size: int = 32
    lr: float = 5.0e-4
    warmup_steps: int = 20
    original_fraction: float = 0.5  # share of the dataset's training transitions in the mix
    val_greedy: int = 32  # validation transitions decoded greedily after training
    overrides: list[str] = field(default_factory=list)  # plansuite-train overrides of the template

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1:
            raise ConfigError("finetune.steps and finetune.batch_size must be >= 1")
        if not 0.0 <= self.original_fraction < 1.0:
            raise ConfigError(f"finetune.original_fraction={self.original_fraction}: must be in "
                              "[0, 1) (the rest of the mix are the skills' transitions)")


# The template's trainer keys that belong to one run (they follow each candidate's own run).
RUN_TRAINER_KEYS = ("default_root_dir", "max_epochs")
QUIET_TRAINER = {**CPU_TRAINER, "enable_progress_bar": False, "num_sanity_val_steps": 0}


def finetune_spec(template: TrainSpec, settings: FinetuneSettings, data_dir: Path, base: str,
                  transitions: Path, out_dir: Path, seed: int) -> TrainSpec:
    """The candidate's training run: ``template`` (a generator run) started from ``base``."""
    s = settings
    model: GeneratorConfig = template.model
    finetune = replace(model.finetune, init_from=base, extra=str(transitions),
                       original_fraction=s.original_fraction, examples=s.steps * s.batch_size)
    model = replace(model, finetune=finetune, epochs=1, batch_size=s.batch_size,
                    optim=replace(model.optim, lr=s.lr, warmup_steps=s.warmup_steps),
                    val_greedy=s.val_greedy)
    resume = "last" if (out_dir / "checkpoints" / "last.ckpt").is_file() else None
    trainer = {k: v for k, v in template.trainer.items() if k not in RUN_TRAINER_KEYS}
    return replace(template, data_dir=data_dir, out_dir=out_dir, model=model, trainer=trainer,
                   seed=seed, ckpt_path=resume, checkpoint_every_n_steps=max(1, s.steps // 4),
                   logger=None, config=None)


class ExportFinetuner:
    """Generators are export directories; candidates are trained from ``template``.

    ``template`` is a generator training run whose settings every candidate shares (trainer,
    backbone-independent model settings); ``plansuite-skills`` composes it from
    ``conf/train.yaml`` with ``finetune.overrides``; the default is the CPU preset, quiet.
    """

    def __init__(self, data_dir: str | Path, settings: FinetuneSettings, device: str = "cpu",
                 template: TrainSpec | None = None):
        self.data_dir, self.settings, self.device = Path(data_dir), settings, device
        self.template = template or TrainSpec(self.data_dir, Path("."), GeneratorConfig(),
                                              dict(QUIET_TRAINER))

    def generator(self, name: str) -> Generator:
        from plansuite.planning.adapters import load_generator

        return load_generator(str(name), self.device)

    def finetune(self, base: str, transitions: Path, out_dir: Path, seed: int) -> str:
        from plansuite.training import train

        export = out_dir / "export"
        if (out_dir / "results.json").is_file() and export.is_dir():
            return str(export)  # finished before a kill
        train(finetune_spec(self.template, self.settings, self.data_dir, base, transitions,
                            out_dir, seed))
        return str(export)
