"""GRR at an equal generator-call budget: curves from ``instances.jsonl`` and paired comparisons.

Every loop stops at its first proposal and none looks at how much budget is left, so a run with
budget ``B_max`` answers every smaller budget: capped at ``B`` calls per instance, the same
planner succeeds on exactly the instances whose ``calls_to_success <= B``
(``tests/test_planning_refine.py`` checks this by re-running at smaller budgets). A curve point
is only reported for ``B`` up to the run's own budget (``results.json: budget``).

Settings are compared on the same (seed, instance) items, so the difference of two GRRs at a
budget gets a paired interval (:func:`~.metrics.paired_difference`).

The table and the files (``sample_efficiency.{json,md}``) are :mod:`plansuite.report.sample_efficiency`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from plansuite.errors import ConfigError
from plansuite.planning.metrics import paired_difference, rate, wilson_interval


def calls_to_success(record: Mapping) -> int | None:
    """Generator calls a successful instance cost; None for any other outcome.

    >>> calls_to_success({"outcome": "success", "calls_to_success": 7, "calls": {"generator": 7}})
    7
    >>> calls_to_success({"outcome": "no_plan", "calls": {"generator": 40}}) is None
    True
    """
    if record["outcome"] != "success":
        return None
    if "calls_to_success" in record:
        return record["calls_to_success"]
    return record["calls"]["generator"]  # records written before calls_to_success existed


def grr_at_budgets(records: Sequence[Mapping], budgets: Iterable[int]) -> list[dict]:
    """GRR (with its Wilson 95 % interval) of the planner capped at each budget.

    >>> records = [{"outcome": "success", "calls_to_success": 3},
    ...            {"outcome": "success", "calls_to_success": 12},
    ...            {"outcome": "no_plan", "calls_to_success": None},
    ...            {"outcome": "bad_action", "calls_to_success": None}]
    >>> [(p["budget"], p["successes"], p["grr"]) for p in grr_at_budgets(records, [2, 3, 20])]
    [(2, 0, 0.0), (3, 1, 0.25), (20, 2, 0.5)]
    """
    costs, n = [calls_to_success(r) for r in records], len(records)
    out = []
    for budget in budgets:
        wins = sum(c is not None and c <= budget for c in costs)
        out.append({"budget": budget, "successes": wins, "n": n, "grr": rate(wins, n),
                    "grr_ci": list(wilson_interval(wins, n))})
    return out


def default_budgets(limit: int) -> list[int]:
    """A 1-2-5 grid up to ``limit``, always ending at ``limit``.

    >>> default_budgets(60)
    [1, 2, 5, 10, 20, 50, 60]
    """
    grid, scale = [], 1
    while scale <= limit:
        grid += [b for b in (scale, 2 * scale, 5 * scale) if b < limit]
        scale *= 10
    return grid + [limit]


def load_run(run_dir: str | Path) -> dict:
    """A ``plansuite-eval`` output folder: its setting, seed, budget and per-instance records."""
    folder = Path(run_dir)
    results_file, records_file = folder / "results.json", folder / "instances.jsonl"
    if not (results_file.is_file() and records_file.is_file()):
        raise ConfigError(f"{folder}: not a finished plansuite-eval run (no results.json and "
                          "instances.jsonl)")
    results = json.loads(results_file.read_text())
    records = [json.loads(line) for line in records_file.read_text().splitlines() if line.strip()]
    return {"dir": str(folder), "setting": results["planner"],
            "feedback": results.get("feedback"), "seed": results["run"]["seed"],
            "budget": results.get("budget"), "records": records}


def compare_runs(runs: Sequence[Mapping], budgets: Sequence[int] | None = None,
                 baseline: str | None = None) -> dict:
    """GRR-vs-calls for every setting (runs pooled over seeds) and paired differences to
    ``baseline`` (default: the first setting) on the (seed, instance) items both have.

    >>> def run(setting, seed, costs):
    ...     return {"setting": setting, "feedback": "verifier", "seed": seed, "budget": 10,
    ...             "records": [{"id": f"p{i}", "outcome": "no_plan" if c is None else "success",
    ...                          "calls_to_success": c} for i, c in enumerate(costs)]}
    >>> report = compare_runs([run("restart", 0, [2, 9, None]), run("refine", 0, [2, 4, 6])],
    ...                       budgets=[5, 10])
    >>> [(p["budget"], p["grr"]) for p in report["settings"]["refine"]["curve"]]
    [(5, 0.6667), (10, 1.0)]
    >>> [(c["budget"], c["delta"], c["a_only"]) for c in report["versus_baseline"]["refine"]]
    [(5, 0.3333, 1), (10, 0.3333, 1)]
    """
    by_setting: dict[str, dict[tuple, Mapping]] = {}
    info: dict[str, dict] = {}
    for run in runs:
        items = by_setting.setdefault(run["setting"], {})
        meta = info.setdefault(run["setting"], {"feedback": run["feedback"], "seeds": [],
                                                "budget": run["budget"]})
        if run["seed"] in meta["seeds"]:
            raise ConfigError(f"{run.get('dir', run['setting'])}: setting {run['setting']} with "
                              f"seed {run['seed']} appears twice")
        meta["seeds"].append(run["seed"])
        if run["budget"] is not None:  # the smallest budget of the setting's runs bounds its curve
            meta["budget"] = min(meta["budget"] or run["budget"], run["budget"])
        for record in run["records"]:
            items[(run["seed"], record["id"])] = record
    if not by_setting:
        raise ConfigError("no runs to compare")
    names = list(by_setting)
    baseline = baseline or names[0]
    if baseline not in by_setting:
        raise ConfigError(f"baseline {baseline}: not among the settings ({', '.join(names)})")
    limit = min((m["budget"] for m in info.values() if m["budget"]), default=None)
    if budgets is None:
        if limit is None:
            raise ConfigError("the runs state no budget; give the budgets to compare at")
        budgets = default_budgets(limit)
    budgets = sorted(set(budgets))
    if limit is not None and budgets[-1] > limit:
        raise ConfigError(f"budget {budgets[-1]}: beyond the smallest run budget ({limit}); "
                          "a curve point needs runs that were allowed that many calls")
    report: dict[str, Any] = {"budgets": budgets, "baseline": baseline, "settings": {},
                              "versus_baseline": {}}
    for name in names:
        records = list(by_setting[name].values())
        report["settings"][name] = {**info[name], "seeds": sorted(info[name]["seeds"]),
                                    "n": len(records), "curve": grr_at_budgets(records, budgets)}
    base = by_setting[baseline]
    for name in names:
        if name == baseline:
            continue
        shared = sorted(set(base) & set(by_setting[name]))
        rows = []
        for budget in budgets:
            def solved(record: Mapping, b: int = budget) -> bool:
                cost = calls_to_success(record)
                return cost is not None and cost <= b

            diff = paired_difference([solved(by_setting[name][k]) for k in shared],
                                     [solved(base[k]) for k in shared])
            rows.append({"budget": budget, **diff})
        report["versus_baseline"][name] = rows
    return report
