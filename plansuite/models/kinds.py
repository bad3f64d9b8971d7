"""What a model kind gives :func:`plansuite.training.train`: the plug-in interface.

A model kind is one module holding its config dataclass (the keys of ``conf/model/<kind>.yaml``),
its LightningModule and a builder, exported as ``KIND = ModelKind(Config, build)``.
``plansuite-train`` finds it by ``model.kind``: a built-in name
(:data:`plansuite.training.MODEL_KINDS`) or the dotted path of any importable module, the way
``planner.loop`` finds a loop module. ``tests/toy_kind.py`` is a complete example.

The builder gets its own config and the run's :class:`RunContext` (never the whole training
spec) and returns :class:`Built`: the LightningModule, the DataModule, the tokenizer and the
export metadata known before training. Torch-free: the heavy imports stay inside builders.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from plansuite.pddl.model import Domain


@dataclass
class Monitor:
    """The validation metric that picks ``checkpoints/best.ckpt``."""

    metric: str = "val/loss"
    mode: str = "min"  # min | max


class RunContext(NamedTuple):
    """What a builder knows of its run besides its own config."""

    data_dir: Path
    out_dir: Path
    domain: Domain
    seed: int = 0
    num_workers: int = 0
    record: dict | None = None  # the resolved training config the module's checkpoints carry


class Built(NamedTuple):
    module: Any  # LightningModule
    datamodule: Any  # LightningDataModule
    tokenizer: Any
    meta: dict  # export metadata (plansuite.json) known before training


def flat_metrics(module, metrics: list[dict]) -> dict:
    """The validation metrics of the exported weights, as ``results.json`` and the export keep
    them (the default :attr:`ModelKind.metrics`)."""
    return {k: round(float(v), 6) for d in metrics for k, v in d.items()}


def default_tags(config) -> dict:
    """Run tags beyond domain, dataset, kind and seed (the default :attr:`ModelKind.tags`)."""
    return {"backbone": config.backbone.name}


@dataclass(frozen=True)
class ModelKind:
    """One model kind: its settings, how to build it, and what its run reports."""

    config: type  # a dataclass with ``kind``, ``epochs`` and ``monitor`` fields
    build: Callable[[Any, RunContext], Built]
    # (module, validation metrics of the exported weights) -> results.json's metrics; a kind
    # that stores more in its export (the verifier's threshold) adds it to ``module``'s meta
    metrics: Callable[[Any, list[dict]], dict] = flat_metrics
    tags: Callable[[Any], dict] = default_tags  # config -> extra run tags (W&B)
    name: Callable[[Any], str] | None = None  # config -> the run's name (None: the kind)
    export_meta: Callable[[Any], dict] | None = None  # module -> meta known after training
    object_names: bool = False  # the export records the names a planner renames objects to
