"""``plansuite-best-params SWEEP_DIR [TEST_INSTANCES]``: print a finished search's best parameters
(and ``instances=TEST_INSTANCES``) as overrides for ``plansuite-eval`` (:mod:`plansuite.planning.tuning`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from plansuite.errors import ConfigError
from plansuite.planning.tuning import best_params


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not 1 <= len(args) <= 2:
        raise SystemExit("usage: plansuite-best-params SWEEP_DIR [TEST_INSTANCES]")
    try:
        best = best_params(args[0])
    except ConfigError as exc:
        raise SystemExit(f"error: {exc}") from None
    extra = [f"instances={args[1]}"] if len(args) == 2 else []
    print(" ".join([*(f"{k}={v}" for k, v in best.items()), *extra]))


if __name__ == "__main__":
    main()
