"""The timed training loop the training-step benchmarks share (``bench_precision``, ``bench_compile``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch


def training_tokens_per_s(model: torch.nn.Module, batches: list[Any],
                          loss_of: Callable[[torch.nn.Module, Any], torch.Tensor], warm: int,
                          tokens_of: Callable[[Any], int] = torch.Tensor.numel) -> float:
    """Tokens per second of training steps as the CLI takes them (forward via
    ``loss_of(model, batch)``, backward, clipping, AdamW) over all but the first ``warm`` batches;
    ``tokens_of(batch)`` counts a batch's tokens (default: every position, padding included)."""
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    start, tokens = 0.0, 0
    for i, batch in enumerate(batches):
        if i == warm:
            start = time.perf_counter()
        tokens += tokens_of(batch) if i >= warm else 0
        loss = loss_of(model, batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()
    return tokens / (time.perf_counter() - start)
