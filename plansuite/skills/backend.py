"""How the rounds load a generator and finetune a candidate: exports and ``plansuite-train``.

The round loop (:mod:`plansuite.skills.rounds`) only needs two things from a backend, so tests
can swap in scripted generators and a fake finetuning step:

- ``generator(name) -> Generator``: the planner-side generator for a generator name;
- ``finetune(base, transitions, out_dir, seed) -> name``: a candidate trained from ``base`` on
  the JSONL of (prompt, completion) transitions, written under ``out_dir``; resumable.

:class:`ExportBackend` is the real one: names are export directories, and finetuning is a
``plansuite-train model=generator`` run started from ``base`` (``model.finetune.init_from``) on
the transitions mixed with the dataset's own training transitions
(:func:`plansuite.models.data.mix_examples`), one epoch of ``steps * batch_size`` examples.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from plansuite.errors import ConfigError
from plansuite.planning.protocols import Generator


class Backend(Protocol):
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
    overrides: list[str] = field(default_factory=list)  # extra plansuite-train overrides

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1:
            raise ConfigError("finetune.steps and finetune.batch_size must be >= 1")
        if not 0.0 <= self.original_fraction < 1.0:
            raise ConfigError(f"finetune.original_fraction={self.original_fraction}: must be in "
                              "[0, 1) (the rest of the mix are the skills' transitions)")


def compose_train(overrides: list[str]):
    """``conf/train.yaml`` with ``overrides``, inside a Hydra app or outside one."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from plansuite.cli import CONF_DIR

    if GlobalHydra.instance().is_initialized():  # inside plansuite-skills' @hydra.main
        return compose(config_name="train", overrides=overrides)
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose(config_name="train", overrides=overrides)


class ExportBackend:
    def __init__(self, data_dir: str | Path, settings: FinetuneSettings, device: str = "cpu"):
        self.data_dir, self.settings, self.device = Path(data_dir), settings, device

    def generator(self, name: str) -> Generator:
        from plansuite.planning.adapters import load_generator

        return load_generator(str(name), self.device)

    def train_overrides(self, base: str, transitions: Path, out_dir: Path, seed: int) -> list[str]:
        s = self.settings
        resume = "last" if (out_dir / "checkpoints" / "last.ckpt").is_file() else "null"
        return ["model=generator", f"data_dir={self.data_dir}", f"out_dir={out_dir}",
                f"seed={seed}", f"ckpt_path={resume}", "logger=none",
                "trainer.enable_progress_bar=false", "trainer.num_sanity_val_steps=0",
                f"model.finetune.init_from={base}", f"model.finetune.extra={transitions}",
                f"model.finetune.original_fraction={s.original_fraction}",
                f"model.finetune.examples={s.steps * s.batch_size}", "model.epochs=1",
                f"model.batch_size={s.batch_size}", f"model.optim.lr={s.lr}",
                f"model.optim.warmup_steps={s.warmup_steps}", f"model.val_greedy={s.val_greedy}",
                f"checkpoint_every_n_steps={max(1, s.steps // 4)}", *s.overrides]

    def finetune(self, base: str, transitions: Path, out_dir: Path, seed: int) -> str:
        from plansuite.cli.train import run as train

        export = out_dir / "export"
        if (out_dir / "results.json").is_file() and export.is_dir():
            return str(export)  # finished before a kill
        train.__wrapped__(compose_train(self.train_overrides(base, transitions, out_dir, seed)))
        return str(export)
