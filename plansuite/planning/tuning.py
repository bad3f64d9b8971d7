"""Step 2 of a hyper-parameter search: evaluate the best parameters on the test instances.

An Optuna search (``conf/hparams_search/``) chooses parameters on validation instances and
writes ``optimization_results.yaml`` into its sweep folder. :class:`EvaluateBestOnTest` (a Hydra
callback of those configs) then runs ``plansuite-eval`` once more, in a fresh process, with the
search's own command-line overrides, the best parameters, and the test instances. By hand::

    python -m plansuite.planning.tuning SWEEP_DIR [TEST_INSTANCES]   # prints the overrides
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from hydra.experimental.callback import Callback

from plansuite.errors import ConfigError

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


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def best_on_test_overrides(search_overrides: Sequence[str], best: Mapping[str, Any],
                           test_instances: str, out_dir: str) -> list[str]:
    """The search's overrides without the search itself, plus the best parameters and the test set.

    >>> best_on_test_overrides(["hparams_search=temperature", "generator=G", "tuning.data=D",
    ...     "planner.temperature=0.3", "hydra.sweep.dir=S"], {"planner.temperature": 0.7}, "T", "S/t")
    ['generator=G', 'planner.temperature=0.7', 'instances=T', 'out_dir=S/t']
    """
    dropped = {"hparams_search", *REPLACED, *best}
    kept = [o for o in search_overrides  # the search's own keys mean nothing without it
            if _key(o) not in dropped and not _key(o).startswith(SEARCH_ONLY)]
    return [*kept, *(f"{k}={v}" for k, v in best.items()), f"instances={test_instances}",
            f"out_dir={out_dir}"]


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


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not 1 <= len(args) <= 2:
        raise SystemExit("usage: python -m plansuite.planning.tuning SWEEP_DIR [TEST_INSTANCES]")
    try:
        best = best_params(args[0])
    except ConfigError as exc:
        raise SystemExit(f"error: {exc}") from None
    extra = [f"instances={args[1]}"] if len(args) == 2 else []
    print(" ".join([*(f"{k}={v}" for k, v in best.items()), *extra]))


if __name__ == "__main__":
    main()
