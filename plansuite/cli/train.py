"""``plansuite-train``: train the generator or a verifier on a dataset directory.

Examples (``conf/train.yaml``)::

    plansuite-train model=generator data_dir=D out_dir=G
    plansuite-train model=verifier data_dir=D out_dir=VB model.generator_dir=G/export
    plansuite-train model=verifier data_dir=D out_dir=VG model.init=generator \
        model.generator_dir=G/export model.recipe=onpolicy
    plansuite-train model=generator data_dir=D out_dir=G ckpt_path=last   # resume after a kill
    plansuite-train model=generator data_dir=D out_dir=G2 model.finetune.init_from=G/export \
        model.finetune.extra=plans.jsonl model.finetune.original_fraction=0.5 \
        model.finetune.examples=9600 model.epochs=1    # finetune on extra transitions
    plansuite-train model=generator_paper trainer=gpu model.backbone.path=/models/gpt2 ...
    plansuite-train model=problem_generator data_dir=NL out_dir=PG    # NL→PDDL (plansuite-nl2pddl data)
    plansuite-train model=critic data_dir=NL out_dir=C

Writes under ``out_dir``: ``checkpoints/last.ckpt`` (every ``checkpoint_every_n_steps``) and
``checkpoints/best.ckpt``, ``export/`` (``save_pretrained`` model + tokenizer + ``plansuite.json``,
from the best checkpoint), ``results.json`` (throughput and validation metrics) and the logger's
files (W&B offline by default).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from plansuite.cli import CONF_DIR, friendly_errors, hydra_errors
from plansuite.errors import ConfigError, PlansuiteError
from plansuite.tracking import offline_notice

NL2PDDL_KINDS = ("problem_generator", "critic")  # built by plansuite/cli/train_nl2pddl.py
KINDS = ("generator", "verifier", *NL2PDDL_KINDS)
INITS = ("base", "generator")


def is_child_process() -> bool:
    """True in the processes Lightning's DDP launcher starts (they re-run this script)."""
    return int(os.environ.get("LOCAL_RANK", 0)) > 0 or int(os.environ.get("NODE_RANK", 0)) > 0


def check_sweep_strategy(trainer_cfg) -> None:
    """Refuse Lightning's re-launching DDP inside a local Hydra multirun.

    Lightning's ``ddp`` starts its extra ranks by re-running this script's command line; under
    ``-m`` each child then runs the whole sweep again (an open Hydra/Lightning bug). Processes
    started by a cluster (SLURM tasks, torchrun) are not re-launched, so they are fine.
    """
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if not HydraConfig.initialized() or HydraConfig.get().mode != RunMode.MULTIRUN:
        return
    if any(v in os.environ for v in ("SLURM_NTASKS", "LOCAL_RANK", "WORLD_SIZE")):
        return  # the cluster (or torchrun) started every rank itself
    devices, nodes = trainer_cfg.get("devices", 1), trainer_cfg.get("num_nodes", 1)
    strategy = str(trainer_cfg.get("strategy", "auto"))
    if strategy in ("ddp", "auto") and (devices != 1 or nodes != 1):
        raise ConfigError(f"trainer.strategy={strategy} on {devices} devices under -m (multirun): "
                          "Lightning's DDP children would re-run the whole sweep; use one device "
                          "per job (trainer=cpu|gpu), trainer.strategy=ddp_spawn, or the SLURM "
                          "launcher (hydra/launcher=slurm)")


def resolve_resume(ckpt_path: str | None, out_dir: Path) -> str | None:
    """``last`` -> ``out_dir/checkpoints/last.ckpt`` when it exists (else a fresh start)."""
    last = out_dir / "checkpoints" / "last.ckpt"
    if ckpt_path in (None, "", "null"):
        if not is_child_process() and any((out_dir / "checkpoints").glob("*.ckpt")):
            raise ConfigError(f"{out_dir}: has checkpoints from an earlier run; resume with "
                              "ckpt_path=last, or choose another out_dir")
        return None
    if ckpt_path == "last":
        if last.is_file():
            return str(last)
        print(f"[train] no {last} yet: starting from scratch", flush=True)
        return None
    if not Path(ckpt_path).is_file():
        raise ConfigError(f"ckpt_path={ckpt_path}: checkpoint file not found")
    return ckpt_path


