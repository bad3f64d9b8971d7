"""``plansuite-notebook NOTEBOOK OUT [--timeout S]`` (``make notebook``): execute a notebook and write
the executed copy, outputs included, to OUT (:mod:`plansuite.report.notebook`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from plansuite.report import notebook


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="plansuite-notebook", description=notebook.__doc__)
    parser.add_argument("notebook", type=Path)
    parser.add_argument("out", type=Path, help="where the executed copy goes")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = parser.parse_args(argv)
    print(f"[notebook] wrote {notebook.execute(args.notebook, args.out, args.timeout)}")


if __name__ == "__main__":
    main()
