"""The generation/repair loop and the runs built on it.

- :mod:`.repair` — generate, check, feed the diagnostics back, until a stop rule fires.
- :mod:`.experiment` — a dataset split through the loop, logged to JSONL with resume, then
  scored (``task=repair``, ``task=score``); :mod:`.generate` — any domain, a file of
  descriptions, no references (``task=generate``).
- :mod:`.round_metrics` — per-round rates and the gap table; :mod:`.paired_runs` — paired
  comparisons of scored runs on the same items.
"""
