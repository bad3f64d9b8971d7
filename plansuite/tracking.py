"""Experiment tracking with W&B: offline by default, so nothing needs an account or a network.

Every entrypoint calls :func:`ensure_offline_default` before touching wandb: without an API key
(``WANDB_API_KEY`` or a ``~/.netrc`` entry) and without an explicit ``WANDB_MODE``, runs are
written offline under ``<dir>/wandb/offline-run-*`` and can be uploaded later with ``wandb sync``.
Offline runs write no ``wandb-summary.json``; callers keep their own results file.
"""

from __future__ import annotations

import os
from pathlib import Path


def has_api_key() -> bool:
    if os.environ.get("WANDB_API_KEY"):
        return True
    netrc = Path.home() / ".netrc"
    return netrc.is_file() and "api.wandb.ai" in netrc.read_text(errors="ignore")


def ensure_offline_default() -> str:
    """Set ``WANDB_MODE=offline`` unless a mode is set or an API key exists; return the mode."""
    if not os.environ.get("WANDB_MODE"):
        os.environ["WANDB_MODE"] = "online" if has_api_key() else "offline"
    os.environ.setdefault("WANDB_SILENT", "true")
    return os.environ["WANDB_MODE"]


def run_tags(**fields) -> list[str]:
    """Dashboard tags as ``key:value`` strings, skipping empty values.

    >>> run_tags(planner="generator_verifier", k=25, verifier_init=None)
    ['planner:generator_verifier', 'k:25']
    """
    return [f"{k}:{v}" for k, v in fields.items() if v is not None and v != ""]
