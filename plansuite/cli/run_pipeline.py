"""``plansuite-pipeline NAME [KEY=VALUE ...] [--dry-run] [--only STAGE...]``: run a multi-stage
pipeline of ``conf/pipeline/`` (:mod:`plansuite.pipeline`)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from plansuite import pipeline
from plansuite.errors import PlansuiteError


def run(argv: list[str] | None = None) -> dict[str, str]:
    parser = argparse.ArgumentParser(prog="plansuite-pipeline", description=pipeline.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline", help="a name in conf/pipeline/ (demo, smoke, reproduce) or a YAML file")
    parser.add_argument("overrides", nargs="*", help="KEY=VALUE, e.g. root=outputs/demo2 seed=1")
    parser.add_argument("--dry-run", action="store_true", help="print what would run; run nothing")
    parser.add_argument("--only", nargs="+", default=None, help="run only these stages")
    args = parser.parse_args(argv)
    settings, stages = pipeline.load_pipeline(args.pipeline, args.overrides)
    states = pipeline.run_pipeline(settings, stages, dry_run=args.dry_run, only=args.only)
    if not args.dry_run:
        pipeline.print_comparisons(Path(settings["root"]), settings.get("compare", []))
        pipeline.write_ablation(Path(settings["root"]), settings.get("ablation", []))
    return states


def main(argv: list[str] | None = None) -> None:
    """``run``, with a PlansuiteError shown as one ``error:`` line and exit code 1."""
    try:
        run(argv)
    except PlansuiteError as exc:
        if os.environ.get("PLANSUITE_DEBUG"):
            raise
        raise SystemExit(f"error: {exc}") from None


if __name__ == "__main__":
    main()
