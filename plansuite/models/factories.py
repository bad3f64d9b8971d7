"""The tokenizers and backbones every model kind starts from: :func:`make_tokenizer` (the atom
tokenizer of a dataset's objects, or a pretrained one), :func:`make_model` (a tiny or a
pretrained GPT-2 with a causal or classifier head) and :func:`start_from_export` (an export's
weights and tokenizer). Torch-free to import; the builders of :mod:`plansuite.models.kinds` call
them. (NL -> PDDL's text tokenizer: :func:`plansuite.nl2pddl.models.text_datamodules.make_text_tokenizer`.)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from plansuite.errors import ConfigError
from plansuite.pddl.model import Domain

INITS = ("base", "generator")


def optim_defaults(lr: float, warmup_steps: int) -> Callable:
    """A kind's default ``optim`` group (a dataclass field's default factory)."""
    from plansuite.models.optim import OptimConfig

    return lambda: OptimConfig(lr=lr, weight_decay=0.0, warmup_steps=warmup_steps)


def check_init(init: str) -> None:
    if init not in INITS:
        raise ConfigError(f"model.init '{init}': unknown (choose from {', '.join(INITS)})")


def make_tokenizer(backbone, domain: Domain, data_dir: Path):
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


def make_model(backbone, head: str, tokenizer, labels: dict[int, str] | None = None):
    from plansuite.models.backbone import pretrained_model, tiny_model

    if backbone.name == "tiny":
        return tiny_model(backbone, head, tokenizer, labels)
    if backbone.name == "pretrained":
        if not backbone.path:
            raise ConfigError("model.backbone.name=pretrained: set model.backbone.path")
        return pretrained_model(backbone.path, head, tokenizer, labels)
    raise ConfigError(f"model.backbone.name '{backbone.name}': unknown (choose from tiny, pretrained)")


def start_from_export(export_dir: str, head: str, labels: dict[int, str] | None = None):
    """(tokenizer, model) with an export's weights and tokenizer (a new head for ``classifier``)."""
    from plansuite.models.backbone import pretrained_model
    from plansuite.models.tokenizer import load_pretrained_tokenizer

    tokenizer = load_pretrained_tokenizer(export_dir)
    return tokenizer, pretrained_model(export_dir, head, tokenizer, labels)
