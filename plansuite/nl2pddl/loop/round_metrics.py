"""Per-round metrics of a repair run, and the table of operational success vs. reconstruction.

Scores come from two places that never mix inside the loop: the operational flags the loop logged
(parse … critic, success) and the offline comparison with the reference (structural, semantic),
computed afterwards by :func:`score_attempt`. Round ``r`` looks at each item's candidate after
``r`` attempts (its last one if the loop stopped earlier).
"""

from __future__ import annotations

from collections import defaultdict

from plansuite.nl2pddl.judging.equivalence import compare
from plansuite.pddl.model import Domain, Problem
from plansuite.report.tables import markdown

COLUMNS = (("parse", "parsed"), ("domain", "domain_consistent"), ("solvable", "solvable"),
           ("VAL", "plan_valid"), ("critic", "critic_accepted"), ("op. success", "success"),
           ("structural", "structural"), ("semantic", "semantic"))


def score_attempt(record: dict, reference: Problem, domain: Domain) -> dict:
    """The logged flags of one attempt plus its offline equivalence with the reference."""
    comparison = compare(reference, record["text"], domain, f"{record['item']}#{record['attempt']}")
    flags = {field: record.get(field) for _, field in COLUMNS[:6]}
    return {"item": record["item"], "attempt": record["attempt"], **flags,
            "structural": comparison.structural, "semantic": comparison.semantic,
            "reasons": comparison.reasons}


def _rate(values: list) -> float | None:
    """Fraction of True, ``None`` counting as False; ``None`` if no value was ever measured.

    >>> _rate([True, False, None, True]), _rate([None, None])
    (0.5, None)
    """
    if all(v is None for v in values):
        return None
    return sum(1 for v in values if v is True) / len(values)


def attempts_by_item(scores) -> dict[str, list[dict]]:
    """item -> its score rows, in attempt order."""
    by_item: dict[str, list[dict]] = defaultdict(list)
    for s in scores:
        by_item[s["item"]].append(s)
    for attempts in by_item.values():
        attempts.sort(key=lambda s: s["attempt"])
    return dict(by_item)


def at_round(attempts: list[dict], round_: int | None) -> dict:
    """An item's candidate after ``round_`` attempts: its last one if the loop stopped earlier
    (``None``: its final attempt).

    >>> [at_round([{"attempt": 1}, {"attempt": 2}], r)["attempt"] for r in (1, 3, None)]
    [1, 2, 2]
    """
    return attempts[-1] if round_ is None else attempts[min(round_, len(attempts)) - 1]


def round_metrics(scores: list[dict], rounds: int | None = None) -> list[dict]:
    """One row per round: the rate of every column, and the gap between success and meaning.

    >>> s = [{"item": "a", "attempt": 1, "success": False, "semantic": False},
    ...      {"item": "a", "attempt": 2, "success": True, "semantic": True},
    ...      {"item": "b", "attempt": 1, "success": True, "semantic": False}]
    >>> [(m["round"], m["success"], m["semantic"], m["success_not_semantic"]) for m in round_metrics(s)]
    [(1, 0.5, 0.0, 0.5), (2, 1.0, 0.5, 0.5)]
    """
    by_item = attempts_by_item(scores)
    rounds = rounds or max((len(a) for a in by_item.values()), default=0)
    out = []
    for r in range(1, rounds + 1):
        current = [at_round(attempts, r) for attempts in by_item.values()]
        row = {"round": r, "n": len(current)}
        row.update({field: _rate([s.get(field) for s in current]) for _, field in COLUMNS})
        wrong = [_success_but_wrong(s) for s in current]
        # a rate over a mix of decided and undecided successes would read as "rarely wrong"
        row["success_not_semantic"] = None if None in wrong else _rate(wrong)
        # the structural counterpart, always decided: what the numeric/temporal runs can report
        row["success_not_structural"] = _rate([bool(s.get("success")) and s.get("structural") is False
                                               for s in current])
        out.append(row)
    return out


def _success_but_wrong(score: dict) -> bool | None:
    """Operationally successful but not what was described; ``None`` when the meaning was not
    decided (numeric/temporal problems: semantic equivalence is ``None``), so that the table says
    n/a instead of a 0 that nothing measured.

    >>> [_success_but_wrong(s) for s in ({"success": True, "semantic": False},
    ...  {"success": True, "semantic": None}, {"success": False, "semantic": None})]
    [True, None, False]
    """
    if not score.get("success"):
        return False
    return None if score.get("semantic") is None else score["semantic"] is False


def gap_table(metrics: list[dict]) -> str:
    """Markdown table: rates per round, and how often operational success hides a wrong problem.
    When that is undecided (semantic n/a: numeric/temporal problems) a line under the table gives
    operational successes that are structurally different from the reference instead.

    >>> print(gap_table(round_metrics([{"item": "a", "attempt": 1, "success": True,
    ...                                 "structural": False, "semantic": None}])), end="")
    | round | n | parse | domain | solvable | VAL | critic | op. success | structural | semantic | op. success but wrong |
    |---|---|---|---|---|---|---|---|---|---|---|
    | 1 | 1 | n/a | n/a | n/a | n/a | n/a | 1.000 | 0.000 | n/a | n/a |
    op. success but structurally different (semantics not decided), per round: 1.000
    """
    header = ["round", "n", *(name for name, _ in COLUMNS), "op. success but wrong"]
    rows = [[str(m["round"]), str(m["n"]), *(_cell(m[field]) for _, field in COLUMNS),
             _cell(m["success_not_semantic"])] for m in metrics]
    lines = [markdown(header, rows)]
    if any(m["success_not_semantic"] is None and m.get("success_not_structural") is not None
           for m in metrics):
        lines.append("op. success but structurally different (semantics not decided), per round: "
                     + ", ".join(_cell(m["success_not_structural"]) for m in metrics))
    return "\n".join(lines) + "\n"


def _cell(value: float | None) -> str:
    """Three decimals, or n/a for a check that never ran.

    >>> _cell(0.25), _cell(None)
    ('0.250', 'n/a')
    """
    return "n/a" if value is None else f"{value:.3f}"
