"""One folder per multirun job, named by what the sweep varies.

Two OmegaConf resolvers, registered when :mod:`plansuite.cli` is imported, used by the primary
configs (``conf/eval.yaml``, ``conf/train.yaml``, ...):

* ``${plansuite.sweep_subdir:}`` (``hydra.sweep.subdir``): the job's values of the swept keys,
  ``planner.k=2,verifier=oracle``; the keys swept are those given with sweep syntax on the
  command line (``k=1,2``, ``range(...)``, ``choice(...)``) plus ``hydra.sweeper.params``. Fixed
  overrides (paths to exports and instances) stay out of the name. A job launched where the
  command line is not ours (a SLURM node) falls back to the job number, Hydra's default.
* ``${plansuite.job_out_dir:DEFAULT}`` (``out_dir``): DEFAULT in a single run; in a multirun the
  job's own folder, ``<hydra.sweep.dir>/<hydra.sweep.subdir>``, so two jobs never share (and
  refuse) one ``out_dir``. An explicit ``out_dir=...`` replaces the whole expression.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping

from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.types import RunMode
from omegaconf import OmegaConf

MAX_NAME = 200  # characters of a job folder's name


def _in_multirun() -> bool:
    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def swept_keys(argv: list[str], sweeper_params: Mapping | None) -> list[str]:
    """Keys given with sweep syntax in ``argv`` plus those of ``hydra.sweeper.params``, in
    command-line order (hydra.* keys excluded: they place the sweep, not the job)."""
    given = [a for a in argv if "=" in a and not a.startswith("-")]
    try:
        parsed = OverridesParser.create().parse_overrides(given)
    except Exception:  # not a Hydra command line (a launcher's own process)
        parsed = []
    keys = [o.key_or_group for o in parsed if o.is_sweep_override()]
    keys += list(sweeper_params or {})
    return [k for k in dict.fromkeys(keys) if not k.startswith("hydra.")]


def job_dirname(task_overrides: list[str], keys: list[str]) -> str:
    """``key=value`` of each swept key, as this job's overrides set it, joined by commas; path
    separators and other characters a folder name should not hold become ``_``."""
    values = {}
    for override in OverridesParser.create().parse_overrides(task_overrides):
        values[override.key_or_group] = override.get_value_element_as_str()
    parts = [f"{key}={values[key]}" for key in keys if key in values]
    name = re.sub(r"[^A-Za-z0-9._=,+-]", "_", ",".join(parts))
    return name[:MAX_NAME]


def sweep_subdir() -> str:
    hydra_cfg = HydraConfig.get()
    params = hydra_cfg.sweeper.get("params") or {}  # e.g. an experiment's, for the basic sweeper
    name = job_dirname(list(hydra_cfg.overrides.task), swept_keys(sys.argv[1:], params))
    return name or str(hydra_cfg.job.num)


def job_out_dir(default: str) -> str:
    if not _in_multirun():
        return default
    hydra_cfg = HydraConfig.get()
    return os.path.join(str(hydra_cfg.sweep.dir), str(hydra_cfg.sweep.subdir))


def register() -> None:
    OmegaConf.register_new_resolver("plansuite.sweep_subdir", sweep_subdir, replace=True)
    OmegaConf.register_new_resolver("plansuite.job_out_dir", job_out_dir, replace=True)
