"""GRR, BTR and friends: small pure functions over per-instance records (``instances.jsonl``)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from plansuite.planning.outcomes import Outcome


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95 % by default).

    Unlike the normal approximation it stays inside [0, 1] and is sensible at 0 or n.

    >>> wilson_interval(94, 200)
    (0.402, 0.5391)
    >>> wilson_interval(0, 10)
    (0.0, 0.2775)
    >>> wilson_interval(0, 0)
    (0.0, 1.0)
    """
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    denom = 1 + z * z / n
    return round(max(0.0, (centre - half) / denom), 4), round(min(1.0, (centre + half) / denom), 4)


def paired_difference(a: Sequence[bool], b: Sequence[bool]) -> dict:
    """Difference of two success rates measured on the same items, with a 95 % interval.

    ``a[i]`` and ``b[i]`` are the two settings' results on item ``i`` (an instance and seed).
    The interval is Newcombe's hybrid score interval for paired proportions (his method 10:
    the Wilson intervals of both rates, combined with their continuity-corrected correlation),
    which is tighter than two independent intervals when the settings succeed on mostly the
    same items. ``a_only``/``b_only`` count the discordant items.

    >>> paired_difference([True] * 50 + [True] * 10 + [False] * 2 + [False] * 38,
    ...                   [True] * 50 + [False] * 10 + [True] * 2 + [False] * 38)
    {'n': 100, 'a': 0.6, 'b': 0.52, 'delta': 0.08, 'delta_ci': [0.0113, 0.1468], 'a_only': 10, 'b_only': 2}
    >>> paired_difference([True, False], [True, False])["delta_ci"]
    [-0.5735, 0.5735]
    """
    if len(a) != len(b):
        raise ValueError(f"paired results differ in length ({len(a)} vs {len(b)})")
    n, pairs = len(a), list(zip(a, b, strict=True))
    both = sum(bool(x and y) for x, y in pairs)
    a_only = sum(bool(x and not y) for x, y in pairs)
    b_only = sum(bool(y and not x) for x, y in pairs)
    neither = n - both - a_only - b_only
    if n == 0:
        return {"n": 0, "a": 0.0, "b": 0.0, "delta": 0.0, "delta_ci": [-1.0, 1.0],
                "a_only": 0, "b_only": 0}
    p1, p2 = (both + a_only) / n, (both + b_only) / n
    (l1, u1), (l2, u2) = wilson_interval(both + a_only, n), wilson_interval(both + b_only, n)
    margins = (both + a_only) * (b_only + neither) * (both + b_only) * (a_only + neither)
    cross = both * neither - a_only * b_only
    if cross > 0:  # Newcombe's continuity correction of the correlation
        cross = max(cross - n / 2, 0.0)
    phi = cross / math.sqrt(margins) if margins else 0.0
    delta = p1 - p2
    low = delta - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2)
                                + (u2 - p2) ** 2))
    high = delta + math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2)
                                 + (p2 - l2) ** 2))
    return {"n": n, "a": rate(both + a_only, n), "b": rate(both + b_only, n),
            "delta": round(delta, 4),
            "delta_ci": [round(max(-1.0, low), 4), round(min(1.0, high), 4)],
            "a_only": a_only, "b_only": b_only}


def rate(count: int, n: int) -> float:
    """``count / n`` rounded, 0 for an empty set.

    >>> rate(132, 200), rate(0, 0)
    (0.66, 0.0)
    """
    return round(count / n, 4) if n else 0.0


def outcome_counts(outcomes: Sequence[str]) -> dict[str, int]:
    """Count of every outcome, including those that never occurred.

    >>> outcome_counts(["success", "no_plan", "success"])["success"]
    2
    >>> sorted(outcome_counts([]).values())
    [0, 0, 0, 0, 0, 0]
    """
    counts = Counter(outcomes)
    unknown = set(counts) - {o.value for o in Outcome}
    if unknown:
        raise ValueError(f"unknown outcome(s): {sorted(unknown)}")
    return {o.value: counts.get(o.value, 0) for o in Outcome}


def grr_btr(outcomes: Sequence[str]) -> dict:
    """Goal-reaching rate and bad-transition rate with Wilson 95 % intervals.

    >>> grr_btr(["success", "bad_action", "unparseable", "no_plan"])
    {'n_instances': 4, 'grr': 0.25, 'grr_ci': [0.0456, 0.6994], 'btr': 0.5, 'btr_ci': [0.15, 0.85]}
    """
    counts = outcome_counts(outcomes)
    n = len(outcomes)
    bad = sum(c for o, c in counts.items() if Outcome(o).bad_transition)
    return {"n_instances": n,
            "grr": rate(counts["success"], n), "grr_ci": list(wilson_interval(counts["success"], n)),
            "btr": rate(bad, n), "btr_ci": list(wilson_interval(bad, n))}


