"""Collect evaluation results (``results.json`` files) into flat rows for tables and figures."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from plansuite.errors import ConfigError
from plansuite.planning.metrics import BREAKDOWNS


@dataclass
class Row:
    """One planner run (or one baseline inside a run) on one instance set."""

    label: str  # folder name, e.g. generator_verifier-base
    planner: str
    verifier_init: str  # base | generator | oracle | none | ... (what the dashboard groups by)
    k: int
    temperature: float
    seed: int
    n: int
    grr: float
    grr_ci: tuple[float, float]
    btr: float
    btr_ci: tuple[float, float]
    outcomes: dict[str, int]
    calls: dict[str, int]
    feedback: str | None = None
    path: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def successes(self) -> int:
        return self.outcomes.get("success", 0)

    @property
    def calls_per_success(self) -> float | None:
        """Generator calls per success (``None`` without successes).

        >>> Row("r", "p", "none", 1, 1.0, 0, 2, .5, (0, 1), 0, (0, 1), {"success": 1},
        ...     {"generator": 40}).calls_per_success
        40.0
        """
        return self.calls.get("generator", 0) / self.successes if self.successes else None


def verifier_init(run: dict, results_path: Path) -> str:
    """How the run's verifier was initialised: a tag set at evaluation time, else the export's
    own metadata (``plansuite.json``), else the verifier setting itself (``none``/``oracle``)."""
    if run.get("verifier_init"):
        return str(run["verifier_init"])
    verifier = str(run.get("verifier", "none"))
    meta = Path(verifier) / "plansuite.json"
    if not meta.is_absolute():
        meta = results_path.parent / meta if not meta.exists() else meta
    if meta.is_file():
        info = json.loads(meta.read_text())
        return str(info.get("init") or info.get("config", {}).get("model", {}).get("init", "learned"))
    return verifier if verifier in ("none", "oracle", "oracle_action") else "learned"


def _row(label: str, res: dict, run: dict, path: Path, planner: str | None = None,
         init: str | None = None) -> Row:
    spec = run.get("planner", {})
    return Row(
        label=label,
        planner=planner or res.get("planner") or spec.get("name", "?"),
        verifier_init=init or verifier_init(run, path),
        k=int(res.get("k", spec.get("k", 0))),
        temperature=float(spec.get("temperature", 1.0)),
        seed=int(run.get("seed", 0)),
        n=int(res["n_instances"]),
        grr=float(res["grr"]),
        grr_ci=tuple(res["grr_ci"]),
        btr=float(res["btr"]),
        btr_ci=tuple(res["btr_ci"]),
        outcomes=dict(res["outcomes"]),
        calls=dict(res.get("calls", {})),
        feedback=spec.get("feedback"),
        path=str(path.parent),
        extra={**{k: res[k] for k in ("plan_quality", "val", "wall_s", *BREAKDOWNS) if k in res},
               "instances_dir": str(run.get("instances_dir", ""))},
    )


STALE = ".stale-"  # a pipeline stage's output from an earlier config, moved aside (plansuite.pipeline)


def load_rows(paths: list[str | Path]) -> list[Row]:
    """Every ``results.json`` under the given folders (baselines become rows of their own)."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_file() and p.name == "results.json":
            files.append(p)
        elif p.is_dir():
            files.extend(sorted(f for f in p.rglob("results.json") if "baselines" not in f.parts
                                and not any(STALE in part for part in f.parts)))
        else:
            raise ConfigError(f"{p}: no such results folder or results.json")
    if not files:
        raise ConfigError(f"{', '.join(map(str, paths))}: no results.json found")
    rows: list[Row] = []
    for f in files:
        try:
            res = json.loads(f.read_text())
            run = dict(res.get("run", {}))
            tags = (res.get("config") or {}).get("wandb") or {}
            run.setdefault("verifier_init", tags.get("verifier_init"))
            rows.append(_row(f.parent.name, res, run, f))
            for name, base in (res.get("baselines") or {}).items():
                rows.append(_row(f"{f.parent.name}/{name}", {**base, "k": res.get("k")}, run, f,
                                 planner=name, init="oracle" if "oracle" in name else "none"))
        except (KeyError, ValueError, TypeError) as exc:
            raise ConfigError(f"{f}: not a plansuite results file ({exc})") from exc
    return rows
