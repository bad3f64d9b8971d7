"""GRR at an equal generator-call budget, written and printed (the numbers are
:mod:`plansuite.planning.budget`'s).

``python -m plansuite.report.sample_efficiency RUN_DIR... [--budgets 10,20,40] [--baseline NAME]``
prints the table for any set of ``plansuite-eval`` output folders;
``conf/experiment/adaplanner_sample_efficiency.yaml`` writes it at the end of its sweep
(:class:`plansuite.cli.sweep_callbacks.SampleEfficiencyCallback`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from plansuite.errors import ConfigError
from plansuite.planning.budget import compare_runs, load_run
from plansuite.report.tables import sample_efficiency_table


def write_report(runs_root: str | Path, budgets: Sequence[int] | None = None,
                 baseline: str | None = None, out: str | Path | None = None) -> dict:
    """Compare every finished run under ``runs_root``; write ``sample_efficiency.{json,md}``."""
    root = Path(runs_root)
    dirs = sorted(p.parent for p in root.glob("*/results.json"))
    report = compare_runs([load_run(d) for d in dirs], budgets, baseline)
    target = Path(out) if out else root
    target.mkdir(parents=True, exist_ok=True)
    (target / "sample_efficiency.json").write_text(json.dumps(report, indent=2) + "\n")
    (target / "sample_efficiency.md").write_text(sample_efficiency_table(report) + "\n")
    return report


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m plansuite.report.sample_efficiency",
                                     description="GRR at equal generator-call budgets")
    parser.add_argument("runs", nargs="+", help="plansuite-eval output folders")
    parser.add_argument("--budgets", help="comma-separated, e.g. 10,20,40 (default: 1-2-5 grid)")
    parser.add_argument("--baseline", help="setting (planner name) to compare against")
    parser.add_argument("--json", help="also write the report as JSON here")
    args = parser.parse_args(argv)
    try:
        budgets = [int(b) for b in args.budgets.split(",")] if args.budgets else None
        report = compare_runs([load_run(d) for d in args.runs], budgets, args.baseline)
    except (ConfigError, ValueError) as exc:
        raise SystemExit(f"error: {exc}") from None
    print(sample_efficiency_table(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
