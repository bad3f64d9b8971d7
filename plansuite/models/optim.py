"""AdamW with linear warm-up and linear decay to zero (what the paper's Hugging Face scripts used)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import get_linear_schedule_with_warmup


@dataclass
class OptimConfig:
    lr: float = 1e-3
    weight_decay: float = 0.0
    warmup_steps: int = 100
    betas: tuple[float, float] = (0.9, 0.999)

    def __post_init__(self) -> None:
        self.betas = tuple(self.betas)  # a composed config gives a list


def adamw_with_warmup(params, cfg: OptimConfig, total_steps: int) -> dict:
    """The ``configure_optimizers`` answer: optimizer plus a per-step scheduler."""
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay, betas=tuple(cfg.betas))
    sched = get_linear_schedule_with_warmup(opt, min(cfg.warmup_steps, max(total_steps - 1, 0)),
                                            max(total_steps, 1))
    return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}
