"""fp32 vs bf16-mixed training steps on this CPU, side by side in one process.

``conf/trainer/cpu.yaml`` trains in fp32 (``trainer.precision=32-true``); Lightning's
``bf16-mixed`` on CPU runs the forward pass under ``torch.autocast("cpu", torch.bfloat16)`` and
keeps fp32 weights. Whether that is faster depends on the CPU: with bf16 instructions
(``avx512_bf16``, ``amx_bf16``) the matrix products run natively, without them they are emulated.
This measures both on the shapes of the two tiny presets that train on CPU:

- ``problem_generator`` (NL -> PDDL, ``model/backbone=tiny_text``: 3 x 128, vocabulary 2 048,
  batches of 8 pairs ~250 tokens long, as ``make nl2pddl-cpu`` trains them);
- ``generator`` (the plan generator, ``model/backbone=tiny``: 3 x 128 on atom tokens, batches of 32
  transitions ~120 tokens long).

Same initial weights, same batches (random token ids: a step's cost depends on shapes only),
AdamW + clipping as the CLI trains; rounds alternate (fp32, bf16, fp32, ...) so machine load hits
both sides. Two batch streams: every batch the same shape, and batches of varied lengths (as
training pads each batch to its own longest pair, so nearly every step is a new shape), and the
varied batches padded up to a multiple of ``BUCKET`` tokens (a handful of shapes).
Reported: tokens/s per round (every token of the batch, padding included) and the ratio of the
best rounds (bf16 over fp32) for each, and the CPU's bf16 flags.

Measured 2026-12-03 on this 2-core EPYC (``avx512_bf16``, no AMX): bf16 1.36x with one fixed
shape, 0.86x with a new shape per step (what training does: a Lightning ``bf16-mixed`` run of the
NL -> PDDL generator trained at ~8 100 tokens/s against fp32's ~10 500), 1.19x bucketed (before
the ~12 % more padding that buckets of 64 add); a second run the same day: 1.43x, 0.84x, 0.97x.
So the CPU presets stay fp32. The loss a bf16-mixed run reaches is a training question, not a benchmark
one: see experiments/nl2pddl/RESULTS.md.

Run: ``python -m experiments.bench precision`` (or ``make bench``).
"""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

import torch
from transformers import GPT2Config, GPT2LMHeadModel

from experiments.bench.steps import training_tokens_per_s

STEPS, WARM, ROUNDS = 24, 4, 3  # steps per round, steps excluded from timing, rounds per side
BUCKET = 64  # tokens: the bucketed stream pads each batch up to a multiple of this
SHAPES = {  # preset -> (vocabulary, n_positions, batch size, tokens per row)
    "problem_generator": (2048, 512, 8, 256),
    "generator": (512, 256, 32, 120),
}


def cpu_bf16_flags() -> list[str]:
    """The bf16 instruction sets ``/proc/cpuinfo`` lists (empty where it lists none or is absent)."""
    info = Path("/proc/cpuinfo")
    flags = set(info.read_text().split()) if info.is_file() else set()
    return sorted(f for f in ("avx512_bf16", "amx_bf16", "amx_tile") if f in flags)


def tokens_per_s(model: GPT2LMHeadModel, batches: list[torch.Tensor], bf16: bool) -> float:
    """Training tokens per second over all but the first ``WARM`` of ``batches``."""

    def loss_of(model: GPT2LMHeadModel, batch: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else nullcontext():
            return model(input_ids=batch, attention_mask=torch.ones_like(batch), labels=batch).loss

    return training_tokens_per_s(model, batches, loss_of, WARM)


def bench_shape(vocab: int, positions: int, batch_size: int, length: int) -> dict:
    config = GPT2Config(vocab_size=vocab, n_positions=positions, n_embd=128, n_layer=3, n_head=4,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)
    rng = torch.Generator().manual_seed(0)
    fixed = [torch.randint(0, vocab, (batch_size, length), generator=rng)] * STEPS
    out: dict = {}
    for lengths in ("fixed", "varied", "bucketed"):
        rates: dict[str, list[float]] = {"fp32": [], "bf16": []}
        for r in range(ROUNDS):
            # varied: as training batches are, each padded to its own longest row (a new shape per
            # step); bucketed: the same rows padded up to a multiple of BUCKET tokens
            rows = [length // 2 + ROUNDS * i + r for i in torch.randperm(STEPS, generator=rng).tolist()]
            if lengths == "bucketed":
                rows = [-(-n // BUCKET) * BUCKET for n in rows]
            batches = fixed if lengths == "fixed" else [
                torch.randint(0, vocab, (batch_size, n), generator=rng) for n in rows]
            for side in ("fp32", "bf16"):
                torch.manual_seed(0)
                rates[side].append(tokens_per_s(GPT2LMHeadModel(config), batches, side == "bf16"))
        out[f"{lengths}_length"] = {"fp32_tokens_per_s": [round(x) for x in rates["fp32"]],
                                    "bf16_tokens_per_s": [round(x) for x in rates["bf16"]],
                                    "bf16_over_fp32": round(max(rates["bf16"]) / max(rates["fp32"]), 3)}
    return out


def main() -> dict:
    out: dict = {"cpu_bf16_flags": cpu_bf16_flags(), "threads": torch.get_num_threads()}
    for name, shape in SHAPES.items():
        print(f"[bench precision] {name}: fp32 vs bf16-mixed, {ROUNDS} rounds of {STEPS} steps", flush=True)
        out[name] = bench_shape(*shape)
    return out
