"""The verifier paper's published numbers beside ours, and paired comparisons against baselines.

Published numbers (the paper's 200 Blocksworld test instances, GPU, pretrained GPT-2): its text
gives generator@25 GRR 0.375 / BTR 0.525 and generator+verifier@25 GRR 0.655 / BTR 0.05; its
published code's committed metrics give the first sampled trajectory (generator@1) 0.28, the
verifier applied post hoc to 25 trajectories 0.66 (BTR 9/200) and random applicable actions with
restarts @25 0.47 (``../shared/NOTES.md``). They are shown only beside runs on those instances.

Paired comparisons: every run against each baseline run (random-with-restart, generator@k) that
planned the same instances with the same seed, from the per-instance outcomes in
``instances.jsonl``; the difference of GRRs gets Newcombe's paired 95 % interval
(:func:`plansuite.planning.metrics.paired_difference`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from plansuite.jsonl import iter_jsonl
from plansuite.planning.metrics import paired_difference
from plansuite.report.collect import Row

PAPER_INSTANCES = "paper-blocksworld-test"  # the folder name of the paper's 200 instances


@dataclass(frozen=True)
class Published:
    source: str
    grr: float
    btr: float | None


# (planner, verifier init, k) -> the paper's number for that row
PUBLISHED: dict[tuple[str, str, int], Published] = {
    ("generator", "none", 25): Published("paper text", 0.375, 0.525),
    ("generator", "none", 1): Published("paper's code: first trajectory", 0.28, 0.685),
    ("generator_verifier", "generator", 25): Published("paper text", 0.655, 0.05),
    ("posthoc", "generator", 25): Published("paper's code: post-hoc", 0.66, 0.045),
    ("random_restart", "none", 25): Published("paper's code", 0.47, 0.0),
}


def on_paper_instances(row: Row) -> bool:
    return Path(str(row.extra.get("instances_dir", ""))).name == PAPER_INSTANCES


def published_for(row: Row) -> Published | None:
    """The paper's number for a run like ``row``, on the paper's instances; else ``None``."""
    if not on_paper_instances(row):
        return None
    return PUBLISHED.get((row.planner, row.verifier_init, row.k))


def paper_table(rows: list[Row]) -> tuple[list[str], list[list[str]]] | None:
    """Our GRR/BTR beside the paper's, for every run that has a published counterpart."""
    body = []
    for r in rows:
        pub = published_for(r)
        if pub is not None:
            btr = "–" if pub.btr is None else f"{pub.btr:.3f}"
            body.append([r.label, r.planner, r.verifier_init, str(r.k), f"{r.grr:.3f}",
                         f"{pub.grr:.3f}", f"{r.btr:.3f}", btr, pub.source])
    if not body:
        return None
    return ["run", "planner", "verifier", "k", "GRR ours", "GRR paper", "BTR ours", "BTR paper",
            "paper source"], body


def _successes(row: Row) -> dict[str, bool] | None:
    return successes(Path(row.path))


def successes(run_dir: Path) -> dict[str, bool] | None:
    """Instance id -> success, from a run folder's ``instances.jsonl`` (``None`` without one)."""
    path = run_dir / "instances.jsonl"
    if not path.is_file():
        return None
    return {rec["id"]: rec["outcome"] == "success" for rec in iter_jsonl(path)}


def is_baseline(row: Row) -> bool:
    """Random-with-restart and the lone generator are what every planner is compared with."""
    return row.planner in ("random_restart", "generator") and "/" not in row.label


def paired_cells(run: dict[str, bool], base: dict[str, bool]) -> list[str] | None:
    """N, both GRRs, the paired difference with its 95 % interval, the discordant counts and the
    verdict, on the instances both runs planned (``None`` when they share none)."""
    common = sorted(set(run) & set(base))
    if not common:
        return None
    d = paired_difference([run[i] for i in common], [base[i] for i in common])
    lo, hi = d["delta_ci"]
    verdict = "above" if lo > 0 else "below" if hi < 0 else "not different"
    return [str(d["n"]), f"{d['a']:.3f}", f"{d['b']:.3f}", f"{d['delta']:+.3f} [{lo:+.3f}, {hi:+.3f}]",
            str(d["a_only"]), str(d["b_only"]), verdict]


PAIRED_HEADERS = ["N", "GRR run", "GRR baseline", "difference [paired 95% CI]", "run only",
                  "baseline only", "run vs baseline"]


def paired_table(rows: list[Row]) -> tuple[list[str], list[list[str]]] | None:
    """Each run minus each baseline on the instances both planned (same seed, same instance
    folder): paired GRR difference with its 95 % interval and the discordant counts."""
    outcomes = {r.label: _successes(r) for r in rows}
    body = []
    for base in (r for r in rows if is_baseline(r) and outcomes[r.label]):
        for r in rows:
            if r is base or "/" in r.label or r.seed != base.seed or not outcomes[r.label] \
                    or r.extra.get("instances_dir") != base.extra.get("instances_dir"):
                continue  # pairs need the same instances: the same ids in two folders are not
            cells = paired_cells(outcomes[r.label], outcomes[base.label])
            if cells is not None:
                body.append([r.label, base.label, *cells])
    if not body:
        return None
    return ["run", "baseline", *PAIRED_HEADERS], body


def ablation_table(root: Path, steps: list[list[str]]) -> tuple[list[str], list[list[str]]] | None:
    """What each change bought: ``steps`` are ``[run, baseline, what the run adds]`` folders under
    ``root``, compared paired on the instances both planned; steps missing a run are skipped."""
    body = []
    for run, base, what in steps:
        a, b = successes(root / run), successes(root / base)
        cells = None if a is None or b is None else paired_cells(a, b)
        if cells is not None:
            body.append([what, run.split("/")[-1], base.split("/")[-1], *cells])
    if not body:
        return None
    return ["change", "run", "baseline", *PAIRED_HEADERS], body


__all__ = ["PUBLISHED", "Published", "ablation_table", "paired_cells", "paired_table", "paper_table",
           "published_for", "successes"]
