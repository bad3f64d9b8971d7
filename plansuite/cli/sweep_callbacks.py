"""Hydra callbacks of the eval sweeps: what runs when a ``-m`` sweep ends.

- :class:`SampleEfficiencyCallback` (``conf/experiment/adaplanner_sample_efficiency.yaml``):
  GRR at equal generator-call budgets over the sweep's runs (:mod:`plansuite.report.sample_efficiency`).
- :class:`EvaluateBestOnTest` (``conf/hparams_search/``): before the search, the study's folder
  made and its settings checked (a continued study measures the same thing); after it, the
  best parameters evaluated once on the test instances (:mod:`plansuite.planning.tuning`).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback

from plansuite.errors import ConfigError
from plansuite.planning.tuning import best_on_test_overrides, best_params
from plansuite.report.sample_efficiency import write_report
from plansuite.report.tables import sample_efficiency_table
from plansuite.settings import flatten, settings_changes


class SampleEfficiencyCallback(Callback):
    """At the end of a ``-m`` sweep, compare the runs under the sweep folder."""

    def __init__(self, budgets: Sequence[int] | None = None, baseline: str | None = None):
        self.budgets = list(budgets) if budgets else None
        self.baseline = baseline

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        root = Path(str(config.hydra.sweep.dir))
        try:
            report = write_report(root, self.budgets, self.baseline)
        except ConfigError as exc:  # e.g. some job failed: the runs are kept, say why
            print(f"[sample-efficiency] not written: {exc}")
            return
        print(sample_efficiency_table(report))
        print(f"[sample-efficiency] wrote {root / 'sample_efficiency.md'}")


class EvaluateBestOnTest(Callback):
    """At the end of the search, ``plansuite-eval`` with the best parameters on ``test_instances``
    into ``<sweep dir>/test-best`` (nothing when ``test_instances`` is null)."""

    def __init__(self, test_instances: str | None = None):
        self.test_instances = test_instances

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        sweeper = config.hydra.sweeper
        storage = str(sweeper.storage)
        if storage.startswith("sqlite:///"):  # sqlite creates the file, not its folder
            Path(storage.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        check_study_settings(storage, str(sweeper.study_name), str(sweeper.direction),
                             study_settings(config))

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        if not self.test_instances:
            return
        sweep = Path(str(config.hydra.sweep.dir))
        best = best_params(sweep)
        overrides = best_on_test_overrides(list(config.hydra.overrides.task), best, self.test_instances,
                                           str(sweep / "test-best"))
        print(f"[tuning] best {best} on the validation instances; test run: "
              f"plansuite-eval {' '.join(overrides)}", flush=True)
        done = subprocess.run([sys.executable, "-m", "plansuite.cli.eval", *overrides])
        if done.returncode != 0:  # SystemExit: Hydra turns callback exceptions into warnings
            print(f"error: the test run with {best} failed; the search results are in {sweep}; "
                  f"re-run: plansuite-eval {' '.join(overrides)}", file=sys.stderr, flush=True)
            raise SystemExit(done.returncode)


# Keys that do not change what a trial measures (where it is written, how it is logged).
UNMEASURED = ("hydra", "out_dir", "wandb", "logger", "progress_every_s", "tuning")


def study_settings(config: Any) -> dict:
    """What the study's trials measure: the resolved config without the searched parameters and
    the keys that only place or log a run (:data:`UNMEASURED`)."""
    from omegaconf import OmegaConf

    kept = OmegaConf.masked_copy(config, [k for k in config if k not in ("hydra", "out_dir")])
    resolved = OmegaConf.to_container(kept, resolve=True)  # before dropping what others refer to
    searched = set(config.hydra.sweeper.get("params") or {})
    return {k: v for k, v in flatten(resolved).items()
            if k not in searched and k.split(".")[0] not in UNMEASURED}


def check_study_settings(storage: str, study_name: str, direction: str, settings: dict) -> None:
    """A study continued by a re-run must measure the same thing: the first run stores its
    settings in the study, a later one with other settings is refused in one line (its trials
    would mix with the study's, and TPE would learn from both as one objective)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name=study_name, storage=storage, direction=direction,
                                load_if_exists=True)
    stored = study.user_attrs.get("plansuite_settings")
    if stored is None:
        study.set_user_attr("plansuite_settings", settings)
        return
    changes = settings_changes(stored, settings)
    if changes:
        print(f"error: hydra.sweeper.study_name={study_name} ({storage}) holds trials of other "
              f"settings ({changes}); give another study_name, or delete the file",
              file=sys.stderr, flush=True)
        raise SystemExit(1)
