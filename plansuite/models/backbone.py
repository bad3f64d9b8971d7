"""Backbones: a ``tiny`` GPT-2 built from ``GPT2Config`` or a pretrained one from a directory.

Both go through the Auto classes (``from_config`` / ``from_pretrained``), so the pretrained path
is the same code whether it reads the hub's ``gpt2``, a local ``save_pretrained`` directory, or a
plansuite generator export (that is how V_generator starts from the generator's weights).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from transformers import (
    AutoModelForCausalLM,
    AutoModelForSequenceClassification,
    GPT2Config,
    PretrainedConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from plansuite.errors import ConfigError

HEADS = ("causal", "classifier")
VERIFIER_LABELS = {0: "invalid", 1: "valid"}


@dataclass
class BackboneConfig:
    """``name=tiny`` builds a fresh GPT-2 of the given size; ``name=pretrained`` loads ``path``."""

    name: str = "tiny"
    tokenizer: str = "atom"  # atom | bpe (pretrained backbones bring their own tokenizer)
    path: str | None = None  # hub id or local directory, for name=pretrained
    n_layer: int = 3
    n_embd: int = 128
    n_head: int = 4
    n_positions: int = 256
    dropout: float = 0.0
    activation: str = "gelu"


def _head_kwargs(head: str, tokenizer: PreTrainedTokenizerBase, labels: dict[int, str] | None = None) -> dict:
    kw = {"pad_token_id": tokenizer.pad_token_id, "eos_token_id": tokenizer.eos_token_id,
          "bos_token_id": tokenizer.eos_token_id}
    if head == "classifier":
        labels = labels or VERIFIER_LABELS
        kw.update(num_labels=len(labels), id2label=labels,
                  label2id={v: k for k, v in labels.items()},
                  problem_type="single_label_classification")
    return kw


def _auto_class(head: str):
    if head not in HEADS:
        raise ValueError(f"head must be one of {HEADS}")
    return AutoModelForCausalLM if head == "causal" else AutoModelForSequenceClassification


def tiny_model(cfg: BackboneConfig, head: str, tokenizer: PreTrainedTokenizerBase,
               labels: dict[int, str] | None = None) -> PreTrainedModel:
    """A fresh GPT-2 sized by ``cfg`` whose vocabulary is the tokenizer's (a classifier head has
    ``labels``, id -> name; the verifier's two by default)."""
    if cfg.n_embd % cfg.n_head:
        raise ConfigError(f"model.backbone: n_embd={cfg.n_embd} is not divisible by n_head={cfg.n_head}")
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=cfg.n_positions, n_embd=cfg.n_embd,
                        n_layer=cfg.n_layer, n_head=cfg.n_head, activation_function=cfg.activation,
                        resid_pdrop=cfg.dropout, embd_pdrop=cfg.dropout, attn_pdrop=cfg.dropout,
                        **_head_kwargs(head, tokenizer, labels))
    return _with_loss_type(_auto_class(head).from_config(config), head)


def context_length(config: PretrainedConfig) -> int:
    """The most tokens ``config``'s model reads at once (GPT-2's ``n_positions``; a pretrained
    backbone of another family may call it ``max_position_embeddings``)."""
    return getattr(config, "n_positions", None) or config.max_position_embeddings


def pretrained_model(path: str | Path, head: str, tokenizer: PreTrainedTokenizerBase,
                     labels: dict[int, str] | None = None) -> PreTrainedModel:
    """Weights from ``path`` (hub id or directory); a new head when the saved one differs."""
    try:
        model = _auto_class(head).from_pretrained(str(path), **_head_kwargs(head, tokenizer, labels))
    except OSError as exc:
        raise missing_backbone(path) from exc
    except ValueError as exc:  # e.g. a config that is not a GPT-2 family model
        raise ConfigError(f"{path}: cannot load as a {head} model ({str(exc).splitlines()[0][:160]})") from exc
    check_vocab(model, tokenizer, path)
    return _with_loss_type(model.train(), head)  # from_pretrained returns eval mode (no dropout)


def _with_loss_type(model: PreTrainedModel, head: str) -> PreTrainedModel:
    # GPT2LMHeadModel's class name does not tell transformers which loss it uses (it warns).
    model.loss_type = "ForCausalLM" if head == "causal" else "ForSequenceClassification"
    return model


def missing_backbone(path: str | Path) -> ConfigError:
    if Path(str(path)).exists():
        return ConfigError(f"{path}: not a model directory (no config.json / weights from save_pretrained)")
    offline = os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false")
    where = "the Hugging Face hub is offline (HF_HUB_OFFLINE=1)" if offline else "not on the hub"
    return ConfigError(f"backbone '{path}': not found locally and {where}; use model/backbone=tiny, "
                       "or set model.backbone.path to a local save_pretrained directory")


def add_tokens(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
               tokens: tuple[str, ...]) -> None:
    """Add ``tokens`` (e.g. a verifier input's extra markers) to the tokenizer and grow the
    model's embedding to match; tokens the tokenizer already has are left alone."""
    if tokens and tokenizer.add_tokens([t for t in tokens if t not in tokenizer.get_vocab()]):
        model.resize_token_embeddings(len(tokenizer))


def check_vocab(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, source) -> None:
    rows = model.get_input_embeddings().weight.shape[0]
    if len(tokenizer) > rows:
        raise ConfigError(f"{source}: tokenizer has {len(tokenizer)} tokens but the model's "
                          f"embedding has {rows} rows (tokenizer/model mismatch)")
