"""The problem generator: a causal LM that completes ``DESCRIPTION: ... PROBLEM:`` with a problem.

Training is the transition generator's (:class:`~plansuite.models.generator.GeneratorModule`:
loss on the completion, AdamW with warm-up); only validation differs. Besides the token loss it
decodes a fixed subset of validation pairs greedily and scores the problems against their
references offline (:func:`plansuite.nl2pddl.equivalence.compare`): ``val/parse``,
``val/structural`` and ``val/semantic`` rates. These are progress indicators; the experiment's
numbers come from ``plansuite-nl2pddl task=repair``.
"""

from __future__ import annotations

import torch
from torchmetrics import MeanMetric

from plansuite.models.generator import GeneratorModule
from plansuite.models.inference import GeneratorPolicy
from plansuite.nl2pddl.equivalence import compare
from plansuite.nl2pddl.generators import extract_problem
from plansuite.pddl.parse import parse_problem

VAL_FLAGS = ("parse", "structural", "semantic")


LOSS_NORMS = ("batch", "dataset")


def completion_loss(model, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    labels: torch.Tensor, tokens: float | None = None) -> torch.Tensor:
    """The causal LM's mean cross-entropy over the labelled (completion) tokens -- the loss
    ``model(..., labels=labels).loss`` computes -- with the output layer applied to those
    positions only. The description is about half of a pair's tokens, and a GPT-2 computes
    vocabulary logits for every position: a fifth of a tiny model's forward pass spent on
    predictions no loss reads.

    ``tokens`` set: the summed cross-entropy divided by this fixed count instead of by the batch's
    own token count, so that every token weighs the same in every batch. A mean over the batch
    gives each token of a batch of short pairs more weight than one of a batch of long pairs:
    harmless when batches are random, a bias when they are grouped by length."""
    hidden = model.base_model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    targets = labels[:, 1:]  # position i predicts token i + 1
    read = targets != -100
    logits = model.get_output_embeddings()(hidden[:, :-1][read])
    if tokens is None:
        return torch.nn.functional.cross_entropy(logits.float(), targets[read])
    return torch.nn.functional.cross_entropy(logits.float(), targets[read], reduction="sum") / tokens


class ProblemGeneratorModule(GeneratorModule):
    """``tokens_per_batch`` set: the training loss is the batch's summed token cross-entropy over
    this fixed count (:func:`completion_loss`); validation loss stays a mean, comparable across runs."""

    def __init__(self, *args, tokens_per_batch: float | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.val_greedy = torch.nn.ModuleDict({flag: MeanMetric() for flag in VAL_FLAGS})
        self.tokens_per_batch = tokens_per_batch

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
        loss = completion_loss(self.model, batch["input_ids"], batch["attention_mask"], batch["labels"],
                               self.tokens_per_batch)
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx: int, dataloader_idx: int = 0) -> None:
        if dataloader_idx == 0:
            return super().validation_step(batch, batch_idx, dataloader_idx)
        pairs = [self.trainer.datamodule.greedy_records[i] for i in batch.tolist()]
        policy = GeneratorPolicy(self.model, self.tokenizer, self.max_new_tokens)
        texts = [g.text for g in policy.generate([p.prompt for p in pairs], temperature=0)]
        for pair, text in zip(pairs, texts, strict=True):
            reference = parse_problem(pair.problem, self.domain, source=pair.id)
            result = compare(reference, extract_problem(text), self.domain, f"{pair.id} (generated)")
            for flag in VAL_FLAGS:
                self.val_greedy[flag].update(float(getattr(result, flag) is True))