def _checkpoint_step(path: str) -> int:
    import torch

    try:
        return int(torch.load(path, map_location="cpu", weights_only=False, mmap=True)["global_step"])
    except Exception as exc:  # a truncated or foreign file: say which, in one line
        raise ConfigError(f"{path}: unreadable checkpoint ({type(exc).__name__})") from exc


def make_tokenizer(backbone, domain, data_dir):
    from plansuite.models.backbone import missing_backbone
    from plansuite.models.data import dataset_objects
    from plansuite.models.tokenizer import (
        TOKENIZER_KINDS,
        build_atom_tokenizer,
        load_pretrained_tokenizer,
    )

    if backbone.tokenizer not in TOKENIZER_KINDS:
        raise ConfigError(f"model.backbone.tokenizer '{backbone.tokenizer}': unknown (choose from "
                          f"{', '.join(TOKENIZER_KINDS)})")
    if backbone.tokenizer == "atom":
        return build_atom_tokenizer(domain, dataset_objects(data_dir, domain), backbone.n_positions)
    if not backbone.path:
        raise ConfigError("model.backbone.tokenizer=bpe: set model.backbone.path to a directory "
                          "(or hub id) holding a GPT-2 tokenizer")
    try:
        return load_pretrained_tokenizer(backbone.path)
    except ConfigError:
        if not Path(backbone.path).exists():
            raise missing_backbone(backbone.path) from None
        raise


def make_model(backbone, head: str, tokenizer, labels: dict[int, str] | None = None):
    from plansuite.models.backbone import pretrained_model, tiny_model

    if backbone.name == "tiny":
        return tiny_model(backbone, head, tokenizer, labels)
    if backbone.name == "pretrained":
        if not backbone.path:
            raise ConfigError("model.backbone.name=pretrained: set model.backbone.path")
        return pretrained_model(backbone.path, head, tokenizer, labels)
    raise ConfigError(f"model.backbone.name '{backbone.name}': unknown (choose from tiny, pretrained)")


def make_logger(cfg: DictConfig, tags: dict, group: str, name: str):
    from hydra.utils import instantiate

    from plansuite.tracking import ensure_offline_default, run_tags

    if not cfg.get("logger"):
        return False
    extra = {}
    if str(cfg.logger.get("_target_", "")).endswith("WandbLogger"):
        ensure_offline_default()
        extra = {"group": cfg.logger.get("group") or group, "name": cfg.logger.get("name") or name,
                 "tags": [*run_tags(**tags), *(cfg.logger.get("tags") or [])]}
    return instantiate(cfg.logger, **extra)


