"""Every table the suite prints or writes, in one place.

- Table 1 (planners) and Table 2 (V_base vs V_generator) over result rows, for the report:
  Table 1 lists every run; Table 2 has one cell per (planner, k, τ, verifier init), whose runs
  (usually one per seed) are aggregated, never dropped (:class:`Cell`);
- the one-line-per-run console table of ``plansuite-eval`` (:func:`table_header`, :func:`table_row`);
- GRR at equal call budgets (:func:`sample_efficiency_table`, :mod:`plansuite.report.sample_efficiency`);
- the skill rounds (:func:`rounds_table`, ``rounds.md`` of :mod:`plansuite.skills.rounds`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import mean, stdev

from plansuite.planning.metrics import wilson_interval
from plansuite.planning.outcomes import Outcome
from plansuite.report.collect import Row

OUTCOMES = ("success", "bad_action", "bad_next_state", "unparseable", "goal_not_reached", "no_plan")


def fmt_ci(value: float, ci: tuple[float, float]) -> str:
    """``0.655 [0.587, 0.718]``.

    >>> fmt_ci(0.655, (0.5868, 0.7178))
    '0.655 [0.587, 0.718]'
    """
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


def compare(name_a: str, a: dict, name_b: str, b: dict) -> str:
    """One line comparing two runs' GRR and BTR (``results.json`` dicts) with their 95 % CIs.

    >>> a = {"grr": 0.62, "grr_ci": [0.55, 0.68], "btr": 0.05, "btr_ci": [0.03, 0.09]}
    >>> b = {"grr": 0.40, "grr_ci": [0.33, 0.47], "btr": 0.50, "btr_ci": [0.43, 0.57]}
    >>> compare("gv", a, "g", b)
    'gv vs g: GRR 0.620 vs 0.400 (+0.220, outside both 95% CIs); BTR 0.050 vs 0.500 (10.0x lower)'
    >>> compare("g", b, "gv", a).split("; ")[0]
    'g vs gv: GRR 0.400 vs 0.620 (-0.220, outside both 95% CIs)'
    >>> compare("gv", a, "random", {**b, "btr": 0.0}).split("; ")[1]
    'BTR 0.050 vs 0.000 (higher: the other has none)'
    """
    diff = a["grr"] - b["grr"]
    apart = (a["grr"] > b["grr_ci"][1] and b["grr"] < a["grr_ci"][0]) or (
        a["grr"] < b["grr_ci"][0] and b["grr"] > a["grr_ci"][1])
    where = "outside both 95% CIs" if apart else "within a 95% CI"
    if a["btr"] == b["btr"]:
        btr = "equal"
    elif min(a["btr"], b["btr"]) == 0:
        btr = "lower: none" if a["btr"] == 0 else "higher: the other has none"
    else:
        ratio = b["btr"] / a["btr"]
        btr = f"{ratio:.1f}x lower" if ratio >= 1 else f"{1 / ratio:.1f}x higher"
    return (f"{name_a} vs {name_b}: GRR {a['grr']:.3f} vs {b['grr']:.3f} ({diff:+.3f}, {where}); "
            f"BTR {a['btr']:.3f} vs {b['btr']:.3f} ({btr})")


def markdown(headers: list[str], rows: list[list[str]]) -> str:
    """A GitHub-style markdown table.

    >>> print(markdown(["a", "b"], [["1", "2"]]))
    | a | b |
    |---|---|
    | 1 | 2 |
    """
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def table1(rows: list[Row]) -> tuple[list[str], list[list[str]]]:
    """Every run: GRR and BTR with 95 % CIs, outcome counts, calls."""
    headers = ["run", "planner", "verifier", "k", "τ", "N", "GRR [95% CI]", "BTR [95% CI]",
               *OUTCOMES, "gen calls", "verifier calls", "calls/success"]
    body = []
    for r in rows:
        cps = r.calls_per_success
        body.append([r.label, r.planner, r.verifier_init, str(r.k), f"{r.temperature:g}", str(r.n),
                     fmt_ci(r.grr, r.grr_ci), fmt_ci(r.btr, r.btr_ci),
                     *(str(r.outcomes.get(o, 0)) for o in OUTCOMES),
                     str(r.calls.get("generator", 0)), str(r.calls.get("verifier", 0)),
                     f"{cps:.1f}" if cps is not None else "–"])
    return headers, body


def t_quantile(df: int) -> float:
    """The 97.5 % quantile of Student's t with ``df`` degrees of freedom, exact (the interval of a
    mean over a handful of seeds is much wider than the normal one).

    >>> [round(t_quantile(df), 3) for df in (1, 2, 11, 1000)]
    [12.706, 4.303, 2.201, 1.962]
    """
    from scipy.special import stdtrit  # lazily: only tables over several runs per cell need it

    return float(stdtrit(df, 0.975))


@dataclass(frozen=True)
class Cell:
    """The runs of one table cell, e.g. the three seeds of V_base at generator_verifier, k=25."""

    runs: tuple[Row, ...]

    def mean(self, metric: str) -> float:
        return mean(getattr(r, metric) for r in self.runs)

    def seed_interval(self, metric: str) -> tuple[float, float] | None:
        """95 % t-interval of the mean over runs (``None`` for a single run).

        >>> rows = [Row("r", "p", "base", 1, 1.0, s, 10, g, (0, 1), 0.0, (0, 1), {}, {})
        ...         for s, g in enumerate((0.4, 0.5, 0.6))]
        >>> Cell(tuple(rows)).seed_interval("grr")
        (0.2516, 0.7484)
        """
        values = [getattr(r, metric) for r in self.runs]
        if len(values) < 2:
            return None
        half = t_quantile(len(values) - 1) * stdev(values) / math.sqrt(len(values))
        centre = mean(values)
        return round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)

    def pooled(self, metric: str) -> tuple[float, tuple[float, float]]:
        """The rate over every instance of every run and its Wilson interval (runs on the same
        instances are not independent draws: read it next to :meth:`seed_interval`)."""
        hits = sum(round(getattr(r, metric) * r.n) for r in self.runs)
        total = sum(r.n for r in self.runs)
        return (hits / total if total else 0.0), wilson_interval(hits, total)

    def describe(self, metric: str) -> str:
        """One run: ``0.620 [0.522, 0.709]`` (its per-instance interval); several: the mean,
        the interval across runs and the pooled per-instance interval."""
        seeds = self.seed_interval(metric)
        value, pooled = self.pooled(metric)
        if seeds is None:
            return fmt_ci(value, pooled)
        return (f"{self.mean(metric):.3f} [{seeds[0]:.3f}, {seeds[1]:.3f}] across runs; "
                f"pooled {fmt_ci(value, pooled)}")


def cells(rows: list[Row]) -> dict[tuple[str, int, float, str], Cell]:
    """Rows grouped by (planner, k, τ, verifier init), each group in seed order."""
    groups: dict[tuple[str, int, float, str], list[Row]] = {}
    for r in rows:
        groups.setdefault((r.planner, r.k, r.temperature, r.verifier_init), []).append(r)
    return {key: Cell(tuple(sorted(rs, key=lambda r: (r.seed, r.path))))
            for key, rs in sorted(groups.items())}


def table2(rows: list[Row]) -> tuple[list[str], list[list[str]]] | None:
    """V_base vs V_generator side by side for each (planner, k, τ) that has both; a cell with
    several runs (seeds) shows their mean, the interval across them and the pooled interval, and
    ``runs`` says how many each side holds."""
    grouped = cells([r for r in rows if r.verifier_init in ("base", "generator")])
    body = []
    for planner, k, tau in sorted({key[:3] for key in grouped}):
        base, gen = grouped.get((planner, k, tau, "base")), grouped.get((planner, k, tau, "generator"))
        if base and gen:
            body.append([planner, str(k), f"{tau:g}", f"{len(base.runs)} / {len(gen.runs)}",
                         base.describe("grr"), gen.describe("grr"), base.describe("btr"),
                         gen.describe("btr")])
    if not body:
        return None
    return ["planner", "k", "τ", "runs (base / generator)", "GRR V_base", "GRR V_generator",
            "BTR V_base", "BTR V_generator"], body


def breakdown_table(rows: list[Row], key: str,
                    label: str) -> tuple[list[str], list[list[str]]] | None:
    """GRR [95 % CI] (n) of every run per group of its ``results.json`` breakdown ``key``
    (``by_objects``, ``by_goal_size``: :func:`plansuite.planning.metrics.grr_by`), one column per
    group headed ``label`` and the group's value; ``None`` unless there are two groups or more.

    >>> by = {"3": {"n": 2, "grr": 0.5, "grr_ci": [0.09, 0.91]}, "10": {"n": 1, "grr": 0.0,
    ...       "grr_ci": [0.0, 0.79]}}
    >>> row = Row("r", "p", "none", 1, 1.0, 0, 3, .3, (0, 1), 0, (0, 1), {}, {}, extra={"b": by})
    >>> headers, body = breakdown_table([row], "b", "blocks")
    >>> headers[3:], body[0][3:]
    (['blocks 3', 'blocks 10'], ['0.500 [0.090, 0.910] (n=2)', '0.000 [0.000, 0.790] (n=1)'])
    >>> breakdown_table([row], "other", "blocks") is None
    True
    """
    groups = sorted({int(g) for r in rows for g in r.extra.get(key) or {}})
    if len(groups) < 2:
        return None
    body = []
    for r in rows:
        by = r.extra.get(key) or {}
        body.append([r.label, r.planner, r.verifier_init, *(
            f"{fmt_ci(c['grr'], c['grr_ci'])} (n={c['n']})" if (c := by.get(str(g))) else "–"
            for g in groups)])
    return ["run", "planner", "verifier", *(f"{label} {g}" for g in groups)], body


SHORT = {"success": "success", "bad_action": "bad_act", "bad_next_state": "bad_nxt",
         "unparseable": "unparse", "goal_not_reached": "no_goal", "no_plan": "no_plan"}


def table_header() -> str:
    return (f"{'planner':<30} {'GRR [95% CI]':<21} {'BTR [95% CI]':<21} "
            + " ".join(f"{SHORT[x.value]:>7}" for x in Outcome) + f" {'gen_calls':>9}")


def table_row(name: str, results: dict) -> str:
    """A Table-1-style line: GRR and BTR with their CIs, every outcome count, generator calls."""
    o = results["outcomes"]
    rates = " ".join(f"{results[m]:.3f} [{results[m + '_ci'][0]:.3f}, {results[m + '_ci'][1]:.3f}]"
                     for m in ("grr", "btr"))
    return (f"{name:<30} {rates} "
            + " ".join(f"{o[x.value]:>7}" for x in Outcome)
            + f" {results['calls']['generator']:>9}")


def sample_efficiency_table(report: Mapping) -> str:
    """Markdown: GRR [95 % CI] per setting and budget, then the paired differences."""
    lines = [markdown(["setting", "feedback", "seeds", "n", *(f"GRR@{b}" for b in report["budgets"])],
                      [[name, str(s["feedback"]), str(len(s["seeds"])), str(s["n"]),
                        *(fmt_ci(p["grr"], p["grr_ci"]) for p in s["curve"])]
                       for name, s in report["settings"].items()])]
    for name, rows in report["versus_baseline"].items():
        lines += ["", f"{name} minus {report['baseline']} (paired on {rows[0]['n']} seed x "
                      "instance items; Newcombe 95 % CI):", "",
                  markdown(["budget", "delta", "95 % CI", "only this", "only baseline"],
                           [[str(r["budget"]), f"{r['delta']:+.3f}",
                             f"[{r['delta_ci'][0]:+.3f}, {r['delta_ci'][1]:+.3f}]",
                             str(r["a_only"]), str(r["b_only"])] for r in rows])]
    return "\n".join(lines)


def _grr(x: Mapping | None) -> str:
    return fmt_ci(x["grr"], x["grr_ci"]) if x else "-"


def rounds_table(rounds: Sequence[dict]) -> str:
    """The per-round table (markdown): archive, batch, decision, validation and test GRR.

    >>> row = {"round": 1, "archive": 12, "batch": 12, "accepted": True, "wall_s": 95.0,
    ...        "val": {"current": {"grr": 0.3, "grr_ci": [0.2, 0.4]},
    ...                "candidate": {"grr": 0.4, "grr_ci": [0.3, 0.5]}, "delta_ci": [0.01, 0.2]},
    ...        "test": {"grr": 0.35, "grr_ci": [0.25, 0.45]}}
    >>> rounds_table([row]).splitlines()[2]
    '| 1 | 12 | 12 | yes | 0.300 [0.200, 0.400] | 0.400 [0.300, 0.500] | +0.100 [0.010, 0.200] | 0.350 [0.250, 0.450] | 95 |'
    """
    rows = []
    for r in rounds:
        val = r.get("val") or {}
        cur, cand = val.get("current"), val.get("candidate")
        delta = "-"
        if cur and cand:
            lo, hi = val["delta_ci"]
            delta = f"{cand['grr'] - cur['grr']:+.3f} [{lo:.3f}, {hi:.3f}]"
        accepted = {True: "yes", False: "no", None: "-"}[r.get("accepted")]
        rows.append([str(r["round"]), str(r["archive"]), str(r.get("batch", "-")), accepted,
                     _grr(cur), _grr(cand), delta, _grr(r.get("test")), f"{r.get('wall_s', 0):.0f}"])
    return markdown(["round", "archive", "batch", "accepted", "val GRR in use [95% CI]",
                     "val GRR candidate", "Δ val [95% CI]", "test GRR (in use after)", "wall s"],
                    rows) + "\n"
