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
from plansuite.nl2pddl.round_metrics import at_round, attempts_by_item
from plansuite.planning.metrics import paired_difference

FIELDS = ("parsed", "domain_consistent", "solvable", "success", "structural", "semantic")


def scores_at_round(run: str | Path, round_: int | None = None) -> dict[str, dict]:
    """item -> its score row at ``round_`` (None: the item's final attempt)."""
    path = Path(run) / "scores.jsonl"
    if not path.is_file():
        raise PlansuiteError(f"{path}: missing (score the run first: plansuite-nl2pddl task=score)")
    return {item: at_round(rows, round_) for item, rows in attempts_by_item(iter_jsonl(path)).items()}


def paired_table(a: dict[str, dict], b: dict[str, dict], fields: tuple[str, ...] = FIELDS) -> list[str]:
    """Markdown rows: per style (``all`` first) and field, A, B, A - B and its paired interval."""
    items = sorted(set(a) & set(b))
    if not items:
        raise PlansuiteError("the two runs share no item (same data_dir, split and limit?)")
    lines = ["| style | n | column | A | B | A - B | 95 % interval |", "|---|---|---|---|---|---|---|"]
    for style in ("all", *sorted({a[i].get("style") or "?" for i in items})):
        chosen = [i for i in items if style == "all" or (a[i].get("style") or "?") == style]
        for field in fields:
            d = paired_difference([a[i].get(field) is True for i in chosen],
                                  [b[i].get(field) is True for i in chosen])
            lo, hi = d["delta_ci"]
            lines.append(f"| {style} | {d['n']} | {field} | {d['a']:.3f} | {d['b']:.3f} | "
                         f"{d['delta']:+.3f} | [{lo:+.3f}, {hi:+.3f}] |")
    return lines