def build(cfg: DictConfig, domain, data_dir: Path, out_dir: Path, resolved: dict):
    """(module, datamodule, tokenizer, export meta) for ``cfg.model``."""
    from plansuite.models.backbone import BackboneConfig, pretrained_model
    from plansuite.models.data import (
        FinetuneConfig,
        GeneratorDataModule,
        OnPolicyConfig,
        VerifierDataModule,
        val_set_names,
    )
    from plansuite.models.export import read_meta
    from plansuite.models.generator import GeneratorModule
    from plansuite.models.inference import INPUT_KINDS
    from plansuite.models.optim import OptimConfig
    from plansuite.models.tokenizer import load_pretrained_tokenizer
    from plansuite.models.verifier import VerifierModule

    m = cfg.model
    backbone = BackboneConfig(**OmegaConf.to_container(m.backbone, resolve=True))
    optim = OptimConfig(**OmegaConf.to_container(m.optim, resolve=True))
    if m.kind not in KINDS:
        raise ConfigError(f"model.kind '{m.kind}': unknown (choose from {', '.join(KINDS)})")
    if m.kind in NL2PDDL_KINDS:
        from plansuite.cli.train_nl2pddl import build_nl2pddl

        return build_nl2pddl(cfg, domain, data_dir, resolved)
    if m.kind == "generator":
        finetune = FinetuneConfig(**OmegaConf.to_container(m.get("finetune") or {}, resolve=True))
        base_max_new = None
        if finetune.init_from:  # finetuning: the export's weights and tokenizer
            base = read_meta(finetune.init_from, "generator")
            if base.get("domain") != domain.name:
                raise ConfigError(f"{finetune.init_from}: generator for domain "
                                  f"'{base.get('domain')}', dataset is '{domain.name}'")
            base_max_new = base.get("max_new_tokens")
            tokenizer = load_pretrained_tokenizer(finetune.init_from)
            model = pretrained_model(finetune.init_from, "causal", tokenizer)
        else:
            tokenizer = make_tokenizer(backbone, domain, data_dir)
            model = make_model(backbone, "causal", tokenizer)
        dm = GeneratorDataModule(data_dir, tokenizer, model.config.n_positions, m.batch_size,
                                 m.loss_on, m.val_greedy, num_workers=cfg.num_workers, seed=cfg.seed,
                                 finetune=finetune, trajectories=m.get("trajectories", "walk"),
                                 train_transitions=m.get("train_transitions"),
                                 augment=m.get("augment", "none"))
        dm.setup()  # data problems surface now, as one line, before any training
        max_new = m.get("max_new_tokens") or base_max_new or 2 * dm.max_completion
        module = GeneratorModule(model, tokenizer, domain, optim, max_new, resolved)
        meta = {"kind": "generator", "max_new_tokens": max_new}
        return module, dm, tokenizer, meta
    if m.init not in INITS:
        raise ConfigError(f"model.init '{m.init}': unknown (choose from {', '.join(INITS)})")
    if m.input_kind not in INPUT_KINDS:
        raise ConfigError(f"model.input_kind '{m.input_kind}': unknown (choose from {', '.join(INPUT_KINDS)})")
    if m.generator_dir:
        gen_meta = read_meta(m.generator_dir, "generator")
        if gen_meta.get("domain") != domain.name:
            raise ConfigError(f"{m.generator_dir}: generator for domain '{gen_meta.get('domain')}', "
                              f"dataset is '{domain.name}'")
    if m.init == "generator":
        if not m.generator_dir:
            raise ConfigError("model.init=generator: set model.generator_dir to a generator export")
        tokenizer = load_pretrained_tokenizer(m.generator_dir)
        model = pretrained_model(m.generator_dir, "classifier", tokenizer)
    else:
        tokenizer = make_tokenizer(backbone, domain, data_dir)
        model = make_model(backbone, "classifier", tokenizer)
    onpolicy = OnPolicyConfig(**OmegaConf.to_container(m.onpolicy, resolve=True))
    dm = VerifierDataModule(data_dir, domain, tokenizer, model.config.n_positions, m.recipe,
                            m.input_kind, m.batch_size, m.generator_dir, onpolicy,
                            out_dir / "data", cfg.num_workers, cfg.seed)
    module = VerifierModule(model, optim, val_set_names(m.generator_dir), m.calibrate_on, resolved)
    meta = {"kind": "verifier", "input_kind": m.input_kind, "init": m.init, "recipe": m.recipe}
    return module, dm, tokenizer, meta


