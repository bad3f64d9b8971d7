"""Verifier metrics against the simulator's labels (1 = valid step), and threshold calibration.

A step is accepted when ``P(valid) >= threshold``. ``recall`` is the share of valid steps
accepted, ``catch_rate`` the share of invalid steps rejected (specificity); ``false_reject`` is
``1 - recall``.
"""

from __future__ import annotations

import torch
from torchmetrics.functional.classification import (
    binary_accuracy,
    binary_auroc,
    binary_f1_score,
    binary_precision,
    binary_recall,
    binary_specificity,
)

from plansuite.errors import ConfigError

CALIBRATE_METRICS = ("balanced", "accuracy")


def check_calibrate_metric(metric: str) -> None:
    if metric not in CALIBRATE_METRICS:
        raise ConfigError(f"model.calibrate_metric '{metric}': unknown (choose from "
                          f"{', '.join(CALIBRATE_METRICS)})")


def calibrate_threshold(probs: torch.Tensor, truth: torch.Tensor, metric: str = "balanced") -> float:
    """The threshold with the best ``metric``; ties go to the one nearest 0.5. Cut points are
    midways between neighbouring scores.

    ``balanced``: balanced accuracy ((recall + catch rate) / 2), both classes weighted equally
    whatever their shares. ``accuracy``: the fewest mistakes at the set's own class shares --
    on the generator's own (on-policy) steps, the fewest wrong verdicts per step the planner
    asks about. Where invalid steps are rare, ``balanced`` buys a little more catch rate with
    many refused good steps (a refused good step is the one move out of a state, again and
    again: the verifier is deterministic).

    >>> calibrate_threshold(torch.tensor([0.1, 0.3, 0.35, 0.9]), torch.tensor([0, 0, 1, 1]))
    0.325
    >>> calibrate_threshold(torch.tensor([0.2, 0.8]), torch.tensor([1, 1]))  # one class: keep 0.5
    0.5
    >>> p = torch.tensor([0.1, 0.6, 0.7, 0.75, 0.8, 0.9, 0.95, 0.97, 0.98, 0.99])
    >>> t = torch.tensor([0, 1, 1, 0, 1, 1, 1, 1, 1, 1])  # 8 valid steps, 2 invalid
    >>> calibrate_threshold(p, t), calibrate_threshold(p, t, "accuracy")  # 2 good refused, or 1 bad kept
    (0.775, 0.35)
    """
    check_calibrate_metric(metric)
    probs, truth = probs.double().flatten(), truth.flatten().long()
    n_pos, n_neg = int(truth.sum()), int((1 - truth).sum())
    if n_pos == 0 or n_neg == 0:
        return 0.5
    order = probs.argsort()
    p, t = probs[order], truth[order]
    # cut k puts the k lowest scores below the threshold (rejected)
    rejected_pos = torch.cat([t.new_zeros(1), t.cumsum(0)])
    rejected_neg = torch.arange(len(t) + 1) - rejected_pos
    if metric == "balanced":
        score = ((n_pos - rejected_pos) / n_pos + rejected_neg / n_neg) / 2
    else:
        score = ((n_pos - rejected_pos) + rejected_neg) / (n_pos + n_neg)
    cuts = torch.cat([p[:1] - 1e-6, (p[1:] + p[:-1]) / 2, p[-1:] + 1e-6]).clamp(0, 1)
    valid = torch.ones_like(score, dtype=torch.bool)
    valid[1:-1] = p[1:] > p[:-1]  # no cut between equal scores
    best = score[valid].max()
    candidates = cuts[valid & (score >= best - 1e-12)]
    return round(float(candidates[(candidates - 0.5).abs().argmin()]), 6)


def binary_report(probs: torch.Tensor, truth: torch.Tensor, threshold: float) -> dict[str, float]:
    """Accuracy, precision, recall, F1, AUROC, catch rate and false-reject rate at ``threshold``.

    >>> r = binary_report(torch.tensor([0.1, 0.6, 0.7, 0.9]), torch.tensor([0, 0, 1, 1]), 0.5)
    >>> r["precision"], r["recall"], r["catch_rate"], r["auroc"]
    (0.666667, 1.0, 0.5, 1.0)
    """
    truth = truth.long()
    kw = {"threshold": threshold}
    out = {
        "accuracy": binary_accuracy(probs, truth, **kw),
        "precision": binary_precision(probs, truth, **kw),
        "recall": binary_recall(probs, truth, **kw),
        "f1": binary_f1_score(probs, truth, **kw),
        "catch_rate": binary_specificity(probs, truth, **kw),
        "auroc": binary_auroc(probs, truth) if 0 < int(truth.sum()) < len(truth) else torch.tensor(0.5),
    }
    out = {k: round(float(v), 6) for k, v in out.items()}
    out["false_reject"] = round(1 - out["recall"], 6)
    out["n"], out["n_invalid"] = len(truth), int((1 - truth).sum())
    return out
