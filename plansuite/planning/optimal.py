"""Fast Downward's optimal plan lengths (``seq-opt-bjolp``), cached per instance on disk.

The cache key is the planner's identity (:func:`~plansuite.pddl.fast_downward.identity`: driver,
version, build) and the content of the domain and problem files, so renamed or copied instances
hit the cache, an edited problem never reuses a stale length and another planner never reuses
this one's verdicts. Timeouts are not cached (a later run with a larger limit may solve the
instance); an FD error is a :class:`~plansuite.errors.PlannerError`, never a cached "no length":
:class:`InstanceRefused` when FD reports an input error in this instance (the evaluation records
it and plans the others), any other failure (a missing or broken planner) ends the run.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from plansuite.errors import PlannerError
from plansuite.pddl.fast_downward import check_search, identity, solve


class InstanceRefused(PlannerError):
    """Fast Downward refused this problem as bad input (its exit codes 30-37) although the suite's
    reader accepted it (e.g. a requirement or a character FD does not read)."""

    def __init__(self, problem_file: Path, message: str):
        self.message = f"Fast Downward refused it ({message})"
        super().__init__(f"{problem_file}: {self.message}")


class OptimalLengths:
    def __init__(self, domain_file: str | Path, cache_dir: str | Path, time_limit: float = 60.0,
                 mode: str = "optimal"):
        check_search(mode, time_limit, key="optimal")
        self.domain_file = Path(domain_file)
        self.domain_text = self.domain_file.read_text()
        self.cache_dir, self.time_limit, self.mode = Path(cache_dir), time_limit, mode

    def _cache_file(self, problem_file: Path) -> Path:
        key = hashlib.sha256("\x00".join([identity(), self.mode, self.domain_text,
                                          problem_file.read_text()]).encode()).hexdigest()[:32]
        return self.cache_dir / f"{key}.json"

    def get(self, problem_file: str | Path) -> int | None:
        """The optimal length, or None when FD did not solve it within the time limit."""
        problem_file = Path(problem_file)
        cached = self._cache_file(problem_file)
        if cached.is_file():
            return json.loads(cached.read_text())["length"]
        result = solve(self.domain_file, problem_file, self.mode, self.time_limit)
        if result.status == "error":  # FD refused an instance our checks accepted: not its length
            raise InstanceRefused(problem_file, result.message)
        length = len(result.plan) if result.plan is not None else None
        if result.status in ("solved", "unsolvable"):
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps({"problem": str(problem_file), "status": result.status,
                                       "length": length, "seconds": round(result.seconds, 3)}))
            os.replace(tmp, cached)
        return length
