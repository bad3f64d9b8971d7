"""``plansuite-train`` for the NL→PDDL models: ``model=problem_generator`` and ``model=critic``.

Both read an NL→PDDL dataset (``plansuite-nl2pddl task=data``). Tokenizer (``model.backbone.tokenizer``):
``corpus`` trains a byte-level BPE of ``model.vocab_size`` tokens on the training split
(:mod:`plansuite.models.text_tokenizer`; the tiny backbones), ``bpe`` loads the pretrained
backbone's own (``model/backbone=gpt2``). The critic can start from a problem-generator export
(``model.init=generator model.generator_dir=G/export``: its weights and tokenizer, a new head).
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from plansuite.cli.train import INITS, make_model, make_tokenizer
from plansuite.errors import ConfigError
from plansuite.pddl.model import Domain


def text_tokenizer(backbone, vocab_size: int, data_dir: Path, kind: str, domain: Domain):
    from plansuite.models.text_data import text_corpus
    from plansuite.models.text_tokenizer import train_text_tokenizer

    if backbone.tokenizer == "corpus":
        return train_text_tokenizer(text_corpus(data_dir, kind), vocab_size, max_length=backbone.n_positions)
    if backbone.tokenizer == "atom":
        raise ConfigError("model.backbone.tokenizer=atom: one token per ground atom cannot spell "
                          "descriptions; use corpus (model/backbone=tiny_text) or bpe (model/backbone=gpt2)")
    return make_tokenizer(backbone, domain, data_dir)


def build_nl2pddl(cfg: DictConfig, domain: Domain, data_dir: Path, resolved: dict):
    """(module, datamodule, tokenizer, export meta) for the two NL→PDDL model kinds."""
    from plansuite.models.backbone import BackboneConfig, pretrained_model
    from plansuite.models.critic import CriticModule
    from plansuite.models.export import read_meta
    from plansuite.models.optim import OptimConfig
    from plansuite.models.problem_generator import ProblemGeneratorModule
    from plansuite.models.text_data import CriticDataModule, ProblemDataModule
    from plansuite.models.tokenizer import load_pretrained_tokenizer
    from plansuite.nl2pddl.critic import CRITIC_LABELS
    from plansuite.nl2pddl.dataset import load_nl2pddl_manifest

    load_nl2pddl_manifest(data_dir)
    m = cfg.model
    backbone = BackboneConfig(**OmegaConf.to_container(m.backbone, resolve=True))
    optim = OptimConfig(**OmegaConf.to_container(m.optim, resolve=True))
    if m.kind == "problem_generator":
        tokenizer = text_tokenizer(backbone, m.vocab_size, data_dir, m.kind, domain)
        model = make_model(backbone, "causal", tokenizer)
        dm = ProblemDataModule(data_dir, tokenizer, model.config.n_positions, m.batch_size,
                               m.loss_on, m.val_greedy, num_workers=cfg.num_workers, seed=cfg.seed)
        dm.setup()  # data problems surface now, as one line, before any training
        max_new = m.get("max_new_tokens") or 2 * dm.max_completion
        module = ProblemGeneratorModule(model, tokenizer, domain, optim, max_new, resolved)
        return module, dm, tokenizer, {"kind": m.kind, "max_new_tokens": max_new}
    labels = dict(enumerate(CRITIC_LABELS))
    if m.init not in INITS:
        raise ConfigError(f"model.init '{m.init}': unknown (choose from {', '.join(INITS)})")
    if m.init == "generator":
        if not m.generator_dir:
            raise ConfigError("model.init=generator: set model.generator_dir to a problem_generator export")
        gen_meta = read_meta(m.generator_dir, "problem_generator")
        if gen_meta.get("domain") != domain.name:
            raise ConfigError(f"{m.generator_dir}: problem generator for domain "
                              f"'{gen_meta.get('domain')}', dataset is '{domain.name}'")
        tokenizer = load_pretrained_tokenizer(m.generator_dir)
        model = pretrained_model(m.generator_dir, "classifier", tokenizer, labels)
    else:
        tokenizer = text_tokenizer(backbone, m.vocab_size, data_dir, m.kind, domain)
        model = make_model(backbone, "classifier", tokenizer, labels)
    dm = CriticDataModule(data_dir, tokenizer, model.config.n_positions, m.batch_size, cfg.num_workers)
    dm.setup()
    module = CriticModule(model, optim, resolved)
    return module, dm, tokenizer, {"kind": m.kind, "labels": list(CRITIC_LABELS), "init": m.init,
                                   "generator_dir": str(Path(m.generator_dir)) if m.generator_dir else None}
