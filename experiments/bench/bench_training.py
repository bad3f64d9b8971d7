"""Training and generation throughput on CPU, measured side by side in one process.

1. The generator LightningModule under ``lightning.Trainer`` vs a plain PyTorch loop: the same
   model initialisation, the same batches in the same order, AdamW + linear warm-up and gradient
   clipping in both; rounds alternate (plain, Lightning, plain, ...) so machine load hits both.
   Reported: real (non-pad) tokens/s over the same window of steps, and the ratio of the best
   round of each side (target >= 0.9), plus the per-round ratios (noisy on a shared machine).
2. Tokens/s of the CPU presets (``model=generator`` and ``model=verifier``, tiny backbone).
3. Generation: new tokens/s of :class:`GeneratorPolicy` for 25 prompts batched vs one at a time,
   and Hugging Face ``generate`` on the same batch. Set ``BENCH_GENERATOR_EXPORT`` to a trained
   generator export for realistic stopping; otherwise a fresh preset model generates a fixed budget.

Run: ``python -m experiments.bench.bench_training`` (or via ``make bench``).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import lightning as L
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from plansuite.cli import CONF_DIR
from plansuite.cli.schemas import register as register_model_schemas
from plansuite.data.builder import DatasetSpec, build_dataset
from plansuite.data.load import load_transitions
from plansuite.domains import domain_file, load_builtin
from plansuite.domains.blocksworld import BlocksworldStates
from plansuite.models.backbone import BackboneConfig, tiny_model
from plansuite.models.callbacks import TokensPerSecond
from plansuite.models.datamodules import (
    GeneratorDataModule,
    VerifierDataModule,
    dataset_objects,
    val_set_names,
)
from plansuite.models.generator import GeneratorModule
from plansuite.models.inference import GeneratorPolicy
from plansuite.models.optim import OptimConfig, adamw_with_warmup
from plansuite.models.tokenizer import build_atom_tokenizer
from plansuite.models.verifier import VerifierModule

STEPS, WARM, ROUNDS = 60, 10, 5  # steps per round, steps excluded from timing, rounds per side


def preset(name: str):
    register_model_schemas()  # conf/model/<kind>.yaml extends model/base_<kind>
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", [f"model={name}", "data_dir=unused"])
    m = cfg.model
    return (BackboneConfig(**OmegaConf.to_container(m.backbone)),
            OptimConfig(**OmegaConf.to_container(m.optim)), m.batch_size)


def fixed_batches(loader, n: int) -> list[dict]:
    torch.manual_seed(0)
    out = []
    while len(out) < n:
        out.extend(loader)
    return out[:n]


def plain_loop(model, batches: list[dict], optim: OptimConfig) -> float:
    """Tokens/s of a hand-written loop over ``batches`` (after WARM steps)."""
    opt = adamw_with_warmup(model.parameters(), optim, len(batches))
    optimizer, sched = opt["optimizer"], opt["lr_scheduler"]["scheduler"]
    model.train()
    tokens, start = 0, None
    for i, batch in enumerate(batches):
        if i == WARM:
            start = time.perf_counter()
        loss = model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        sched.step()
        optimizer.zero_grad(set_to_none=True)
        loss.item()  # Lightning reads the loss every step for logging: so do we
        if i >= WARM:
            tokens += int(batch["attention_mask"].sum())
    return tokens / (time.perf_counter() - start)


class Window(L.Callback):
    """Times the same step window as :func:`plain_loop`."""

    def __init__(self):
        self.tokens, self.start, self.end = 0, None, None

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if batch_idx == WARM:
            self.start = time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if batch_idx >= WARM:
            self.tokens += int(batch["attention_mask"].sum())
            self.end = time.perf_counter()

    @property
    def rate(self) -> float:
        return self.tokens / (self.end - self.start)


def lightning_fit(module, batches: list[dict]) -> tuple[float, float]:
    """(tokens/s over the window, whole fit() wall seconds) with the CLI's Trainer settings."""
    window = Window()
    trainer = L.Trainer(accelerator="cpu", devices=1, max_steps=len(batches), logger=False,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, num_sanity_val_steps=0, limit_val_batches=0,
                        gradient_clip_val=1.0, log_every_n_steps=20,
                        callbacks=[window, TokensPerSecond()])
    start = time.perf_counter()
    trainer.fit(module, train_dataloaders=torch.utils.data.DataLoader(batches, batch_size=None))
    return window.rate, time.perf_counter() - start


