"""``plansuite-data``: build a dataset directory (see :mod:`plansuite.data.builder`)."""

from __future__ import annotations

import hydra
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from plansuite.cli import CONF_DIR, friendly_errors
from plansuite.data.builder import DatasetSpec, build_dataset
from plansuite.domains import domain_file
from plansuite.errors import ConfigError
from plansuite.pddl.parse import load_domain, read_text


@friendly_errors
def run(cfg: DictConfig) -> dict:
    path = domain_file(cfg.domain.name, cfg.domain.get("file"))
    domain = load_domain(path)
    if cfg.domain.get("pddl_name") and domain.name != cfg.domain.pddl_name:
        raise ConfigError(f"{path}: domain is '{domain.name}', config expects '{cfg.domain.pddl_name}'")
    sampler_cfg = cfg.domain.states
    if sampler_cfg.get("_target_", "").endswith("FolderStates"):
        sampler = instantiate(sampler_cfg, domain=domain)
    else:
        sampler = instantiate(sampler_cfg)
    fields = set(DatasetSpec.__dataclass_fields__)
    unknown = set(cfg.dataset) - fields
    if unknown:
        raise ConfigError(f"dataset.{sorted(unknown)[0]}: unknown dataset setting "
                          f"(known: {', '.join(sorted(fields))})")
    spec = DatasetSpec(**OmegaConf.to_container(cfg.dataset, resolve=True))
    resolved = OmegaConf.to_container(cfg, resolve=True)
    manifest = build_dataset(spec, domain, read_text(path, "domain"), sampler, cfg.out_dir,
                             cfg.seed, workers=cfg.workers, config=resolved,
                             overwrite=cfg.overwrite)
    counts = manifest["counts"]
    print(f"[data] wrote {cfg.out_dir}: {counts['train']['trajectories']} train trajectories, "
          f"{counts['train']['transitions']} transitions, {counts['test']['instances']} test "
          f"instances in {sum(manifest['timings_s'].values()):.1f}s")
    return manifest


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="data")
def main(cfg: DictConfig) -> None:
    run(cfg)


if __name__ == "__main__":
    main()
