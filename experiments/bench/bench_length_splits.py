"""Problem-generator training steps with ``model.length_splits`` 1, 2, 4 and 8, side by side.

``model.length_splits=k`` (:func:`~plansuite.nl2pddl.models.problem_generator_module.completion_loss`)
computes a right-padded batch as up to ``k`` runs of rows of similar length, each cut to its own
longest row: the loss and gradient of the whole batch, with less padding computed. Measured here
on the problem generator as ``make nl2pddl-cpu`` trains it (tiny text GPT-2 3 x 128, vocabulary
2 048, batches of 8, completion loss on each row's second half, clipping, AdamW) with pair lengths
drawn like the Blocksworld dataset's: a third short abstract pairs (90-160 tokens), the rest
explicit ones (180-500). Same initial weights and batches for every side; rounds alternate
sides so machine load hits all of them.

Reported: tokens/s of real (unpadded) tokens per round and side, each side's best round over
``length_splits=1``'s, and the share of computed positions that are padding for each side.

Run: ``python -m experiments.bench length_splits`` (or ``make bench``).
"""

from __future__ import annotations

import torch
from transformers import GPT2LMHeadModel

from experiments.bench.steps import VOCAB, problem_generator_model, training_tokens_per_s
from plansuite.nl2pddl.models.problem_generator_module import completion_loss, length_runs

STEPS, WARM, ROUNDS = 16, 2, 3  # steps per round, steps excluded from timing, rounds per side
BATCH = 8  # the problem generator's batches as make nl2pddl-cpu trains it
SPLITS = (1, 2, 4, 8)
Batch = tuple[torch.Tensor, torch.Tensor]  # (input ids, attention mask), right-padded


def pair_length(rng: torch.Generator) -> int:
    if float(torch.rand(1, generator=rng)) < 1 / 3:
        return int(torch.randint(90, 161, (1,), generator=rng))
    return int(torch.randint(180, 501, (1,), generator=rng))


def batches(rng: torch.Generator) -> list[Batch]:
    out = []
    for _ in range(STEPS):
        lengths = [pair_length(rng) for _ in range(BATCH)]
        ids = torch.randint(1, VOCAB, (BATCH, max(lengths)), generator=rng)
        mask = torch.zeros_like(ids)
        for row, n in enumerate(lengths):
            mask[row, :n] = 1
        out.append((ids.masked_fill(mask == 0, 0), mask))
    return out


def loss_for(splits: int):
    def loss_of(model: GPT2LMHeadModel, batch: Batch) -> torch.Tensor:
        ids, mask = batch
        labels = ids.masked_fill(mask == 0, -100)
        labels[:, : ids.shape[1] // 4] = -100  # the prompt
        return completion_loss(model, ids, mask, labels, length_splits=splits)
    return loss_of


def padding_share(stream: list[Batch], splits: int) -> float:
    computed = real = 0
    for _, mask in stream:
        lengths = mask.sum(dim=1).tolist()
        real += sum(lengths)
        computed += sum(len(run) * max(lengths[i] for i in run) for run in length_runs(lengths, splits))
    return 1 - real / computed


def main() -> dict:
    rng = torch.Generator().manual_seed(0)
    rates: dict[int, list[float]] = {k: [] for k in SPLITS}
    stream: list[Batch] = []
    for r in range(ROUNDS):
        print(f"[bench length_splits] round {r + 1}/{ROUNDS}", flush=True)
        stream = batches(rng)
        for k in SPLITS:
            rates[k].append(training_tokens_per_s(problem_generator_model(), stream, loss_for(k), WARM,
                                                  tokens_of=lambda b: int(b[1].sum())))
    return {"threads": torch.get_num_threads(),
            "real_tokens_per_s": {k: [round(x) for x in v] for k, v in rates.items()},
            "over_one_run": {k: round(max(rates[k]) / max(rates[1]), 3) for k in SPLITS},
            "padding_share": {k: round(padding_share(stream, k), 3) for k in SPLITS}}
