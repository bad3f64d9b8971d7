"""``plansuite-skills``: skill-discovery rounds from the command line (``conf/skills.yaml``).

    plansuite-skills generator=G/export data_dir=D rounds=3 out_dir=O
    plansuite-skills generator=G/export verifier=V/export planner=generator_verifier data_dir=D

What a round does and the files under ``out_dir``: :mod:`plansuite.skills.rounds`. Re-running
the same command resumes after a kill.
"""

from __future__ import annotations

from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from plansuite.cli import CONF_DIR, friendly_errors, hydra_errors
from plansuite.cli.eval import check_folder_domain
from plansuite.cli.train import compose_train, train_spec
from plansuite.data.load import check_limit, load_instances, load_manifest
from plansuite.errors import ConfigError
from plansuite.pddl.parse import load_domain
from plansuite.planning.adapters import check_same_tokenizer, load_verifier, resolve_device
from plansuite.planning.loops import PlannerSpec, check_verifier
from plansuite.skills.finetune import ExportFinetuner, FinetuneSettings
from plansuite.skills.instances import check_rollout_folder, held_out_pairs, sample_instances
from plansuite.skills.rounds import RoundSettings, SkillDiscovery


def _folder(value, default: Path) -> Path:
    return Path(str(value)) if value else default


@friendly_errors
def run(cfg: DictConfig) -> list[dict]:
    for key in ("generator", "data_dir"):
        if OmegaConf.is_missing(cfg, key):
            raise ConfigError(f"{key}: required, e.g. plansuite-skills {key}=DIR")
    data_dir, out = Path(str(cfg.data_dir)), Path(str(cfg.out_dir))
    load_manifest(data_dir)
    domain_file = data_dir / "domain.pddl"
    domain = load_domain(domain_file)
    spec = PlannerSpec.from_dict(OmegaConf.to_container(cfg.planner, resolve=True))
    ft = {k: v for k, v in OmegaConf.to_container(cfg.finetune, resolve=True).items()
          if k != "start_from"}
    settings = RoundSettings(rounds=cfg.rounds, seed=cfg.seed, rollout_seed=cfg.rollout.seed,
                             rollout_k=cfg.rollout.k, min_gain=cfg.filter.min_gain,
                             require_significant=cfg.filter.require_significant,
                             start_from=cfg.finetune.start_from, batch_size=cfg.batch_size,
                             val=cfg.val, progress_every_s=cfg.progress_every_s)
    finetune = FinetuneSettings(**ft)
    template = train_spec(compose_train(["model=generator", f"data_dir={data_dir}", "logger=none",
                                         "trainer.enable_progress_bar=false",
                                         "trainer.num_sanity_val_steps=0", *finetune.overrides]))
    finetuner = ExportFinetuner(data_dir, finetune, resolve_device(cfg.device), template)

    val_dir = _folder(cfg.validation.instances, data_dir / "val_instances")
    test_dir = _folder(cfg.test.instances, data_dir / "test")
    held_out = [data_dir / "test", data_dir / "val_instances", val_dir, test_dir,
                *(Path(str(f)) for f in cfg.held_out)]
    for folder in (val_dir, test_dir):
        check_folder_domain(folder, domain)
    val_set = load_instances(val_dir, domain)
    test_set = load_instances(test_dir, domain, check_limit(cfg.test.limit, "test.limit"))

    if cfg.rollout.instances:
        fixed = check_rollout_folder(Path(str(cfg.rollout.instances)), held_out, domain)
        rollout = lambda _round: fixed  # noqa: E731 -- the planner seed changes per round
        source = {"folder": str(Path(str(cfg.rollout.instances)).resolve())}
    else:
        exclude = held_out_pairs(held_out, domain)
        rollout = lambda r: sample_instances(data_dir, out / f"r{r:02d}" / "instances",  # noqa: E731
                                             cfg.rollout.n, cfg.rollout.seed, r, domain, exclude)
        source = {"sampled": cfg.rollout.n}

    check_same_tokenizer(str(cfg.generator), str(cfg.verifier))
    verifier = load_verifier(str(cfg.verifier), resolve_device(cfg.device))
    check_verifier(spec, verifier)
    generator = str(Path(str(cfg.generator)).resolve())
    fingerprint = {"data_dir": str(data_dir.resolve()), "verifier": str(cfg.verifier),
                   "rollout": source, "finetune": ft,
                   "val_dir": str(val_dir.resolve()), "test_dir": str(test_dir.resolve())}
    rounds = SkillDiscovery(out, domain, domain_file, generator, finetuner, spec, verifier,
                            rollout, val_set, test_set, held_out, settings, fingerprint).run()
    print((out / "rounds.md").read_text(), end="")
    print(f"[skills] wrote {out / 'rounds.jsonl'}")
    return rounds


@hydra_errors("skills")
@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="skills")
def main(cfg: DictConfig) -> None:
    run(cfg)


if __name__ == "__main__":
    main()
