"""Hydra callbacks of the eval sweeps: what runs when a ``-m`` sweep ends.

- :class:`SampleEfficiencyCallback` (``conf/experiment/adaplanner_sample_efficiency.yaml``):
  GRR at equal generator-call budgets over the sweep's runs (:mod:`plansuite.planning.budget`).
- :class:`EvaluateBestOnTest` (``conf/hparams_search/``): the search's best parameters evaluated
  once on the test instances (:mod:`plansuite.planning.tuning`).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback

from plansuite.errors import ConfigError
from plansuite.planning.budget import write_report
from plansuite.planning.tuning import best_on_test_overrides, best_params
from plansuite.report.tables import sample_efficiency_table


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
        Path(str(config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)  # for sqlite storage

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
