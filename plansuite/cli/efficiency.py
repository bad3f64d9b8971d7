"""``plansuite-sample-efficiency RUN_DIR... [--budgets 10,20,40] [--baseline NAME] [--json FILE]``:
print GRR at equal generator-call budgets for ``plansuite-eval`` output folders
(:mod:`plansuite.report.sample_efficiency`)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from plansuite.errors import ConfigError
from plansuite.planning.budget import compare_runs, load_run
from plansuite.report.tables import sample_efficiency_table


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="plansuite-sample-efficiency",
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
