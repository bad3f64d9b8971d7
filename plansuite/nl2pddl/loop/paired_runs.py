"""Paired comparison of scored NL->PDDL runs on the same items, with 95 % intervals.

Two runs (``plansuite-nl2pddl task=repair`` wrote each one's ``scores.jsonl``) at their final
rounds, e.g. constrained vs. free decoding, or two rounds of one run, e.g. repair (round 3) vs. no
repair (round 1). Round ``r`` of an item is its last attempt up to ``r``. Only items both sides
scored are compared, so a shorter run never biases the other's rate. For each column it gives A,
B, A - B and Newcombe's paired interval (:func:`plansuite.planning.metrics.paired_difference`),
overall and per description style; ``plansuite-nl2pddl task=compare`` prints and writes it.
"""

from __future__ import annotations

from pathlib import Path

from plansuite.errors import PlansuiteError
from plansuite.jsonl import iter_jsonl
from plansuite.nl2pddl.loop.round_metrics import at_round, attempts_by_item
from plansuite.planning.metrics import paired_difference
from plansuite.report.tables import markdown

FIELDS = ("parsed", "domain_consistent", "solvable", "success", "structural", "semantic")


def scores_at_round(run: str | Path, round_: int | None = None) -> dict[str, dict]:
    """item -> its score row at ``round_`` (None: the item's final attempt)."""
    path = Path(run) / "scores.jsonl"
    if not path.is_file():
        raise PlansuiteError(f"{path}: missing (score the run first: plansuite-nl2pddl task=score)")
    return {item: at_round(rows, round_) for item, rows in attempts_by_item(iter_jsonl(path)).items()}


def paired_style_table(a: dict[str, dict], b: dict[str, dict],
                       fields: tuple[str, ...] = FIELDS) -> str:
    """Markdown table: per description style (``all`` first) and score column, A, B, A - B and
    its paired interval.

    >>> a = {"p1": {"style": "terse", "success": True}, "p2": {"style": "terse", "success": False}}
    >>> b = {"p1": {"style": "terse", "success": False}, "p2": {"style": "terse", "success": False}}
    >>> print(paired_style_table(a, b, ("success",)).splitlines()[2])
    | all | 2 | success | 0.500 | 0.000 | +0.500 | [-0.273, +0.905] |
    """
    items = sorted(set(a) & set(b))
    if not items:
        raise PlansuiteError("the two runs share no item (same data_dir, split and limit?)")
    rows = []
    for style in ("all", *sorted({a[i].get("style") or "?" for i in items})):
        chosen = [i for i in items if style == "all" or (a[i].get("style") or "?") == style]
        for field in fields:
            d = paired_difference([a[i].get(field) is True for i in chosen],
                                  [b[i].get(field) is True for i in chosen])
            lo, hi = d["delta_ci"]
            rows.append([style, str(d["n"]), field, f"{d['a']:.3f}", f"{d['b']:.3f}",
                         f"{d['delta']:+.3f}", f"[{lo:+.3f}, {hi:+.3f}]"])
    return markdown(["style", "n", "column", "A", "B", "A - B", "95 % interval"], rows)