def val_agreement(records: Sequence[dict]) -> dict:
    """How often VAL and the simulator agree on the validity of the proposed plans.

    Plans with actions the task does not have are judged by the simulator only (``skipped``).

    >>> val_agreement([{"id": "a", "plan": [], "val_valid": True, "sim_valid": True},
    ...                {"id": "b", "plan": None, "val_valid": None, "sim_valid": None},
    ...                {"id": "c", "plan": ["(fly a)"], "val_valid": None, "sim_valid": False},
    ...                {"id": "d", "plan": [], "val_valid": False, "sim_valid": True}])
    {'checked': 2, 'skipped': 1, 'val_valid': 1, 'agree': 1, 'agreement': 0.5, 'disagree_ids': ['d']}
    """
    checked = [r for r in records if r.get("val_valid") is not None]
    disagree = [r["id"] for r in checked if r["val_valid"] != r["sim_valid"]]
    skipped = sum(r["plan"] is not None and r.get("val_valid") is None for r in records)
    return {"checked": len(checked), "skipped": skipped,
            "val_valid": sum(bool(r["val_valid"]) for r in checked),
            "agree": len(checked) - len(disagree),
            "agreement": rate(len(checked) - len(disagree), len(checked)) if checked else None,
            "disagree_ids": disagree}


def plan_quality(records: Sequence[dict]) -> dict:
    """Successful plans' length relative to Fast Downward's optimal length.

    >>> plan_quality([{"outcome": "success", "plan_length": 6, "optimal_length": 4},
    ...               {"outcome": "success", "plan_length": 4, "optimal_length": 4},
    ...               {"outcome": "no_plan", "plan_length": None, "optimal_length": 2}])
    {'n': 2, 'mean_ratio': 1.25, 'optimal_fraction': 0.5}
    """
    pairs = [(r["plan_length"], r["optimal_length"]) for r in records
             if r["outcome"] == Outcome.SUCCESS.value and r.get("optimal_length")]
    if not pairs:
        return {"n": 0, "mean_ratio": None, "optimal_fraction": None}
    ratios = [length / best for length, best in pairs]
    return {"n": len(pairs), "mean_ratio": round(sum(ratios) / len(ratios), 4),
            "optimal_fraction": rate(sum(r == 1 for r in ratios), len(ratios))}


def grr_by(records: Sequence[dict], key: str) -> dict[str, dict]:
    """GRR with its Wilson 95 % interval and ``n`` for each value of the records' integer ``key``
    (e.g. ``objects``, ``goal_size``), in increasing order; records without it are left out
    (journaled before the field existed).

    >>> by = grr_by([{"outcome": "success", "objects": 10}, {"outcome": "no_plan", "objects": 3},
    ...              {"outcome": "success", "objects": 3}, {"outcome": "success"}], "objects")
    >>> list(by), by["3"]
    (['3', '10'], {'n': 2, 'grr': 0.5, 'grr_ci': [0.0945, 0.9055]})
    """
    groups: dict[int, list[bool]] = {}
    for r in records:
        if r.get(key) is not None:
            groups.setdefault(r[key], []).append(r["outcome"] == Outcome.SUCCESS.value)
    return {str(value): {"n": len(hits), "grr": rate(sum(hits), len(hits)),
                         "grr_ci": list(wilson_interval(sum(hits), len(hits)))}
            for value, hits in sorted(groups.items())}


BREAKDOWNS = {"by_objects": "objects", "by_goal_size": "goal_size"}  # results.json key: record key


def summarize(records: Sequence[dict]) -> dict:
    """Everything ``results.json`` reports about a set of per-instance records."""
    total = {key: sum(r["calls"][key] for r in records) for key in ("generator", "verifier", "tokens")}
    return {**grr_btr([r["outcome"] for r in records]),
            "outcomes": outcome_counts([r["outcome"] for r in records]),
            "calls": total,
            "attempts": sum(r["attempts"] for r in records),
            "val": val_agreement(records),
            "plan_quality": plan_quality(records),
            **{name: grr_by(records, key) for name, key in BREAKDOWNS.items()}}
