"""Command-line entrypoints (Hydra apps). Configs live in the repository's ``conf/``."""

from __future__ import annotations

import functools
import os
import sys

from plansuite import CONF_DIR as CONF_DIR  # the configs every app reads
from plansuite.errors import PlansuiteError


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
            sys.exit(1)

    return wrapper
