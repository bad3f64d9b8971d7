"""The operational checks (parse, consistency, ENHSP/TAMER + VAL) on a PDDL 2.1 NL->PDDL dataset's
critic examples: how often each corruption kind is caught without looking at the description.

    OMP_NUM_THREADS=1 python experiments/nl2pddl/checks21.py DATA_DIR [--split test] [--limit 40]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter, defaultdict
from pathlib import Path

from plansuite.nl2pddl.data.dataset import load_critic_examples
from plansuite.nl2pddl.judging.problem_checks import FLAGS, OperationalChecker


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("--split", default="test")
    ap.add_argument("--limit", type=int, default=40)
    args = ap.parse_args()
    checker = OperationalChecker(Path(args.data_dir) / "domain.pddl", time_limit=60)
    tally: dict[str, Counter] = defaultdict(Counter)
    start = time.perf_counter()
    for example in load_critic_examples(args.data_dir, args.split)[: args.limit]:
        report = checker.check(example.problem)
        tally[example.label]["n"] += 1
        tally[example.label].update(f for f, v in report.flags().items() if v)
    print(f"{args.data_dir} ({args.split}, {sum(t['n'] for t in tally.values())} examples, "
          f"{time.perf_counter() - start:.0f} s)")
    cols = [f for f in FLAGS if f != "critic_accepted"] + ["success"]
    print("| label | n | " + " | ".join(cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for label, t in sorted(tally.items()):
        print(f"| {label} | {t['n']} | " + " | ".join(str(t[c]) for c in cols) + " |")


if __name__ == "__main__":
    main()
