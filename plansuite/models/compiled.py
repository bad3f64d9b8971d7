"""Training steps through ``torch.compile`` (``plansuite-train compile=true``).

The tiny GPT-2s that train on a CPU spend much of a step in small element-wise kernels (layer
norms, GELU, residual adds, attention scaling) that the eager runtime launches one by one;
Inductor fuses them into generated C++ loops. ``make bench`` (``bench_compile``) measures the
training step both ways: the NL -> PDDL generator's step is 1.1-1.2x faster compiled on the
project's 2-core CPU there, though a real random-batch run of it was not (experiments/nl2pddl/RESULTS.md).

Only the transformer body is compiled, and only where it trains (module in training mode, with
gradients): validation and generation (incremental decoding with a key/value cache, one token at
a time) run the eager body, so they neither recompile nor change. The weights are the module's
own: checkpoints and exports are those of an eager run. A compiler that cannot run here (no C++
toolchain, an unsupported op) costs one line and the run goes on eagerly, never a lost run.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import torch


def compile_for_training(model: torch.nn.Module, compiler: Callable = torch.compile) -> None:
    """Make ``model``'s transformer body (``model.base_model``) run compiled in training steps.

    ``compiler`` is ``torch.compile`` (a parameter so tests can stand in a failing one).
    """
    body = model.base_model
    eager = body.forward
    compiled = compiler(eager, dynamic=True)  # dynamic: a new batch length per step

    def forward(*args, **kwargs):
        nonlocal compiled
        if not (body.training and torch.is_grad_enabled()):
            return eager(*args, **kwargs)
        try:
            return compiled(*args, **kwargs)
        except torch._dynamo.exc.TorchDynamoException as exc:  # nothing ran: eager is a clean retry
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            print(f"[train] compile=true: torch.compile failed ({reason[:200]}); training on eagerly",
                  file=sys.stderr, flush=True)
            compiled = eager
            return eager(*args, **kwargs)

    body.forward = forward