def bench_lightning_vs_plain(data_dir: Path, domain, tokenizer) -> dict:
    backbone, optim, batch_size = preset("generator")
    dm = GeneratorDataModule(data_dir, tokenizer, backbone.n_positions, batch_size)
    dm.setup()
    batches = fixed_batches(dm.train_dataloader(), STEPS)
    plain, light, fit_wall = [], [], []
    for _ in range(ROUNDS):
        torch.manual_seed(0)
        plain.append(plain_loop(tiny_model(backbone, "causal", tokenizer), batches, optim))
        torch.manual_seed(0)
        module = GeneratorModule(tiny_model(backbone, "causal", tokenizer), tokenizer, domain, optim)
        rate, wall = lightning_fit(module, batches)
        light.append(rate)
        fit_wall.append(wall)
    best_plain, best_light = max(plain), max(light)
    return {"plain_tokens_per_s": [round(x) for x in plain],
            "lightning_tokens_per_s": [round(x) for x in light],
            "lightning_over_plain": round(best_light / best_plain, 3),  # best round of each
            "lightning_over_plain_per_round": [round(a / b, 3) for a, b in zip(light, plain, strict=True)],
            "lightning_fit_wall_s": [round(x, 2) for x in fit_wall],
            "steps_timed": STEPS - WARM, "batch_size": batch_size,
            "model": f"{backbone.n_layer}x{backbone.n_embd} GPT-2, atom vocab {len(tokenizer)}"}


def bench_verifier_preset(data_dir: Path, domain, tokenizer) -> dict:
    backbone, optim, batch_size = preset("verifier")
    dm = VerifierDataModule(data_dir, domain, tokenizer, backbone.n_positions, recipe="random",
                            batch_size=batch_size)
    dm.setup()
    batches = fixed_batches(dm.train_dataloader(), STEPS)
    torch.manual_seed(0)
    module = VerifierModule(tiny_model(backbone, "classifier", tokenizer), optim, val_set_names(None))
    rate, wall = lightning_fit(module, batches)
    return {"tokens_per_s": round(rate), "fit_wall_s": round(wall, 2), "batch_size": batch_size}


def bench_generation(data_dir: Path, tokenizer, n: int = 25) -> dict:
    export = os.environ.get("BENCH_GENERATOR_EXPORT")
    if export:
        policy = GeneratorPolicy.from_export(export)
        budget = None
    else:
        backbone, _, _ = preset("generator")
        torch.manual_seed(0)
        policy = GeneratorPolicy(tiny_model(backbone, "causal", tokenizer).eval(), tokenizer)
        budget = 48
    prompts = [r.prompt for r in load_transitions(data_dir, "val")[:n]]

    def timed(fn) -> tuple[float, int]:
        start = time.perf_counter()
        new = fn()
        return time.perf_counter() - start, new

    def batched():
        return sum(g.n_tokens for g in policy.generate(prompts, max_new_tokens=budget, seed=0))

    def one_by_one():
        return sum(policy.generate([p], max_new_tokens=budget, seed=0)[0].n_tokens for p in prompts)

    def hf_generate():
        tok = policy.tokenizer
        tok.padding_side = "left"
        enc = tok(prompts, add_special_tokens=False, return_tensors="pt", padding=True)
        out = policy.model.generate(**enc, do_sample=True, top_p=0.99, top_k=0, temperature=1.0,
                                    max_new_tokens=budget or policy.max_new_tokens,
                                    eos_token_id=policy.stop_ids, pad_token_id=tok.pad_token_id)
        new = out[:, enc["input_ids"].shape[1]:]
        return int((new != tok.pad_token_id).sum())

    batched()  # warm-up
    results = {}
    for name, fn in (("batched", batched), ("one_at_a_time", one_by_one), ("hf_generate_batched", hf_generate)):
        seconds, new = timed(fn)
        results[name] = {"new_tokens": new, "seconds": round(seconds, 3),
                         "new_tokens_per_s": round(new / seconds)}
    results["batched_over_one_at_a_time"] = round(
        results["batched"]["new_tokens_per_s"] / results["one_at_a_time"]["new_tokens_per_s"], 2)
    results["prompts"] = n
    results["model"] = export or "untrained generator preset (fixed 48-token budget)"
    return results


def main() -> dict:
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    domain = load_builtin("blocksworld")
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "tiny"
        build_dataset(DatasetSpec(), domain, domain_file("blocksworld").read_text(),
                      BlocksworldStates(3, 8), data_dir, seed=0, workers=1, progress=lambda *_: None)
        tokenizer = build_atom_tokenizer(domain, dataset_objects(data_dir, domain))
        results = {"lightning_vs_plain": bench_lightning_vs_plain(data_dir, domain, tokenizer),
                   "verifier_preset": bench_verifier_preset(data_dir, domain, tokenizer),
                   "generation": bench_generation(data_dir, tokenizer),
                   "threads": torch.get_num_threads()}
    results["generator_preset_tokens_per_s"] = max(results["lightning_vs_plain"]["lightning_tokens_per_s"])
    return results


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
