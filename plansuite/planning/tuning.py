"""Step 2 of a hyper-parameter search: evaluate the best parameters on the test instances.

An Optuna search (``conf/hparams_search/``) chooses parameters on validation instances and
writes ``optimization_results.yaml`` into its sweep folder.
:class:`plansuite.cli.sweep_callbacks.EvaluateBestOnTest` (a Hydra callback of those configs) then runs ``plansuite-eval`` once more, in a fresh process, with the
search's own command-line overrides, the best parameters, and the test instances. By hand::

    plansuite-best-params SWEEP_DIR [TEST_INSTANCES]   # prints the overrides (plansuite.cli.best_params)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from plansuite.errors import ConfigError
from plansuite.settings import override_key

RESULTS_FILE = "optimization_results.yaml"
REPLACED = ("instances", "out_dir")  # set by the test run itself
SEARCH_ONLY = ("hydra.", "hydra/", "tuning.", "optimized_metric")


def best_params(sweep_dir: str | Path) -> dict[str, Any]:
    """``best_params`` of a finished single-objective search."""
    path = Path(sweep_dir) / RESULTS_FILE
    if not path.is_file():
        raise ConfigError(f"{path}: not found (has the search finished?)")
    found = yaml.safe_load(path.read_text()) or {}
    if not isinstance(found.get("best_params"), dict):
        raise ConfigError(f"{path}: no best_params (a multi-objective search has no single best)")
    return found["best_params"]


def best_on_test_overrides(search_overrides: Sequence[str], best: Mapping[str, Any],
                           test_instances: str, out_dir: str) -> list[str]:
    """The search's overrides without the search itself, plus the best parameters and the test set.

    >>> best_on_test_overrides(["hparams_search=temperature", "generator=G", "tuning.data=D",
    ...     "planner.temperature=0.3", "hydra.sweep.dir=S"], {"planner.temperature": 0.7}, "T", "S/t")
    ['generator=G', 'planner.temperature=0.7', 'instances=T', 'out_dir=S/t']
    """
    dropped = {"hparams_search", *REPLACED, *best}
    kept = [o for o in search_overrides  # the search's own keys mean nothing without it
            if override_key(o) not in dropped and not override_key(o).startswith(SEARCH_ONLY)]
    return [*kept, *(f"{k}={v}" for k, v in best.items()), f"instances={test_instances}",
            f"out_dir={out_dir}"]
