"""PNG figures (matplotlib, no display): GRR vs k, GRR/BTR vs τ, outcomes, calls, budget curves."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from plansuite.planning.budget import grr_at_budgets  # noqa: E402
from plansuite.report.collect import Row  # noqa: E402
from plansuite.report.tables import OUTCOMES  # noqa: E402

COLOURS = {"success": "#2e7d32", "bad_action": "#c62828", "bad_next_state": "#ef6c00",
           "unparseable": "#6a1b9a", "goal_not_reached": "#f9a825", "no_plan": "#9e9e9e"}


def _series(rows: list[Row], x: str, group: tuple[str, ...]) -> dict[tuple, list[Row]]:
    """Rows grouped by ``group`` fields, keeping groups with >= 2 distinct ``x`` values."""
    groups: dict[tuple, list[Row]] = defaultdict(list)
    for r in rows:
        groups[tuple(getattr(r, g) for g in group)].append(r)
    return {key: sorted(rs, key=lambda r: getattr(r, x)) for key, rs in groups.items()
            if len({getattr(r, x) for r in rs}) >= 2}


def _errorbar(ax, rs: list[Row], x: str, metric: str, label: str) -> None:
    xs = [getattr(r, x) for r in rs]
    ys = [getattr(r, metric) for r in rs]
    cis = [getattr(r, f"{metric}_ci") for r in rs]
    err = [[y - lo for y, (lo, _) in zip(ys, cis, strict=True)], [hi - y for y, (_, hi) in zip(ys, cis, strict=True)]]
    ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=label)


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def grr_vs_k(rows: list[Row], out: Path) -> Path | None:
    """Fig. 2 of the paper: GRR against the number of attempts k."""
    series = _series(rows, "k", ("planner", "verifier_init", "temperature"))
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    for (planner, init, tau), rs in sorted(series.items()):
        _errorbar(ax, rs, "k", "grr", f"{planner} ({init}, τ={tau:g})")
    ax.set(xlabel="k (attempts)", ylabel="GRR", ylim=(0, 1), title="Goal-reaching rate vs k")
    ax.legend(fontsize=7)
    return _save(fig, out / "fig2_grr_vs_k.png")


def temperature(rows: list[Row], out: Path) -> Path | None:
    """Fig. 3 of the paper: GRR and BTR against the sampling temperature."""
    series = _series(rows, "temperature", ("planner", "verifier_init", "k"))
    if not series:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for (planner, init, k), rs in sorted(series.items()):
        for ax, metric in zip(axes, ("grr", "btr"), strict=True):
            _errorbar(ax, rs, "temperature", metric, f"{planner} ({init}, k={k})")
    axes[0].set(xlabel="τ", ylabel="GRR", ylim=(0, 1), title="GRR vs temperature")
    axes[1].set(xlabel="τ", ylabel="BTR", ylim=(0, 1), title="BTR vs temperature")
    axes[0].legend(fontsize=7)
    return _save(fig, out / "fig3_temperature.png")


def outcomes(rows: list[Row], out: Path) -> Path:
    """Stacked outcome shares per run."""
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.5))
    labels = [r.label for r in rows]
    left = [0.0] * len(rows)
    for o in OUTCOMES:
        share = [r.outcomes.get(o, 0) / r.n if r.n else 0 for r in rows]
        ax.barh(labels, share, left=left, color=COLOURS[o], label=o)
        left = [a + b for a, b in zip(left, share, strict=True)]
    ax.set(xlim=(0, 1), xlabel="share of instances", title="Outcome breakdown")
    ax.invert_yaxis()
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return _save(fig, out / "outcomes.png")


def calls_per_success(rows: list[Row], out: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.2))
    vals = [r.calls_per_success or 0 for r in rows]
    ax.barh([r.label for r in rows], vals, color="#1565c0")
    ax.set(xlabel="generator calls per success", title="Calls per success")
    ax.invert_yaxis()
    return _save(fig, out / "calls_per_success.png")


def sample_efficiency(rows: list[Row], out: Path) -> Path | None:
    """GRR against the generator-call budget, from each run's ``instances.jsonl``."""
    curves = {}
    for r in rows:
        f = Path(r.path) / "instances.jsonl"
        if "/" in r.label or not f.is_file():
            continue
        curves[r.label] = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    curves = {k: v for k, v in curves.items() if v and any(i["outcome"] == "success" for i in v)}
    if not curves:
        return None
    top = max(i["calls"]["generator"] for v in curves.values() for i in v)
    budgets = sorted({max(1, round(top * f / 40)) for f in range(41)})
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, inst in sorted(curves.items()):
        points = grr_at_budgets(inst, budgets)
        ax.plot(budgets, [p["successes"] / p["n"] for p in points], label=label)
    ax.set(xlabel="generator calls per instance (budget)", ylabel="GRR", ylim=(0, 1),
           title="Sample efficiency")
    ax.legend(fontsize=7)
    return _save(fig, out / "sample_efficiency.png")
