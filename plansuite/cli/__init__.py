"""Command-line entrypoints (Hydra apps). Configs live in the repository's ``conf/``."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

from plansuite.errors import PlansuiteError

CONF_DIR = str(Path(__file__).resolve().parents[2] / "conf")


_REPORTED = []  # set once a one-line error has been printed (hydra_errors then adds nothing)


def friendly_errors(task):
    """Show a PlansuiteError as one line on stderr and exit 1, instead of a traceback."""

    @functools.wraps(task)
    def wrapper(*args, **kwargs):
        try:
            return task(*args, **kwargs)
        except PlansuiteError as exc:
            if os.environ.get("PLANSUITE_DEBUG"):
                raise
            print(f"error: {exc}", file=sys.stderr, flush=True)
            _REPORTED.append(exc)
            sys.exit(1)

    return wrapper


def hydra_errors(config_name: str):
    """Around a ``@hydra.main`` entry point: when Hydra itself fails (an unknown group option or
    key, an output directory it cannot create) it prints several lines and exits 1; end them
    with one ``error:`` line that names the setting and what would be valid."""

    def decorate(main):
        @functools.wraps(main)
        def wrapper(*args, **kwargs):
            from plansuite.cli.hydra_diagnosis import blocked_out_dir, explain

            blocked = blocked_out_dir(config_name, sys.argv[1:])
            if blocked:
                print(f"error: {blocked}", file=sys.stderr, flush=True)
                sys.exit(1)
            try:
                return main(*args, **kwargs)
            except SystemExit as exc:
                if exc.code not in (0, None) and not _REPORTED:
                    line = explain(config_name, sys.argv[1:])
                    if line:
                        print(f"error: {line}", file=sys.stderr, flush=True)
                raise

        return wrapper

    return decorate
