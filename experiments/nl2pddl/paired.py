"""Paired comparison of NL->PDDL runs on the same items, with 95 % intervals (issue 11).

Two scored run directories (``plansuite-nl2pddl task=repair`` wrote ``scores.jsonl``), each at its
final round, e.g. constrained vs. free decoding::

    python experiments/nl2pddl/paired.py RUN_CONSTRAINED RUN_FREE

or two rounds of one run, e.g. repair (round 3) vs. no repair (round 1) on the same items::

    python experiments/nl2pddl/paired.py RUN --rounds 3 1

For each column (parse, domain, solvable, op. success, structural, semantic) it prints A, B,
A - B and Newcombe's paired interval (:func:`plansuite.planning.metrics.paired_difference`),
overall and per description style. Round ``r`` of an item is its last attempt up to ``r``.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

from plansuite.errors import PlansuiteError
from plansuite.jsonl import iter_jsonl
from plansuite.planning.metrics import paired_difference

FIELDS = ("parsed", "domain_consistent", "solvable", "success", "structural", "semantic")


def at_round(run: Path, round_: int | None) -> dict[str, dict]:
    """item -> its score row at ``round_`` (None: the item's final attempt)."""
    path = run / "scores.jsonl"
    if not path.is_file():
        raise PlansuiteError(f"{path}: missing (score the run first: plansuite-nl2pddl task=score)")
    by_item: dict[str, list[dict]] = defaultdict(list)
    for row in iter_jsonl(path):
        by_item[row["item"]].append(row)
    out = {}
    for item, rows in by_item.items():
        rows.sort(key=lambda r: r["attempt"])
        out[item] = rows[-1] if round_ is None else rows[min(round_, len(rows)) - 1]
    return out


def compare(a: dict[str, dict], b: dict[str, dict]) -> list[str]:
    items = sorted(set(a) & set(b))
    if not items:
        raise PlansuiteError("the two runs share no item (same data_dir, split and limit?)")
    lines = ["| style | n | column | A | B | A - B | 95 % interval |", "|---|---|---|---|---|---|---|"]
    for style in ("all", *sorted({a[i].get("style") or "?" for i in items})):
        chosen = [i for i in items if style == "all" or (a[i].get("style") or "?") == style]
        for field in FIELDS:
            d = paired_difference([a[i].get(field) is True for i in chosen],
                                  [b[i].get(field) is True for i in chosen])
            lo, hi = d["delta_ci"]
            lines.append(f"| {style} | {d['n']} | {field} | {d['a']:.3f} | {d['b']:.3f} | "
                         f"{d['delta']:+.3f} | [{lo:+.3f}, {hi:+.3f}] |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="one run (with --rounds) or two runs")
    parser.add_argument("--rounds", nargs=2, type=int, metavar=("A", "B"),
                        help="compare two rounds of one run (default: final rounds of two runs)")
    args = parser.parse_args(argv)
    try:
        if args.rounds:
            if len(args.runs) != 1:
                raise PlansuiteError("--rounds compares two rounds of one run: give one run")
            a, b = (at_round(args.runs[0], r) for r in args.rounds)
        elif len(args.runs) == 2:
            a, b = at_round(args.runs[0], None), at_round(args.runs[1], None)
        else:
            raise PlansuiteError("give two runs, or one run with --rounds A B")
        print("\n".join(compare(a, b)))
    except PlansuiteError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
