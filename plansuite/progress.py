"""Progress of long jobs with an ETA: a tqdm bar on a terminal, a line every few seconds
otherwise (logs, CI, SLURM output files), where a bar would be thousands of carriage returns."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable


def format_eta(seconds: float | None) -> str:
    """``1h02m``, ``3m05s``, ``42s``; ``?`` before the first item is done.

    >>> format_eta(3725), format_eta(185), format_eta(41.6), format_eta(None)
    ('1h02m', '3m05s', '42s', '?')
    """
    if seconds is None:
        return "?"
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def eta(done: int, total: int, elapsed_s: float) -> float | None:
    """Seconds left at the mean rate so far.

    >>> eta(10, 40, 5.0), eta(0, 40, 5.0)
    (15.0, None)
    """
    return elapsed_s / done * (total - done) if done else None


class ProgressReport:
    """``update(n, **stats)`` after each item. On a terminal (``stream.isatty()``) a tqdm bar
    with the stats as its postfix; else ``log`` gets ``label: done/total | stats | rate | ETA``
    every ``every_s`` seconds and at the end."""

    def __init__(self, label: str, total: int, every_s: float,
                 log: Callable[[str], None] = print, stream=None, unit: str = "it"):
        self.label, self.total, self.every_s, self.log = label, total, every_s, log
        self.start = self.last = time.perf_counter()
        self.done = 0
        stream = stream if stream is not None else sys.stderr
        self.bar = None
        if total and hasattr(stream, "isatty") and stream.isatty():
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc=label, unit=unit, file=stream, dynamic_ncols=True)

    def update(self, n: int = 1, **stats: str) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.set_postfix(stats, refresh=False)
            self.bar.update(n)
            if self.done >= self.total:
                self.bar.close()
            return
        now = time.perf_counter()
        if now - self.last >= self.every_s or self.done == self.total:
            self.last = now
            elapsed = max(now - self.start, 1e-9)
            parts = [f"{self.label}: {self.done}/{self.total}", *(f"{k} {v}" for k, v in stats.items()),
                     f"{self.done / elapsed:.2f}/s",
                     f"ETA {format_eta(eta(self.done, self.total, elapsed))}"]
            self.log(" | ".join(parts))
