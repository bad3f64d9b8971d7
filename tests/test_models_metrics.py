"""Metrics are computed against the simulator's labels, never the recipe's (noisy) labels."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
import torch

from plansuite.data.builder import DatasetSpec, build_dataset
from plansuite.data.judged import judge_texts, step_rates
from plansuite.data.load import load_transitions
from plansuite.data.verifier_recipes import judged_items
from plansuite.domains import domain_file, load_builtin
from plansuite.domains.blocksworld import BlocksworldStates
from plansuite.errors import ConfigError
from plansuite.models.datamodules import VerifierDataModule
from plansuite.models.optim import OptimConfig
from plansuite.models.tokenizer import build_atom_tokenizer
from plansuite.models.verifier import VerifierModule
from plansuite.models.verifier_metrics import binary_report, calibrate_threshold
from plansuite.pddl.codec import format_completion
from plansuite.pddl.judge import StepVerdict
from plansuite.pddl.model import parse_atom_text
from plansuite.pddl.simulator import Inapplicable, TaskCache

DOMAIN = load_builtin("blocksworld")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("ds") / "tiny"
    spec = DatasetSpec(train_states=30, val_states=30, test_instances=2, val_instances=2, chunk_size=30)
    build_dataset(spec, DOMAIN, domain_file("blocksworld").read_text(), BlocksworldStates(3, 5),
                  out, seed=11, workers=1, progress=lambda *_: None)
    return out


def _parse_verifier_text(text: str):
    lines = text.split("\n")
    cut = lines.index("ACTION:")
    return lines[1:cut], lines[cut + 1]


def test_validation_truth_is_the_simulators_verdict(data_dir):
    objects = {f"b{i}": "object" for i in range(1, 6)}
    dm = VerifierDataModule(data_dir, DOMAIN, build_atom_tokenizer(DOMAIN, objects), 256, recipe="random")
    dm.setup()
    tasks = TaskCache(DOMAIN)
    for item in dm.val_sets["random"] + dm.val_sets["hard"]:
        state, action = _parse_verifier_text(item.text)
        names = {a for atom in state for a in parse_atom_text(atom)[1:]}
        task = tasks.get({n: "object" for n in names}, [parse_atom_text(a) for a in state])
        applicable = not isinstance(task.step(task.encode(state), action), Inapplicable)
        assert item.truth == applicable
    # the random recipe's training labels may be noisy (applicable negatives labelled 0)
    assert dm.train_counts["truth_1"] >= dm.train_counts["label_1"] > 0


def test_verifier_reports_use_truth_not_labels():
    class Stub(torch.nn.Module):
        def forward(self, input_ids, attention_mask, labels=None):
            p = input_ids[:, 0].float()  # the "model" says P(valid) = first id / 10
            return SimpleNamespace(logits=torch.stack([torch.log(1 - p), torch.log(p)], 1))

    module = VerifierModule(Stub(), OptimConfig(), ["random"])
    batch = {"input_ids": torch.tensor([[1], [2], [8], [9]]) / 10,
             "attention_mask": torch.ones(4, 1), "labels": torch.tensor([0, 0, 0, 0]),
             "truth": torch.tensor([0, 0, 1, 1])}
    module.validation_step(batch, 0, 0)
    module.on_validation_epoch_end()
    report = module.reports["random"]
    assert report["auroc"] == 1.0 and report["precision"] == 1.0 and report["catch_rate"] == 1.0
    assert 0.2 < float(module.threshold) < 0.8


def test_verifier_report_of_a_one_example_validation_set():
    """A tiny dataset can hold one validation example: CatMetric then returns a 0-d tensor."""
    class Stub(torch.nn.Module):
        def forward(self, input_ids, attention_mask, labels=None):
            return SimpleNamespace(logits=torch.tensor([[0.0, 2.0]]))

    module = VerifierModule(Stub(), OptimConfig(), ["random"])
    batch = {"input_ids": torch.tensor([[1]]), "attention_mask": torch.ones(1, 1),
             "labels": torch.tensor([1]), "truth": torch.tensor([1])}
    module.validation_step(batch, 0, 0)
    module.on_validation_epoch_end()
    assert module.reports["random"]["n"] == 1


def test_calibration_and_report_match_brute_force():
    rng = random.Random(0)
    for _ in range(20):
        n = rng.randint(2, 30)
        truth = torch.tensor([rng.randint(0, 1) for _ in range(n)])
        probs = torch.tensor([round(rng.random(), 2) for _ in range(n)])
        t = calibrate_threshold(probs, truth)
        if truth.sum() in (0, n):
            assert t == 0.5
            continue

        def balanced(th, probs=probs, truth=truth):
            acc = probs >= th
            return ((acc & (truth == 1)).sum() / (truth == 1).sum()
                    + (~acc & (truth == 0)).sum() / (truth == 0).sum()) / 2

        best = max(balanced(float(c)) for c in [*probs.tolist(), 1.01])
        assert balanced(t) == pytest.approx(best)
        r = binary_report(probs, truth, t)
        accepted = probs >= t
        tp = int((accepted & (truth == 1)).sum())
        assert r["recall"] == pytest.approx(tp / int(truth.sum()), abs=1e-5)
        if accepted.any():
            assert r["precision"] == pytest.approx(tp / int(accepted.sum()), abs=1e-5)


def test_generations_are_judged_by_the_simulator(data_dir):
    records = load_transitions(data_dir, "val")[:4]
    tasks = TaskCache(DOMAIN)
    r = records[0]
    wrong_next = format_completion(r.action, [*r.next_state[1:]])
    texts = [r.completion, wrong_next, format_completion("(stack b1 b1)", r.next_state), "garbage"]
    judged = judge_texts(tasks, [r] * 4, texts)
    assert [j.verdict for j in judged] == [StepVerdict.OK, StepVerdict.BAD_NEXT_STATE,
                                           StepVerdict.BAD_ACTION, StepVerdict.UNPARSEABLE]
    assert step_rates(judged) == {"parseable": 0.75, "action_valid": 0.5, "next_state_exact": 0.25, "n": 4}
    # on-policy labels: (state, action) is valid iff applicable; with the next state, iff exact
    sa = judged_items(judged, "state_action")
    assert [i.truth for i in sa] == [1, 0]  # the two applicable samples are one distinct step
    san = judged_items(judged, "state_action_next")
    assert [i.truth for i in san] == [1, 0, 0] and all(i.label == i.truth for i in san)


def test_accuracy_calibration_matches_brute_force_and_names_bad_metrics():
    rng = random.Random(1)
    for _ in range(20):
        n = rng.randint(3, 30)
        truth = torch.tensor([int(rng.random() < 0.8) for _ in range(n)])  # mostly valid steps
        if truth.sum() in (0, n):
            continue
        probs = torch.tensor([round(rng.random(), 2) for _ in range(n)])
        t = calibrate_threshold(probs, truth, "accuracy")

        def accuracy(th, probs=probs, truth=truth):
            return float(((probs >= th) == (truth == 1)).float().mean())

        assert accuracy(t) == pytest.approx(max(accuracy(float(c)) for c in [*probs.tolist(), 1.01]))
    with pytest.raises(ConfigError, match="calibrate_metric 'f1': unknown"):
        calibrate_threshold(torch.tensor([0.5]), torch.tensor([1]), "f1")
