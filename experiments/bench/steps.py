"""What the training-step benchmarks share: the timed loop (``bench_precision``, ``bench_compile``)
and the problem generator as ``make nl2pddl-cpu`` trains it (``bench_compile``)."""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
from transformers import GPT2Config, GPT2LMHeadModel

VOCAB, POSITIONS = 2048, 512  # the problem generator's corpus tokenizer and context


def problem_generator_model() -> GPT2LMHeadModel:
    """The tiny text GPT-2 (3 x 128) the NL -> PDDL problem generator trains, the same weights every call."""
    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=POSITIONS, n_embd=128, n_layer=3,
                                      n_head=4, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                      bos_token_id=0, eos_token_id=0))


def training_tokens_per_s(model: torch.nn.Module, batches: list[torch.Tensor],
                          loss_of: Callable[[torch.nn.Module, torch.Tensor], torch.Tensor], warm: int) -> float:
    """Tokens per second (padding included) of training steps as the CLI takes them (forward via
    ``loss_of(model, batch)``, backward, clipping, AdamW) over all but the first ``warm`` batches."""
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    start, tokens = 0.0, 0
    for i, batch in enumerate(batches):
        if i == warm:
            start = time.perf_counter()
        tokens += batch.numel() if i >= warm else 0
        loss = loss_of(model, batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()
    return tokens / (time.perf_counter() - start)
