"""DataModules over an NL→PDDL dataset (:mod:`plansuite.nl2pddl.data.dataset`).

- :class:`ProblemDataModule`: text pairs for the problem generator, ``prompt`` = the description
  (:func:`~plansuite.nl2pddl.data.dataset.generation_prompt`), ``completion`` = the reference problem
  followed by ``END``; the same encoding, collation and loss masking as the transition generator
  (:class:`~plansuite.models.datamodules.GeneratorDataModule`, which this extends). Its second validation
  loader yields indices into ``greedy_records``: validation pairs the module decodes greedily
  and compares with their reference.
- :class:`CriticDataModule`: labelled critic examples (reference problems and corruptions) as
  :func:`~plansuite.nl2pddl.judging.critic.critic_input` texts with class ids of the dataset's labels
  (:func:`dataset_critic_labels`: those of its training split).

:func:`text_corpus` is what the corpus tokenizer is trained on: the training split only.
"""

from __future__ import annotations

import random
from pathlib import Path

import lightning as L
import torch
from torch.utils.data import DataLoader

from plansuite.errors import ConfigError
from plansuite.models.datamodules import GeneratorDataModule, check_fits
from plansuite.models.resumable import resumable_loader
from plansuite.models.tokenizer import encode, pad_ids
from plansuite.nl2pddl.data.dataset import load_critic_examples, load_pairs
from plansuite.nl2pddl.judging.critic import MISMATCH_KINDS, critic_labels


def text_corpus(data_dir: str | Path, kind: str) -> list[str]:
    """Training texts of the dataset for a tokenizer: pairs (generator) or critic inputs."""
    if kind == "critic":
        return [e.text for e in load_critic_examples(data_dir, "train")]
    return [text for p in load_pairs(data_dir, "train") for text in (p.prompt, p.completion)]



def make_text_tokenizer(backbone, vocab_size: int, data_dir: Path, kind: str, domain):
    """NL -> PDDL: a byte-level BPE trained on the split (``corpus``), or the backbone's (``bpe``)."""
    from plansuite.models.factories import make_tokenizer
    from plansuite.nl2pddl.models.text_tokenizer import train_text_tokenizer

    if backbone.tokenizer == "corpus":
        return train_text_tokenizer(text_corpus(data_dir, kind), vocab_size, max_length=backbone.n_positions)
    if backbone.tokenizer == "atom":
        raise ConfigError("model.backbone.tokenizer=atom: one token per ground atom cannot spell "
                          "descriptions; use corpus (model/backbone=tiny_text) or bpe (model/backbone=gpt2)")
    return make_tokenizer(backbone, domain, data_dir)

def dataset_critic_labels(data_dir: str | Path) -> tuple[str, ...]:
    """The critic's classes for a dataset: ``match`` and the kinds its training split labels."""
    examples = load_critic_examples(data_dir, "train")
    labels = critic_labels(e.label for e in examples)
    unknown = [k for k in labels if k not in ("match", *MISMATCH_KINDS)]
    if unknown or labels[:1] != ("match",):
        problem = f"unknown label {unknown[0]!r}" if unknown else "no 'match' examples"
        raise ConfigError(f"{data_dir}/critic/train.jsonl: {problem}")
    return labels


class ProblemDataModule(GeneratorDataModule):
    """``abstract_repeat``: each abstract training pair appears that many times per epoch. A
    dataset has a few dozen abstract scenes beside thousands of explicit problems, so without it
    the abstract descriptions are ~2 % of what the generator reads."""

    def __init__(self, *args, abstract_repeat: int = 1, **kwargs):
        super().__init__(*args, **kwargs)
        if abstract_repeat < 1:
            raise ConfigError(f"model.abstract_repeat={abstract_repeat}: must be >= 1")
        self.abstract_repeat = abstract_repeat

    def setup(self, stage: str | None = None) -> None:
        if self.train is not None:
            return
        if self.finetune.extra or self.finetune.init_from:
            raise ConfigError("model.finetune: not supported for the problem generator")
        train, val = load_pairs(self.data_dir, "train"), load_pairs(self.data_dir, "val")
        if not train or not val:
            raise ConfigError(f"{self.data_dir}: the train and val splits need description/problem pairs")
        encoded = self.encode_pairs([(p.prompt, p.completion) for p in train])
        self.train = [e for p, e in zip(train, encoded, strict=True)
                      for _ in range(self.abstract_repeat if p.style == "abstract" else 1)]
        self.val = self.encode_pairs([(p.prompt, p.completion) for p in val])
        check_fits([len(e[0]) for e in self.train + self.val], self.context, str(self.data_dir))
        self.greedy_records = random.Random(self.seed).sample(val, min(self.greedy_n, len(val)))
        self.max_completion = max(len(e[1]) - e[1].count(-100) for e in self.train)
        self.train_counts = {"examples": len(self.train),
                             "abstract": sum(p.style == "abstract" for p in train) * self.abstract_repeat}


class CriticDataModule(L.LightningDataModule):
    def __init__(self, data_dir: str | Path, tokenizer, context: int, batch_size: int = 32,
                 num_workers: int = 0, seed: int = 0, labels: tuple[str, ...] | None = None):
        super().__init__()
        self.data_dir, self.tokenizer, self.context = data_dir, tokenizer, context
        self.labels = labels or dataset_critic_labels(data_dir)
        self.batch_size, self.num_workers, self.seed = batch_size, num_workers, seed
        self.train: list | None = None

    def _encode(self, split: str) -> list[tuple[list[int], int]]:
        examples = load_critic_examples(self.data_dir, split)
        unknown = {e.label for e in examples} - set(self.labels)
        if unknown:
            raise ConfigError(f"{self.data_dir}/critic/{split}.jsonl: label {sorted(unknown)[0]!r} "
                              f"is not among the training split's {list(self.labels)}")
        ids = encode(self.tokenizer, [e.text for e in examples])
        return [(x, self.labels.index(e.label)) for x, e in zip(ids, examples, strict=True)]

    def setup(self, stage: str | None = None) -> None:
        if self.train is not None:
            return
        self.train, self.val = self._encode("train"), self._encode("val")
        if not self.train or not self.val:
            raise ConfigError(f"{self.data_dir}: the train and val splits need critic examples")
        check_fits([len(e[0]) for e in self.train + self.val], self.context, str(self.data_dir))
        self.train_counts = {"examples": len(self.train),
                             **{k: sum(1 for _, y in self.train if y == i) for i, k in enumerate(self.labels)}}

    def train_dataloader(self) -> DataLoader:
        return resumable_loader(self.train, self.batch_size, self.seed, self._collate,
                                self.num_workers, self.trainer)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val, batch_size=self.batch_size * 2, collate_fn=self._collate,
                          num_workers=self.num_workers)

    def _collate(self, examples) -> dict:
        ids, mask = pad_ids([e[0] for e in examples], self.tokenizer.pad_token_id)  # right padding
        return {"input_ids": ids, "attention_mask": mask, "labels": torch.tensor([e[1] for e in examples])}
