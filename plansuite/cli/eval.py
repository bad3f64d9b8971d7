"""``plansuite-eval``: run a planner (and baselines) on a folder of instances and judge them.

See :mod:`plansuite.planning` for the semantics and :mod:`plansuite.planning.evaluate` for the
files written under ``out_dir``.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from plansuite.cli import CONF_DIR, friendly_errors, hydra_errors
from plansuite.data.load import load_instances
from plansuite.domains import domain_file
from plansuite.errors import ConfigError
from plansuite.models.export import check_export_domain
from plansuite.pddl.model import Domain, structure_difference
from plansuite.pddl.parse import load_domain
from plansuite.planning.adapters import (
    GENERATOR_CHOICES,
    VERIFIER_CHOICES,
    check_device,
    check_instance_names,
    check_same_tokenizer,
    load_generator,
    load_verifier,
    resolve_device,
)
from plansuite.planning.baselines import baseline_planner
from plansuite.planning.evaluate import (
    EvalSettings,
    evaluate,
    merge,
    write_results,
)
from plansuite.planning.loops import PlannerSpec, feedback_source
from plansuite.planning.optimal import OptimalLengths
from plansuite.report.collect import verifier_init
from plansuite.report.tables import table_header, table_row
from plansuite.tracking import ensure_offline_default, offline_notice, run_group, run_tags

OPTIMIZABLE = ("grr", "btr")
SUMMARY_KEYS = ("grr", "grr_ci", "btr", "btr_ci", "n_instances", "outcomes", "calls", "attempts",
                "by_objects", "by_goal_size")


def _folder_difference(folder: Path, domain: Domain,
                       labels: tuple[str, str]) -> tuple[Path, Domain, str] | None:
    """The folder's own ``domain.pddl``, its domain and how it differs from ``domain`` (by
    structure: :func:`plansuite.pddl.model.structure_difference`); None when the folder has no
    domain file or the same domain up to names."""
    own = folder / "domain.pddl"
    if not own.is_file():
        return None
    theirs = load_domain(own)
    difference = structure_difference(domain, theirs, labels)
    return None if difference is None else (own, theirs, difference)


def check_folder_domain(folder: Path, domain: Domain) -> None:
    """A folder that ships its own ``domain.pddl`` must hold ``domain`` (up to names) where
    nothing else can be planned against, as in ``plansuite-skills``."""
    found = _folder_difference(folder, domain, ("the dataset's", "the folder's"))
    if found is not None:
        own, _, difference = found
        raise ConfigError(f"{own}: not the dataset's domain {domain.name} ({difference})")


def folder_domain(folder: Path, path: Path, domain: Domain, explicit: bool) -> tuple[Path, Domain]:
    """The domain file to plan against, and its domain: a folder that ships its own
    ``domain.pddl`` is planned against it unless that is the configured domain already; a
    ``domain.file`` given explicitly that differs from the folder's is one error line."""
    found = _folder_difference(folder, domain, ("the configured one", "the folder's"))
    if found is None:
        return path, domain
    own, theirs, difference = found
    if explicit:
        raise ConfigError(f"{own}: not the domain of domain.file={path} ({difference}); leave "
                          "domain.file out to plan against the folder's own domain")
    print(f"[eval] domain: {own} (the instance folder's own domain, not the configured "
          f"{domain.name})", flush=True)
    return own, theirs


