"""``plansuite-data``: build a dataset directory (see :mod:`plansuite.data.builder`)."""

from __future__ import annotations

from dataclasses import asdict

import hydra
from omegaconf import DictConfig, OmegaConf

from plansuite.cli import CONF_DIR, friendly_errors, hydra_errors
from plansuite.data.builder import DatasetSpec, build_dataset
from plansuite.data.goals import GoalSpec
from plansuite.domains import domain_file, state_sampler
from plansuite.errors import ConfigError
from plansuite.pddl.model import atom_text
from plansuite.pddl.parse import load_domain, read_text
from plansuite.settings import from_mapping


@friendly_errors
def run(cfg: DictConfig) -> dict:
    for key in ("file", "problems"):
        if OmegaConf.is_missing(cfg.domain, key):
            raise ConfigError(f"domain={cfg.domain.name} needs domain.{key}=PATH (e.g. domain.file="
                              "DIR/domain.pddl domain.problems=DIR)")
    if not isinstance(cfg.workers, int) or isinstance(cfg.workers, bool) or cfg.workers < 0:
        raise ConfigError(f"workers={cfg.workers!r}: must be a non-negative integer")
    path = domain_file(cfg.domain.name, cfg.domain.get("file"))
    domain = load_domain(path)
    if cfg.domain.get("pddl_name") and domain.name != cfg.domain.pddl_name:
        raise ConfigError(f"{path}: domain is '{domain.name}', config expects '{cfg.domain.pddl_name}'")
    states = OmegaConf.to_container(cfg.domain.states, resolve=True)
    sampler = state_sampler(states, domain)
    spec = from_mapping(DatasetSpec, OmegaConf.to_container(cfg.dataset, resolve=True), "dataset")
    if spec.goal.mode == "problems":
        problems = getattr(sampler, "problems", None)
        if problems is None:
            raise ConfigError("dataset.goal.mode=problems: goals like those of domain.problems' "
                              "files need domain=custom (a folder of problems)")
        spec.goal = GoalSpec.like([sorted(map(atom_text, p.goal_pos)) for p in problems])
        print(f"[data] goals like domain.problems': {spec.goal}")
    test_sampler = None if spec.test_states is None else \
        state_sampler({**states, **spec.test_states}, domain, "dataset.test_states")
    resolved = OmegaConf.to_container(cfg, resolve=True)
    resolved.pop("out_dir")  # where the dataset is, not what it is: same seed, same manifest
    resolved["dataset"]["goal"] = asdict(spec.goal)  # mode=problems: what it resolved to
    manifest = build_dataset(spec, domain, read_text(path, "domain"), sampler, cfg.out_dir,
                             cfg.seed, workers=cfg.workers, config=resolved,
                             overwrite=cfg.overwrite, test_sampler=test_sampler)
    counts = manifest["counts"]
    print(f"[data] wrote {cfg.out_dir}: {counts['train']['trajectories']} train trajectories, "
          f"{counts['train']['transitions']} transitions, {counts['test']['instances']} test "
          f"instances in {sum(manifest['timings_s'].values()):.1f}s")
    return manifest


@hydra_errors("data")
@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="data")
def main(cfg: DictConfig) -> None:
    run(cfg)


if __name__ == "__main__":
    main()
