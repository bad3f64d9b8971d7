"""The problem generator: a causal LM that completes ``DESCRIPTION: ... PROBLEM:`` with a problem.

Training is the transition generator's (:class:`~plansuite.models.generator.GeneratorModule`:
loss on the completion, AdamW with warm-up); only validation differs. Besides the token loss it
decodes a fixed subset of validation pairs greedily and scores the problems against their
references offline (:func:`plansuite.nl2pddl.judging.equivalence.compare`): ``val/parse``,
``val/structural`` and ``val/semantic`` rates. These are progress indicators; the experiment's
numbers come from ``plansuite-nl2pddl task=repair``.
"""

from __future__ import annotations

import torch
from torchmetrics import MeanMetric

from plansuite.models.generator import GeneratorModule
from plansuite.models.inference import GeneratorPolicy
from plansuite.nl2pddl.decoding.generators import extract_problem
from plansuite.nl2pddl.judging.equivalence import compare
from plansuite.pddl.parse import parse_problem

VAL_FLAGS = ("parse", "structural", "semantic")


LOSS_NORMS = ("batch", "dataset")


def length_runs(lengths: list[int], parts: int) -> list[list[int]]:
    """Row indices of a batch cut into at most ``parts`` runs of similar length: the rows sorted
    by length, cut where the runs, each padded to its own longest row, compute the fewest
    positions (the count the whole batch pads to is ``len(lengths) * max(lengths)``).

    >>> length_runs([500, 100, 120, 110, 480, 90, 100, 105], 2)
    [[5, 1, 6, 7, 3, 2], [4, 0]]
    >>> length_runs([300, 100], 1)
    [[1, 0]]
    """
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    size = [lengths[i] for i in order]
    n = len(order)
    # best[k][j]: fewest positions computing the j shortest rows in k runs; cut[k][j]: its last run's start
    best = [[0.0] + [float("inf")] * n for _ in range(parts + 1)]
    cut = [[0] * (n + 1) for _ in range(parts + 1)]
    for k in range(1, parts + 1):
        for j in range(1, n + 1):
            for i in range(k - 1, j):
                cost = best[k - 1][i] + (j - i) * size[j - 1]
                if cost < best[k][j]:
                    best[k][j], cut[k][j] = cost, i
    k = min(range(1, parts + 1), key=lambda k: (best[k][n], k))  # fewer runs on a tie
    runs, j = [], n
    while k:
        i = cut[k][j]
        runs.append(order[i:j])
        k, j = k - 1, i
    return [r for r in reversed(runs) if r]


def completion_loss(model, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    labels: torch.Tensor, tokens: float | None = None, length_splits: int = 1) -> torch.Tensor:
    """The causal LM's mean cross-entropy over the labelled (completion) tokens -- the loss
    ``model(..., labels=labels).loss`` computes -- with the output layer applied to those
    positions only. The description is about half of a pair's tokens, and a GPT-2 computes
    vocabulary logits for every position: a fifth of a tiny model's forward pass spent on
    predictions no loss reads.

    ``tokens`` set: the summed cross-entropy divided by this fixed count instead of by the batch's
    own token count, so that every token weighs the same in every batch. A mean over the batch
    gives each token of a batch of short pairs more weight than one of a batch of long pairs:
    harmless when batches are random, a bias when they are grouped by length.

    ``length_splits`` > 1: the (right-padded) batch goes through the model as up to that many
    runs of rows of similar length (:func:`length_runs`), each cut to its own longest row. A
    row's tokens see only its own earlier tokens, so the loss and its gradient are the whole
    batch's (to float rounding); only the padding positions are not computed. A random batch of
    8 Blocksworld pairs is about a third padding."""
    parts: list[tuple[torch.Tensor | slice, int]] = [(slice(None), input_ids.shape[1])]  # the batch as it is
    if length_splits > 1:
        lengths = attention_mask.sum(dim=1).tolist()
        parts = [(torch.tensor(run), max(lengths[r] for r in run)) for run in length_runs(lengths, length_splits)]
    total = input_ids.new_zeros((), dtype=torch.float32)
    for rows, width in parts:
        hidden = model.base_model(input_ids=input_ids[rows, :width],
                                  attention_mask=attention_mask[rows, :width]).last_hidden_state
        targets = labels[rows, 1:width]  # position i predicts token i + 1
        read = targets != -100
        logits = model.get_output_embeddings()(hidden[:, :-1][read])
        total = total + torch.nn.functional.cross_entropy(logits.float(), targets[read], reduction="sum")
    return total / (tokens if tokens is not None else (labels[:, 1:] != -100).sum())


class ProblemGeneratorModule(GeneratorModule):
    """``tokens_per_batch`` set: the training loss is the batch's summed token cross-entropy over
    this fixed count (:func:`completion_loss`); validation loss stays a mean, comparable across runs.
    ``length_splits``: training batches computed in runs of similar length (same loss, less padding)."""

    def __init__(self, *args, tokens_per_batch: float | None = None, length_splits: int = 1, **kwargs):
        super().__init__(*args, **kwargs)
        self.val_greedy = torch.nn.ModuleDict({flag: MeanMetric() for flag in VAL_FLAGS})
        self.tokens_per_batch, self.length_splits = tokens_per_batch, length_splits

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
        loss = completion_loss(self.model, batch["input_ids"], batch["attention_mask"], batch["labels"],
                               self.tokens_per_batch, self.length_splits)
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