@friendly_errors
def run(cfg: DictConfig) -> dict | None:
    for key in ("generator", "instances"):
        if OmegaConf.is_missing(cfg, key):
            raise ConfigError(f"{key}: required, e.g. plansuite-eval {key}=DIR")
    if cfg.get("optimized_metric") and cfg.optimized_metric not in OPTIMIZABLE:
        raise ConfigError(f"optimized_metric={cfg.optimized_metric}: choose from {', '.join(OPTIMIZABLE)}")
    if cfg.get("logger") and not str(cfg.logger.get("_target_", "")).endswith("WandbLogger"):
        raise ConfigError("logger: plansuite-eval logs to W&B (logger=wandb) or not at all "
                          "(logger=none); results.json is always written")
    spec = PlannerSpec.from_dict(OmegaConf.to_container(cfg.planner, resolve=True))
    path = domain_file(cfg.domain.name, cfg.domain.get("file"))
    domain = load_domain(path)
    if cfg.domain.get("pddl_name") and domain.name != cfg.domain.pddl_name:
        raise ConfigError(f"{path}: domain is '{domain.name}', config expects '{cfg.domain.pddl_name}'")
    folder = Path(str(cfg.instances))
    if folder.is_dir():
        path, domain = folder_domain(folder, path, domain, bool(cfg.domain.get("file")))
    instances = load_instances(folder, domain, cfg.limit)

    gen_name, ver_name = str(cfg.generator), str(cfg.verifier)
    if spec.name == "random_restart" and gen_name != "random":
        raise ConfigError(f"planner=random_restart with generator={gen_name}: the baseline proposes "
                          "random applicable actions; drop generator=... (with it the runs would be "
                          "that generator's, labelled random_restart), or use planner=generator")
    uses_export = gen_name not in GENERATOR_CHOICES or ver_name not in VERIFIER_CHOICES
    check_device(cfg.device)  # a typo is refused even when no model runs on it
    device = resolve_device(cfg.device, int(cfg.shard.rank)) if uses_export else "cpu"
    synthetic = OmegaConf.to_container(cfg.synthetic) if gen_name == "synthetic" else None
    check_same_tokenizer(gen_name, ver_name)  # before loading anything heavy
    for role, name, choices in (("generator", gen_name, GENERATOR_CHOICES),
                                ("verifier", ver_name, VERIFIER_CHOICES)):
        if name not in choices and Path(name).is_dir():  # (a missing one: loading says so)
            check_export_domain(name, role, domain, role)
    generator = load_generator(gen_name, device, synthetic, domain_file=path)
    verifier = load_verifier(ver_name, device, cfg.get("verifier_threshold"))
    check_instance_names((generator, verifier), instances, domain)

    config = OmegaConf.to_container(cfg, resolve=True)
    optimal = (OptimalLengths(path, cfg.optimal.cache_dir, cfg.optimal.time_limit, cfg.optimal.mode)
               if cfg.optimal.enabled else None)
    fingerprint = {"generator": gen_name, "verifier": ver_name, "domain": domain.name,
                   "instances_dir": str(folder.resolve()), "synthetic": synthetic}
    if cfg.get("verifier_threshold") is not None:  # (absent otherwise: older journals still resume)
        fingerprint["verifier_threshold"] = float(cfg.verifier_threshold)

    def settings(planner: PlannerSpec) -> EvalSettings:
        return EvalSettings(planner, seed=cfg.seed, engine=cfg.engine, batch_size=cfg.batch_size,
                            rank=int(cfg.shard.rank), world=int(cfg.shard.world), val=cfg.val,
                            save_traces=cfg.save_traces, progress_every_s=cfg.progress_every_s)

    out = Path(cfg.out_dir)
    common = dict(fingerprint=fingerprint, config=config, optimal=optimal)
    # open before planning: progress is live on the dashboard and a killed run keeps it
    tracker = open_wandb(cfg, spec, domain.name, out) if cfg.get("logger") else None
    try:
        results = evaluate(instances, domain, path, generator, verifier, settings(spec), out,
                           **common, on_progress=tracker.log if tracker else None)
    except BaseException:  # an error, Ctrl-C or SIGTERM: the run keeps what it logged, as failed
        if tracker:
            tracker.finish(exit_code=1)
        raise
    baselines = {}
    for name in cfg.baselines:
        b_spec, b_gen, b_ver = baseline_planner(name, spec, generator)
        baselines[name] = evaluate(instances, domain, path, b_gen, b_ver, settings(b_spec),
                                   out / "baselines" / name,
                                   **{**common, "fingerprint": {**fingerprint, "baseline": name}})
    ids = [i.id for i in instances]
    if results is None and baselines:  # another shard may have completed the main run meanwhile
        results = merge(out, ids, spec, config, log=lambda _: None)
    if results is None or any(r is None for r in baselines.values()):
        if tracker:
            tracker.finish()
        return None
    if baselines:
        results["baselines"] = {n: {k: r[k] for k in SUMMARY_KEYS} for n, r in baselines.items()}
        write_results(out, results)
    print(table_header())
    print(table_row(spec.name, results))
    for name, r in baselines.items():
        print(table_row(f"  baseline {name}", r))
    print(f"[eval] wrote {out / 'results.json'}")
    if tracker:
        log_wandb(tracker, results, out)
    return results


