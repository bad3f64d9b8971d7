"""``plansuite-report DIR... [--out OUT]``: tables, figures and an HTML page from result folders."""

from __future__ import annotations

import argparse
from pathlib import Path

from plansuite.cli import friendly_errors
from plansuite.report.collect import load_rows
from plansuite.report.html import write_report
from plansuite.report.paper import paired_table, paper_table
from plansuite.report.tables import markdown, table1


@friendly_errors
def run(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(prog="plansuite-report", description=__doc__)
    parser.add_argument("dirs", nargs="+", help="folders holding results.json files (searched recursively)")
    parser.add_argument("--out", default=None, help="output folder (default: <first dir>/report)")
    parser.add_argument("--title", default="plansuite report")
    args = parser.parse_args(argv)
    rows = load_rows(args.dirs)
    out = Path(args.out) if args.out else Path(args.dirs[0]) / "report"
    page = write_report(rows, out, args.title)
    headers, body = table1(rows)
    keep = [0, 2, 3, 6, 7, 14]  # run, verifier, k, GRR, BTR, generator calls
    print(markdown([headers[i] for i in keep], [[r[i] for i in keep] for r in body]))
    for table in (paper_table(rows), paired_table(rows)):
        if table:
            print()
            print(markdown(*table))
    print(f"[report] wrote {page}")
    return page


def main() -> None:
    run()


if __name__ == "__main__":
    main()
