"""``plansuite-train``: train the generator, a verifier or an NL→PDDL model on a dataset directory.

Examples (``conf/train.yaml``)::

    plansuite-train model=generator data_dir=D out_dir=G
    plansuite-train model=verifier data_dir=D out_dir=VB model.generator_dir=G/export
    plansuite-train model=verifier data_dir=D out_dir=VG model.init=generator \
        model.generator_dir=G/export model.recipe=onpolicy
    plansuite-train model=generator data_dir=D out_dir=G ckpt_path=last   # resume after a kill
    plansuite-train model=generator data_dir=D out_dir=G2 model.finetune.init_from=G/export \
        model.finetune.extra=plans.jsonl model.finetune.original_fraction=0.5 \
        model.finetune.examples=9600 model.epochs=1    # finetune on extra transitions
    plansuite-train model=generator data_dir=D out_dir=G3 model.finetune.init_from=G/export \
        model.finetune.dagger.rollouts=4 model.finetune.examples=36000 model.epochs=1
        # DAgger: G's own rollouts, relabelled by the shortest-path planner (make demo's stage)
    plansuite-train model=generator_paper trainer=gpu model.backbone.path=/models/gpt2 ...
    plansuite-train model=problem_generator data_dir=NL out_dir=PG    # NL→PDDL (plansuite-nl2pddl data)
    plansuite-train model=critic data_dir=NL out_dir=C
    plansuite-train model=verifier ... callbacks=[early_stopping,lr_monitor]   # conf/callbacks/

The config becomes a :class:`plansuite.training.TrainSpec` and :func:`plansuite.training.train`
does the rest (what it writes under ``out_dir``: that module's docstring).
"""

from __future__ import annotations

import os

import hydra
from omegaconf import DictConfig, OmegaConf

from plansuite.cli import CONF_DIR, friendly_errors, hydra_errors
from plansuite.cli.schemas import register as _register_model_schemas
from plansuite.errors import ConfigError
from plansuite.settings import check_type
from plansuite.training import TrainSpec, model_config, train

_register_model_schemas()  # conf/model/<kind>.yaml extends model/base_<kind> (cli/schemas.py)


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


def logger_factory(logger_cfg: DictConfig | None):
    """``conf/logger/<name>``'s logger; W&B also gets the run's group, name and tags."""
    from hydra.utils import instantiate

    from plansuite.tracking import ensure_offline_default, without_anonymous

    if not logger_cfg:
        return None

    def make(group: str, name: str, tags: list[str]):
        extra = {}
        if str(logger_cfg.get("_target_", "")).endswith("WandbLogger"):
            ensure_offline_default()
            extra = {"group": logger_cfg.get("group") or group, "name": logger_cfg.get("name") or name,
                     "tags": [*tags, *(logger_cfg.get("tags") or [])]}
        return without_anonymous(instantiate(logger_cfg, **extra))

    return make


def callbacks(callbacks_cfg: DictConfig | None) -> tuple[list, dict]:
    """``conf/callbacks``' Lightning callbacks (each entry a ``_target_`` and its arguments; a null
    entry is off) and their resolved settings."""
    from hydra.utils import instantiate

    chosen = {name: c for name, c in (callbacks_cfg or {}).items() if c is not None}
    for name, c in chosen.items():
        if not isinstance(c, DictConfig) or "_target_" not in c:
            raise ConfigError(f"callbacks.{name}: needs _target_ (a Lightning callback class) "
                              "and its arguments, or null (off)")
    settings = {name: OmegaConf.to_container(c, resolve=True) for name, c in chosen.items()}
    try:
        made = [instantiate(c) for c in chosen.values()]
    except Exception as err:  # a misspelt class or argument: Hydra's message, one line
        raise ConfigError(f"callbacks: {str(err).splitlines()[0]}") from None
    return made, settings


def train_spec(cfg: DictConfig) -> TrainSpec:
    """``conf/train.yaml``, composed, as a typed TrainSpec (bad model settings fail here)."""
    if OmegaConf.is_missing(cfg, "data_dir") or cfg.data_dir is None:  # reading ??? raises
        raise ConfigError("data_dir: required (a dataset directory from plansuite-data)")
    resolved = OmegaConf.to_container(cfg, resolve=True)
    trainer = {k: v for k, v in resolved["trainer"].items() if k != "_target_"}
    compile_flag = cfg.get("compile", False)
    check_type("compile", "bool", compile_flag)
    extra_callbacks, callback_settings = callbacks(cfg.get("callbacks"))
    return TrainSpec(data_dir=cfg.data_dir, out_dir=cfg.out_dir, model=model_config(resolved["model"]),
                     trainer=trainer, seed=cfg.seed, ckpt_path=cfg.get("ckpt_path"),
                     checkpoint_every_n_steps=cfg.checkpoint_every_n_steps,
                     progress_every_n_steps=cfg.get("progress_every_n_steps", 100),
                     num_workers=cfg.num_workers, compile=compile_flag,
                     logger=logger_factory(cfg.get("logger")), callbacks=extra_callbacks,
                     callback_settings=callback_settings, config=resolved)


def compose_train(overrides: list[str]) -> DictConfig:
    """``conf/train.yaml`` with ``overrides``, inside a Hydra app or outside one."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    if GlobalHydra.instance().is_initialized():  # inside another app's @hydra.main
        return compose(config_name="train", overrides=overrides)
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose(config_name="train", overrides=overrides)


@friendly_errors
def run(cfg: DictConfig) -> dict:
    check_sweep_strategy(cfg.trainer)  # before the heavy imports: a sweep fails in a second
    return train(train_spec(cfg))


@hydra_errors("train")
@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="train")
def main(cfg: DictConfig) -> None:
    run(cfg)


if __name__ == "__main__":
    main()