def set_cpu_threads(trainer_cfg) -> None:
    """One BLAS pool per process, sized so that DDP ranks on one CPU do not oversubscribe it."""
    import torch

    if trainer_cfg.get("accelerator") == "cpu":
        devices = trainer_cfg.get("devices", 1)
        processes = devices if isinstance(devices, int) and devices > 0 else 1
        threads = max(1, (os.cpu_count() or 1) // processes)
        if os.environ.get("OMP_NUM_THREADS", "").isdigit():  # a caller sharing the CPU chose
            threads = max(1, min(threads, int(os.environ["OMP_NUM_THREADS"])))
        torch.set_num_threads(threads)


def make_trainer(cfg: DictConfig, domain_name: str, dataset: str | None, out_dir: Path):
    """(Trainer, best-checkpoint callback, throughput callback) with the run's logger."""
    from hydra.utils import instantiate
    from lightning.pytorch.callbacks import ModelCheckpoint

    from plansuite.models.callbacks import ProgressLines, TokensPerSecond

    m = cfg.model
    ckpt_dir = out_dir / "checkpoints"
    last_cb = ModelCheckpoint(dirpath=ckpt_dir, save_top_k=0, save_last=True,
                              every_n_train_steps=cfg.checkpoint_every_n_steps,
                              enable_version_counter=False)
    best_cb = ModelCheckpoint(dirpath=ckpt_dir, filename="best", monitor=m.monitor.metric,
                              mode=m.monitor.mode, save_top_k=1, enable_version_counter=False,
                              auto_insert_metric_name=False)
    throughput = TokensPerSecond()
    verifier = m.kind == "verifier"
    tags = {"domain": domain_name, "dataset": dataset, "model": m.kind, "seed": cfg.seed,
            "backbone": "generator" if verifier and m.init == "generator" else m.backbone.name,
            "init": m.init if verifier else None, "recipe": m.recipe if verifier else None}
    name = f"verifier-{m.init}-{m.recipe}" if verifier else m.kind
    logger = make_logger(cfg, tags, f"{domain_name}-{m.kind}", name)
    callbacks = [last_cb, best_cb, throughput]
    bar = bool(cfg.trainer.get("enable_progress_bar", True)) and sys.stdout.isatty()
    if not bar:  # a log file: plain lines instead of a redrawn bar
        callbacks.append(ProgressLines(cfg.get("progress_every_n_steps", 100)))
    trainer = instantiate(cfg.trainer, callbacks=callbacks, logger=logger, enable_progress_bar=bar)
    return trainer, best_cb, throughput


@friendly_errors
def run(cfg: DictConfig) -> dict:
    check_sweep_strategy(cfg.trainer)  # before the heavy imports: a sweep fails in a second
    import lightning as L

    from plansuite.data.load import load_manifest
    from plansuite.models.export import save_export
    from plansuite.models.tokenizer import tokenizer_kind
    from plansuite.pddl.parse import load_domain

    logging.getLogger("lightning.pytorch").propagate = False  # printed once, not twice via hydra
    if OmegaConf.is_missing(cfg, "data_dir") or cfg.data_dir is None:  # reading ??? raises
        raise ConfigError("data_dir: required (a dataset directory from plansuite-data)")
    data_dir, out_dir = Path(cfg.data_dir), Path(cfg.out_dir)
    manifest = load_manifest(data_dir)
    domain = load_domain(data_dir / "domain.pddl")
    ckpt_path = resolve_resume(cfg.get("ckpt_path"), out_dir)
    resumed_from = _checkpoint_step(ckpt_path) if ckpt_path else None
    set_cpu_threads(cfg.trainer)
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    resolved = OmegaConf.to_container(cfg, resolve=True)
    module, dm, tokenizer, meta = build(cfg, domain, data_dir, out_dir, resolved)
    trainer, best_cb, throughput = make_trainer(cfg, domain.name, manifest.get("dataset"), out_dir)

    start = time.perf_counter()
    trainer.fit(module, datamodule=dm, ckpt_path=ckpt_path)
    fit_s = time.perf_counter() - start
    if trainer.interrupted:
        raise PlansuiteError(f"training interrupted; resume with: ckpt_path=last out_dir={out_dir}")
    if not trainer.fast_dev_run:
        trainer.save_checkpoint(out_dir / "checkpoints" / "last.ckpt")  # the finished state
    best = best_cb.best_model_path or None
    metrics = trainer.validate(module, datamodule=dm, ckpt_path=best, verbose=False)  # best weights
    if not trainer.is_global_zero:
        return {}
    flat = {k: round(float(v), 6) for d in metrics for k, v in d.items()}
    if cfg.model.kind == "verifier":
        meta["threshold"] = float(module.threshold)
        flat = {"threshold": meta["threshold"], **{f"{s}/{k}": v for s, r in module.reports.items()
                                                    for k, v in r.items()}}
    meta.update(domain=domain.name, tokenizer=tokenizer_kind(tokenizer), metrics=flat,
                config=resolved, best_checkpoint=best)
    export = save_export(out_dir / "export", module.model, tokenizer, meta, data_dir / "domain.pddl")
    results = {"kind": cfg.model.kind, "export": str(export), "fit_wall_s": round(fit_s, 2),
               "train_tokens": throughput.tokens * trainer.world_size,
               "tokens_per_s": round(throughput.tokens_per_s * trainer.world_size, 1),
               "global_step": trainer.global_step, "epochs": trainer.current_epoch,
               "resumed_from_step": resumed_from, "metrics": flat,
               "train_examples": getattr(dm, "train_counts", None)}
    (out_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"[train] {cfg.model.kind}: {trainer.global_step} steps in {fit_s:.1f}s, "
          f"{results['tokens_per_s']:.0f} tokens/s; export: {export}", flush=True)
    print("[train] " + json.dumps(flat), flush=True)
    notice = offline_notice(getattr(trainer.logger, "experiment", None))  # W&B offline: where, sync
    if notice:
        print(notice, flush=True)
    return results


@hydra_errors("train")
@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="train")
def main(cfg: DictConfig) -> None:
    run(cfg)


if __name__ == "__main__":
    main()
