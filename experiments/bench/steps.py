"""The timed training loop the training-step benchmarks share (``bench_precision``, ``bench_compile``)."""

from __future__ import annotations

import time
from collections.abc import Callable

import torch


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
