"""Eager vs ``compile=true`` training steps on this CPU, side by side in one process.

``plansuite-train compile=true`` (:func:`plansuite.models.compiled.compile_for_training`) runs
the transformer body of a training step through ``torch.compile`` (Inductor, dynamic shapes).
This measures the NL -> PDDL problem generator's step as ``make nl2pddl-cpu`` trains it: the tiny
text GPT-2 (3 x 128, vocabulary 2 048), batches of 8 pairs of varied lengths (each padded to its
longest, so nearly every step is a new shape), the completion loss
(:func:`~plansuite.nl2pddl.models.problem_generator_module.completion_loss` on the second half of each
row), gradient clipping and AdamW. Same initial weights and batches for both sides; rounds
alternate (eager, compiled, eager, ...) so machine load hits both. Compiling happens before the
rounds, on one probe batch (forward and backward: ``compile_s``).

Reported: tokens/s per round (padding included), the ratio of the best rounds (compiled over
eager), the compile time, and the two sides' loss difference on the probe batch with the same
weights (compiled kernels may reorder floating-point sums, so it can be small rather than 0).

Run: ``python -m experiments.bench compile`` (or ``make bench``).
"""

from __future__ import annotations

import time

import torch
from transformers import GPT2LMHeadModel

from experiments.bench.steps import VOCAB, problem_generator_model, training_tokens_per_s
from plansuite.models.compiled import compile_for_training
from plansuite.nl2pddl.models.problem_generator_module import completion_loss

STEPS, WARM, ROUNDS = 24, 2, 3  # steps per round, steps excluded from timing, rounds per side
BATCH, LENGTH = 8, 256  # the problem generator's batches as make nl2pddl-cpu trains it


def batches(rng: torch.Generator) -> list[torch.Tensor]:
    """Batches of varied lengths (token ids); the loss reads the second half of each row."""
    return [torch.randint(0, VOCAB, (BATCH, int(torch.randint(LENGTH // 2, 2 * LENGTH - 64, (1,), generator=rng))),
                          generator=rng) for _ in range(STEPS)]


def loss_of(model: GPT2LMHeadModel, ids: torch.Tensor) -> torch.Tensor:
    """The completion loss on the second half of each row, as the problem generator trains."""
    labels = ids.clone()
    labels[:, : ids.shape[1] // 2] = -100
    return completion_loss(model, ids, torch.ones_like(ids), labels)


def main() -> dict:
    rng = torch.Generator().manual_seed(0)
    eager, compiled = problem_generator_model(), problem_generator_model()
    compiled.load_state_dict(eager.state_dict())
    probe = batches(rng)[0]
    compile_for_training(compiled)
    eager.train()
    compiled.train()
    start = time.perf_counter()
    loss = loss_of(compiled, probe)
    loss.backward()  # compiles the backward pass too
    compile_s = time.perf_counter() - start
    diff = abs(float(loss_of(eager, probe)) - float(loss))
    rates: dict[str, list[float]] = {"eager": [], "compiled": []}
    for r in range(ROUNDS):
        print(f"[bench compile] round {r + 1}/{ROUNDS}", flush=True)
        stream = batches(rng)
        for side, model in (("eager", problem_generator_model()), ("compiled", compiled)):
            if side == "compiled":
                compiled.load_state_dict(problem_generator_model().state_dict())
            rates[side].append(training_tokens_per_s(model, stream, loss_of, WARM))
    return {"threads": torch.get_num_threads(),
            "eager_tokens_per_s": [round(x) for x in rates["eager"]],
            "compiled_tokens_per_s": [round(x) for x in rates["compiled"]],
            "compiled_over_eager": round(max(rates["compiled"]) / max(rates["eager"]), 3),
            "compile_s": round(compile_s, 1),
            "loss_abs_diff_same_weights": float(f"{diff:.2e}")}
