"""``plansuite-nl2pddl``: NL→PDDL data, the generation/repair experiment, and its scoring.

``task=data`` builds a dataset (:mod:`plansuite.nl2pddl.dataset`); ``task=repair`` runs the
repair loop over a split with the configured backend and then scores it offline; ``task=score``
re-scores an existing run directory. See ``conf/nl2pddl.yaml``.
"""

from __future__ import annotations

import json
from pathlib import Path

import hydra
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from plansuite.cli import CONF_DIR, friendly_errors
from plansuite.domains import builtin_path, load_builtin
from plansuite.errors import ConfigError
from plansuite.nl2pddl.checks import OperationalChecker
from plansuite.nl2pddl.dataset import NL2PDDLSpec, build_nl2pddl, load_nl2pddl_manifest, load_pairs
from plansuite.nl2pddl.experiment import METRICS_MD, run_repair, score_run
from plansuite.pddl.parse import load_domain

TASKS = ("data", "repair", "score")


def _data(cfg: DictConfig) -> dict:
    fields = set(NL2PDDLSpec.__dataclass_fields__)
    unknown = set(cfg.dataset) - fields
    if unknown or cfg.dataset.get("kind") != "nl2pddl":
        raise ConfigError(f"dataset={cfg.dataset.get('name')}: not an NL→PDDL preset (use "
                          "dataset=nl2pddl_blocksworld or dataset=nl2pddl_gripper)"
                          + (f"; unknown setting {sorted(unknown)[0]}" if unknown else ""))
    spec = NL2PDDLSpec(**OmegaConf.to_container(cfg.dataset, resolve=True))
    domain = load_builtin(spec.domain)
    manifest = build_nl2pddl(spec, domain, builtin_path(spec.domain).read_text(), cfg.out_dir,
                             cfg.seed, overwrite=cfg.overwrite,
                             config=OmegaConf.to_container(cfg, resolve=True))
    counts = manifest["counts"]
    print(f"[nl2pddl-data] wrote {cfg.out_dir}: " + ", ".join(
        f"{s} {sum(v for k, v in c.items() if k.startswith('pairs'))} pairs / "
        f"{sum(v for k, v in c.items() if k.startswith('critic'))} critic examples"
        for s, c in counts.items()))
    return manifest


def _pairs(cfg: DictConfig):
    if not cfg.data_dir:
        raise ConfigError("data_dir: required for task=repair/score (build one with task=data)")
    load_nl2pddl_manifest(cfg.data_dir)
    pairs = load_pairs(cfg.data_dir, cfg.split)
    return pairs[: cfg.limit] if cfg.limit else pairs


def _repair(cfg: DictConfig) -> dict:
    pairs = _pairs(cfg)
    if OmegaConf.is_missing(cfg.backend, "model"):
        raise ConfigError("backend.model: required (the model name the server expects)")
    domain_file = Path(cfg.data_dir) / "domain.pddl"
    critic = instantiate(cfg.critic) if cfg.critic else None
    checker = OperationalChecker(domain_file, critic=critic, mode=cfg.planner.mode,
                                 time_limit=cfg.planner.time_limit)
    generator = instantiate(cfg.backend)
    out_dir = Path(cfg.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "run.json").write_text(json.dumps(OmegaConf.to_container(cfg, resolve=True), indent=2) + "\n")
    run_repair(pairs, generator, checker, out_dir, cfg.max_attempts)
    return _score(cfg, pairs)


def _score(cfg: DictConfig, pairs=None) -> dict:
    pairs = pairs if pairs is not None else _pairs(cfg)
    domain = load_domain(Path(cfg.data_dir) / "domain.pddl")
    metrics = score_run(cfg.out_dir, pairs, domain)
    print((Path(cfg.out_dir) / METRICS_MD).read_text(), end="")
    return metrics


@friendly_errors
def run(cfg: DictConfig) -> dict:
    if cfg.task not in TASKS:
        raise ConfigError(f"task={cfg.task}: choose from {', '.join(TASKS)}")
    return {"data": _data, "repair": _repair, "score": _score}[cfg.task](cfg)


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="nl2pddl")
def main(cfg: DictConfig) -> None:
    run(cfg)


if __name__ == "__main__":
    main()
