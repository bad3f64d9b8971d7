"""GRR at an equal generator-call budget, written and printed (the numbers are
:mod:`plansuite.planning.budget`'s).

``plansuite-sample-efficiency RUN_DIR... [--budgets 10,20,40] [--baseline NAME]``
(:mod:`plansuite.cli.efficiency`) prints the table for any set of ``plansuite-eval`` output folders;
``conf/experiment/adaplanner_sample_efficiency.yaml`` writes it at the end of its sweep
(:class:`plansuite.cli.sweep_callbacks.SampleEfficiencyCallback`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

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