def open_wandb(cfg: DictConfig, spec: PlannerSpec, domain_name: str, out: Path):
    """The evaluation's W&B run, tagged for grouping in the dashboard (``domain:`` is the PDDL
    domain's name, as in training)."""
    ensure_offline_default()
    import wandb

    init = cfg.wandb.verifier_init or verifier_init({"verifier": str(cfg.verifier)},
                                                    out / "results.json")
    experiment = cfg.wandb.experiment
    tags = run_tags(experiment=experiment, domain=domain_name, planner=spec.name,
                    verifier_init=init, k=spec.k, temperature=spec.temperature, seed=cfg.seed,
                    feedback=feedback_source(spec), budget=spec.budget)
    group = cfg.wandb.group or run_group(experiment or "eval", spec.name, init, spec.k,
                                         spec.temperature)
    config = OmegaConf.to_container(cfg, resolve=True)
    config["wandb"] = {**config.get("wandb", {}), "group": group, "verifier_init": init}
    return wandb.init(project=cfg.logger.get("project", "plansuite"), group=group,
                      job_type="eval", tags=tags, dir=str(out), config=config, name=out.name)


def log_wandb(run, results: dict, out: Path) -> None:
    """GRR, BTR, their intervals, outcome counts and a per-instance table; closes the run."""
    import wandb

    metrics = {"grr": results["grr"], "btr": results["btr"],
               "grr_ci_low": results["grr_ci"][0], "grr_ci_high": results["grr_ci"][1],
               "btr_ci_low": results["btr_ci"][0], "btr_ci_high": results["btr_ci"][1],
               "n_instances": results["n_instances"], "attempts": results["attempts"],
               "wall_s": results["wall_s"], "val_agreement": results["val"]["agreement"],
               **{f"outcomes/{k}": v for k, v in results["outcomes"].items()},
               **{f"calls/{k}": v for k, v in results["calls"].items()}}
    for name, r in results.get("baselines", {}).items():
        metrics.update({f"baseline/{name}/grr": r["grr"], f"baseline/{name}/btr": r["btr"]})
    columns = ["id", "outcome", "plan_length", "optimal_length", "attempts", "generator_calls",
               "verifier_calls", "tokens", "calls_to_success", "val_valid"]
    rows = []
    for line in (out / "instances.jsonl").read_text().splitlines():
        r = json.loads(line)
        rows.append([r["id"], r["outcome"], r["plan_length"], r["optimal_length"], r["attempts"],
                     r["calls"]["generator"], r["calls"]["verifier"], r["calls"]["tokens"],
                     r.get("calls_to_success"), r["val_valid"]])
    run.log({**metrics, "instances": wandb.Table(columns=columns, data=rows)})
    run.summary.update(metrics)
    run.finish()
    notice = offline_notice(run)
    if notice:
        print(notice)


def objective(cfg: DictConfig, results: dict | None) -> float | None:
    """What a sweeper optimises (``optimized_metric``, set by ``conf/hparams_search/``)."""
    metric = cfg.get("optimized_metric")  # checked against OPTIMIZABLE before planning
    return float(results[metric]) if metric and results is not None else None


def exit_on_sigterm() -> None:
    """``kill``, ``timeout`` and SLURM stop a job with SIGTERM, which by default ends Python at
    once; end through ``finally``/``except`` instead (as Ctrl-C does), so the W&B run is closed
    with what it logged. Only SIGKILL still loses W&B's unwritten rows (the journal has all)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))


@hydra_errors("eval")
@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="eval")
def main(cfg: DictConfig) -> float | None:
    exit_on_sigterm()
    return objective(cfg, run(cfg))


if __name__ == "__main__":
    main()
