"""Batched lockstep engine vs sequential planning (batch size 1): attempts per second at k = 25.

Both run the generator@k loop (``sample``; with ``PLANSUITE_BENCH_VERIFIER`` the step-wise
loop) on the same model and the same instances, side by side in one process. Sequential
planning (the same loops, one instance and one request at a time) plans the first
``PLANSUITE_BENCH_SEQ_INSTANCES`` instances (it is slow by design); the batched engine plans
``PLANSUITE_BENCH_INSTANCES_N``; rates are compared, and outcome rates on the shared instances
are reported next to each other.

Model: the export at ``PLANSUITE_BENCH_GENERATOR`` (device ``PLANSUITE_BENCH_DEVICE``, default
auto). Without one, a randomly initialised 2-layer GPT-2 over the format's words stands in
*for timing only*: its generations are garbage, so every attempt ends after one step, and the
number measures the engine and batched generation, not planning. Instances:
``PLANSUITE_BENCH_INSTANCES`` (a folder), else the paper's 200 when ``../shared`` has them,
else a freshly built tiny test split.

    python -m experiments.bench.bench_engine        # prints the result dict as JSON
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from collections import Counter
from pathlib import Path

from plansuite.data.load import load_instances
from plansuite.domains import load_builtin
from plansuite.pddl.simulator import GroundTask
from plansuite.planning.adapters import (
    ModelGenerator,
    load_generator,
    load_verifier,
    resolve_device,
)
from plansuite.planning.engine import run_batched, run_sequential
from plansuite.planning.episode import InstanceContext
from plansuite.planning.loops import PlannerSpec
from plansuite.planning.outcomes import judge_plan

REPO = Path(__file__).resolve().parents[2]


class RandomWordPolicy:
    """A random-weight GPT-2 over the format's words, with GeneratorPolicy's ``generate``.

    Words (markers, predicates, actions, block names, parentheses, newlines) give prompts
    about as many tokens as GPT-2's BPE does, so the cost per step is realistic.
    """

    WORDS = ["\n", "(", ")", "GOAL:", "STATE:", "ACTION:", "NEXT", "END", "on", "on-table",
             "clear", "holding", "arm-empty", "pickup", "putdown", "stack", "unstack",
             *(f"b{i}" for i in range(1, 21))]

    def __init__(self, device: str = "cpu", max_new_tokens: int = 48):
        import torch
        from transformers import GPT2Config, GPT2LMHeadModel

        self.torch, self.device, self.max_new_tokens = torch, device, max_new_tokens
        self.pad = len(self.WORDS)
        torch.manual_seed(0)
        config = GPT2Config(vocab_size=self.pad + 1, n_positions=1024, n_embd=128, n_layer=2,
                            n_head=4, bos_token_id=self.pad, eos_token_id=self.pad)
        self.model = GPT2LMHeadModel(config).to(device).eval()
        self.index = {w: i for i, w in enumerate(self.WORDS)}

    def _encode(self, text: str) -> list[int]:
        words = re.findall(r"\n|\(|\)|[^\s()]+", text)
        return [self.index.get(w, 0) for w in words]

    def generate(self, prompts, temperature=1.0, top_p=0.99, max_new_tokens=None, seed=None):
        torch = self.torch
        if seed is not None:
            torch.manual_seed(seed % 2**63)
        ids = [self._encode(p) for p in prompts]
        width = max(map(len, ids))
        batch = torch.tensor([[self.pad] * (width - len(x)) + x for x in ids], device=self.device)
        mask = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in ids], device=self.device)
        n = max_new_tokens or self.max_new_tokens
        with torch.no_grad():
            out = self.model.generate(batch, attention_mask=mask, do_sample=True, top_k=0,
                                      top_p=top_p, temperature=temperature, max_new_tokens=n,
                                      min_new_tokens=n, pad_token_id=self.pad)
        texts = [" ".join(self.WORDS[i] for i in row[width:].tolist() if i < self.pad)
                 for row in out]
        return [_Generated(t, n) for t in texts]


class _Generated:
    def __init__(self, text: str, n_tokens: int):
        self.text, self.n_tokens = text, n_tokens


def _instances(domain):
    folder = os.environ.get("PLANSUITE_BENCH_INSTANCES")
    paper = REPO.parent / "shared" / "benchmarks" / "paper-blocksworld-test"
    if folder:
        return load_instances(folder, domain), folder
    if paper.is_dir():
        return load_instances(paper, domain), str(paper)
    from plansuite.data.builder import DatasetSpec, build_dataset
    from plansuite.domains import builtin_path
    from plansuite.domains.blocksworld import BlocksworldStates

    toy = DatasetSpec(name="toy", train_states=4, val_states=1, test_instances=64, val_instances=1,
                      test_max_walk_len=30, chunk_size=4)
    folder = Path(tempfile.mkdtemp(prefix="bench-engine-")) / "toy"
    build_dataset(toy, domain, builtin_path("blocksworld").read_text(), BlocksworldStates(3, 8),
                  folder, seed=0, workers=1, progress=lambda _: None)
    return load_instances(folder / "test", domain), "toy test split (seed 0)"


def _timed(run, contexts) -> dict:
    results = {}
    start = time.perf_counter()
    run(contexts, lambda ctx, result, _: results.__setitem__(ctx.id, (ctx, result)))
    seconds = time.perf_counter() - start
    attempts = sum(len(r.attempts) for _, r in results.values())
    steps = sum(r.generator_calls for _, r in results.values())
    outcomes = Counter(judge_plan(c.task, r.plan)[0].value for c, r in results.values())
    return {"instances": len(results), "seconds": round(seconds, 3), "attempts": attempts,
            "generator_calls": steps, "attempts_per_s": round(attempts / seconds, 3),
            "steps_per_s": round(steps / seconds, 3), "outcomes": dict(outcomes),
            "_by_id": {i: judge_plan(c.task, r.plan)[0].value for i, (c, r) in results.items()}}


def _combine(a: dict, b: dict) -> dict:
    out = {key: a[key] + b[key] for key in ("instances", "attempts", "generator_calls")}
    seconds = a["seconds"] + b["seconds"]
    out.update(seconds=round(seconds, 3), attempts_per_s=round(out["attempts"] / seconds, 3),
               steps_per_s=round(out["generator_calls"] / seconds, 3),
               outcomes=dict(Counter(a["outcomes"]) + Counter(b["outcomes"])),
               _by_id={**a["_by_id"], **b["_by_id"]})
    return out


def main() -> dict:
    domain = load_builtin("blocksworld")
    instances, source = _instances(domain)
    n_batched = int(os.environ.get("PLANSUITE_BENCH_INSTANCES_N", "64"))
    n_seq = int(os.environ.get("PLANSUITE_BENCH_SEQ_INSTANCES", "2"))
    batch_size = int(os.environ.get("PLANSUITE_BENCH_BATCH", "64"))
    export = os.environ.get("PLANSUITE_BENCH_GENERATOR")
    device = resolve_device(os.environ.get("PLANSUITE_BENCH_DEVICE", "auto"))
    if export:
        generator, model = load_generator(export, device), export
    else:
        generator, model = ModelGenerator(RandomWordPolicy(device)), "random-init GPT-2 (timing only)"
    verifier_spec = os.environ.get("PLANSUITE_BENCH_VERIFIER")
    verifier = load_verifier(verifier_spec, device) if verifier_spec else None
    spec = PlannerSpec(name="bench", loop="stepwise" if verifier else "sample", k=25, max_steps=40,
                       propose_on_failure="none" if verifier else "last")

    def contexts(n):
        return [InstanceContext.of(i.id, GroundTask(domain, i.problem), seed=0) for i in instances[:n]]

    print(f"[bench engine] {model} on {device}; batched: {n_batched} instances, sequential: "
          f"{n_seq}; k={spec.k}, loop={spec.loop}", flush=True)
    # The sequential share runs half before and half after the batched run, so that a change
    # of load on a shared machine hits both sides alike.
    seq_contexts = contexts(n_seq)
    half = len(seq_contexts) // 2
    seq_before = _timed(lambda cs, done: run_sequential(cs, spec, generator, verifier, done),
                        seq_contexts[:half])
    batched = _timed(lambda cs, done: run_batched(cs, spec, generator, verifier, done, batch_size),
                     contexts(n_batched))
    print(f"[bench engine] batched: {batched['attempts_per_s']} attempts/s", flush=True)
    seq_after = _timed(lambda cs, done: run_sequential(cs, spec, generator, verifier, done),
                       seq_contexts[half:])
    sequential = _combine(seq_before, seq_after)
    print(f"[bench engine] sequential: {sequential['attempts_per_s']} attempts/s", flush=True)
    speedup = round(batched["attempts_per_s"] / sequential["attempts_per_s"], 2)
    shared = sorted(set(batched["_by_id"]) & set(sequential["_by_id"]))
    same = sum(batched["_by_id"][i] == sequential["_by_id"][i] for i in shared)
    for r in (batched, sequential):
        r.pop("_by_id")
    return {"bench": "engine", "model": model, "device": device, "instances": source,
            "loop": spec.loop, "k": spec.k, "batch_size": batch_size,
            "batched": batched, "sequential": sequential,
            "speedup_attempts_per_s": speedup, "target_speedup": 10.0,
            "meets_target": speedup >= 10.0,
            "same_outcome_on_shared_instances": f"{same}/{len(shared)}"}


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
