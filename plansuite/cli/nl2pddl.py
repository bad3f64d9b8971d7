"""``plansuite-nl2pddl``: NL→PDDL data, the generation/repair experiment, and its scoring.

``task=data`` builds a dataset (:mod:`plansuite.nl2pddl.data.dataset`); ``task=repair`` runs the
repair loop over a split with the configured backend (``backend=local|openai``) and critic
(``critic=learned``, or none) and then scores it offline; ``task=score`` re-scores an existing run
directory; ``task=generate`` writes a problem for each row of a descriptions file, for any
domain, with no reference (:mod:`plansuite.nl2pddl.loop.generate`); ``task=critic`` measures a
critic's accuracy on a split's critic examples (reference problems and their corruptions),
overall and per kind; ``task=compare`` pairs two scored runs (or
two rounds of one) item by item (:mod:`plansuite.nl2pddl.loop.paired_runs`). See ``conf/nl2pddl.yaml``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import hydra
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from plansuite.cli import CONF_DIR, friendly_errors, hydra_errors
from plansuite.data.load import check_limit
from plansuite.domains import builtin_path, load_builtin
from plansuite.errors import ConfigError, PlansuiteError
from plansuite.nl2pddl.data.dataset import (
    NL2PDDLSpec,
    build_nl2pddl,
    load_nl2pddl_manifest,
    load_pairs,
)
from plansuite.nl2pddl.judging.problem_checks import OperationalChecker
from plansuite.nl2pddl.loop.experiment import ATTEMPTS, METRICS_MD, run_repair, score_run, start_run
from plansuite.nl2pddl.loop.generate import (
    GENERATE_LOG,
    read_descriptions,
    reference_pairs,
    resolve_domain,
    run_generate,
)
from plansuite.nl2pddl.loop.repair import check_max_attempts, check_rewrite_order
from plansuite.pddl import planners
from plansuite.pddl.parse import load_domain

TASKS = ("data", "repair", "score", "generate", "critic", "compare")
REQUIRED_HINTS = {"export": "a plansuite-train export directory", "model": "the model name the server expects"}
CRITIC_EVAL_JSON, CRITIC_EVAL_MD = "critic_eval.json", "critic_eval.md"
COMPARE_MD = "compare.md"


def _data(cfg: DictConfig) -> dict:
    fields = set(NL2PDDLSpec.__dataclass_fields__)
    unknown = set(cfg.dataset) - fields
    if unknown:
        raise ConfigError(f"dataset={cfg.dataset.get('name')}: not an NL→PDDL preset (use "
                          "nl2pddl_dataset=blocksworld, gripper, fuel or timed); unknown setting "
                          f"{sorted(unknown)[0]}")
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
    return pairs[: check_limit(cfg.limit)]


def _critic_domain(cfg: DictConfig, domain_file: Path) -> None:
    """A critic that reads the domain (``critic=llm``) is given ``domain_file`` (before the
    settings are recorded)."""
    if cfg.get("critic") and "domain_file" in cfg.critic:  # null until set here
        cfg.critic.domain_file = str(domain_file)


def _component(cfg: DictConfig, group: str):
    """Instantiate ``cfg.<group>`` (backend / critic); a required value left unset is one line."""
    node = cfg.get(group)
    if not node:
        return None
    for key in node:
        if OmegaConf.is_missing(node, key):
            raise ConfigError(f"{group}.{key}: required ({REQUIRED_HINTS.get(key, 'no default')})")
    try:
        return instantiate(node)
    except InstantiationException as exc:  # hydra wraps the constructor's error: unwrap ours
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, PlansuiteError):
            raise cause from None
        raise


def _loop_parts(cfg: DictConfig, domain_file: Path, log_name: str = ATTEMPTS):
    """The repair loop's checker and backend, after its settings are checked (a bad one never
    waits for a model to load) and recorded in ``out_dir/run.json`` (a resume under other
    settings refused)."""
    if not cfg.get("backend"):
        raise ConfigError("backend: required (backend=local or backend=openai)")
    check_max_attempts(cfg.max_attempts)
    check_rewrite_order(cfg.rewrite_order)
    planners.check_search(load_domain(domain_file), cfg.planner.mode, cfg.planner.time_limit)
    _critic_domain(cfg, domain_file)
    start_run(Path(cfg.out_dir), OmegaConf.to_container(cfg, resolve=True), overwrite=bool(cfg.overwrite),
              log_name=log_name)
    critic = _component(cfg, "critic")
    checker = OperationalChecker(domain_file, critic=critic, mode=cfg.planner.mode,
                                 time_limit=cfg.planner.time_limit)
    return checker, _component(cfg, "backend")


def _repair(cfg: DictConfig) -> dict:
    pairs = _pairs(cfg)
    checker, generator = _loop_parts(cfg, Path(cfg.data_dir) / "domain.pddl")
    run_repair(pairs, generator, checker, cfg.out_dir, cfg.max_attempts,
               check_rewrites=bool(cfg.check_rewrites),
               rewrite_order=str(cfg.rewrite_order))
    return _score(cfg, pairs)


def _default_export(cfg: DictConfig, builtin: str | None) -> None:
    """``backend=local`` without ``backend.export``: a built-in domain's ``make nl2pddl-cpu``
    generator (``generate_export``), else one line saying what to give."""
    backend = cfg.get("backend")
    if not backend or not OmegaConf.is_missing(backend, "export"):  # given (or a backend without one)
        return
    if builtin is None:
        raise ConfigError("backend.export: required for a domain file (a problem_generator export "
                          "trained on that domain), or use backend=openai")
    export = Path(str(cfg.generate_export).format(domain=builtin))
    if not (export / "domain.pddl").is_file():
        raise ConfigError(f"backend.export: no generator for '{builtin}' at {export}; run "
                          "`make nl2pddl-cpu` or give backend.export=DIR")
    backend.export = str(export)


def _generate(cfg: DictConfig) -> dict:
    rows = read_descriptions(cfg.descriptions)  # the file and the settings before any model loads
    domain_file, builtin = resolve_domain(cfg.pddl_domain)
    _default_export(cfg, builtin)
    checker, generator = _loop_parts(cfg, domain_file, GENERATE_LOG)
    out_dir = Path(cfg.out_dir)
    summary = run_generate(rows, generator, checker, out_dir, cfg.max_attempts,
                           check_rewrites=bool(cfg.check_rewrites), rewrite_order=str(cfg.rewrite_order))
    print(f"[generate] {out_dir}: {summary['items']} problem(s), {summary['success']} passed every check; "
          f"stops {summary['stops']}")
    return summary


def _score(cfg: DictConfig, pairs=None) -> dict:
    """Score ``out_dir``'s run against a data folder's split, or against ``references`` (a
    descriptions file with reference problems, e.g. a public benchmark's rows) and ``domain``."""
    if pairs is None and cfg.references:
        pairs, domain_file = reference_pairs(cfg.references), resolve_domain(cfg.pddl_domain)[0]
    else:
        pairs = pairs if pairs is not None else _pairs(cfg)
        domain_file = Path(cfg.data_dir) / "domain.pddl"
    metrics = score_run(cfg.out_dir, pairs, load_domain(domain_file))
    print((Path(cfg.out_dir) / METRICS_MD).read_text(), end="")
    return metrics


def _critic(cfg: DictConfig) -> dict:
    """Held-out accuracy of the configured critic on the split's critic examples."""
    from plansuite.nl2pddl.data.dataset import load_critic_examples
    from plansuite.nl2pddl.judging.critic import critic_report, report_table, verdict_label

    if not cfg.data_dir:
        raise ConfigError("data_dir: required for task=critic (build one with task=data)")
    critic = _component(cfg, "critic")
    if critic is None:
        raise ConfigError("critic: required for task=critic (critic=learned critic.export=DIR)")
    examples = load_critic_examples(cfg.data_dir, cfg.split)
    examples = examples[: check_limit(cfg.limit)]
    if not examples:
        raise ConfigError(f"{cfg.data_dir}/critic/{cfg.split}.jsonl: no critic examples")
    if hasattr(critic, "predict_examples"):  # batched, reads description and problem apart
        predicted = critic.predict_examples([e.description for e in examples], [e.problem for e in examples])
    elif hasattr(critic, "predict"):  # batched, reads critic_input texts
        predicted = critic.predict([e.text for e in examples])
    else:
        predicted = [verdict_label(critic.judge(e.description, e.problem)) for e in examples]
    report = {"split": cfg.split, "data_dir": str(cfg.data_dir),
              "threshold": getattr(critic, "threshold", None),
              **critic_report([e.label for e in examples], predicted, getattr(critic, "labels", ()))}
    out_dir = Path(cfg.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / CRITIC_EVAL_JSON).write_text(json.dumps(report, indent=2) + "\n")
    (out_dir / CRITIC_EVAL_MD).write_text(report_table(report))
    print(report_table(report), end="")
    return report


def _compare(cfg: DictConfig) -> dict:
    """Two scored runs at their final rounds, or two rounds of one run, paired by item."""
    from plansuite.nl2pddl.loop.paired_runs import paired_style_table, scores_at_round

    runs, rounds = list(cfg.get("runs") or []), cfg.get("rounds")
    if rounds is not None:
        if len(runs) != 1 or len(rounds) != 2:
            raise ConfigError("task=compare rounds=[A,B] compares two rounds of one run: give runs=[RUN]")
        a, b = (scores_at_round(runs[0], int(r)) for r in rounds)
        title = f"{runs[0]}: round {rounds[0]} (A) vs round {rounds[1]} (B)"
    elif len(runs) == 2:
        a, b = scores_at_round(runs[0]), scores_at_round(runs[1])
        title = f"{runs[0]} (A) vs {runs[1]} (B), final rounds"
    else:
        raise ConfigError("task=compare: give runs=[A,B], or runs=[RUN] rounds=[A,B]")
    text = f"# {title}\n\n" + paired_style_table(a, b) + "\n"
    out_dir = Path(cfg.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / COMPARE_MD).write_text(text)
    print(text, end="")
    return {"title": title, "table": text}


@friendly_errors
def run(cfg: DictConfig) -> dict:
    if cfg.task not in TASKS:
        raise ConfigError(f"task={cfg.task}: choose from {', '.join(TASKS)}")
    return {"data": _data, "repair": _repair, "score": _score, "generate": _generate, "critic": _critic,
            "compare": _compare}[cfg.task](cfg)


def domain_argument(argv: list[str]) -> list[str]:
    """``domain=X`` as ``pddl_domain=X``: ``conf/domain/`` is a config group (plansuite-data's), so
    Hydra would read ``domain=X`` as an option of it.

    >>> domain_argument(["task=generate", "domain=kitchen.pddl", "dataset.domain=gripper"])
    ['task=generate', 'pddl_domain=kitchen.pddl', 'dataset.domain=gripper']
    """
    return [f"pddl_domain={a.split('=', 1)[1]}" if a.startswith("domain=") else a for a in argv]


@hydra_errors("nl2pddl")
@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="nl2pddl")
def _main(cfg: DictConfig) -> None:
    run(cfg)


def main() -> None:
    sys.argv[1:] = domain_argument(sys.argv[1:])
    _main()


if __name__ == "__main__":
    main()
