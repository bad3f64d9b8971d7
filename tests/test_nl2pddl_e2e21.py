"""``plansuite-nl2pddl`` on the PDDL 2.1 fuel domain end to end, in one process (issue 12):
``task=data`` → ``plansuite-train`` a tiny problem generator and critic → ``task=critic`` →
``task=repair`` with the local backend and the learned critic; then ``task=repair`` through a
served "model" that answers each description's reference, so that ENHSP and VAL decide every
candidate and the table's structural column is measured on numeric problems."""

from __future__ import annotations

import json

import pytest
from test_nl2pddl_backend import chat, serve  # noqa: F401 (serve is a fixture)
from test_nl2pddl_models import nl2pddl, offline, train  # noqa: F401 (offline: autouse)

from plansuite.nl2pddl.data.dataset import load_critic_examples, load_pairs
from plansuite.nl2pddl.loop.round_metrics import COLUMNS
from plansuite.pddl import planners
from plansuite.pddl.parse import load_domain


def _enhsp_missing() -> str | None:
    try:
        planners.enhsp_command()
    except Exception as exc:  # PlannerError: jar or Java absent
        return str(exc)
    return None


@pytest.mark.skipif(_enhsp_missing() is not None, reason=f"ENHSP absent here: {_enhsp_missing()}")
def test_fuel_data_train_critic_and_repair_from_the_cli(tmp_path, serve):  # noqa: F811
    data, pg, critic = tmp_path / "data", tmp_path / "pg", tmp_path / "critic"
    nl2pddl("task=data", "nl2pddl_dataset=fuel", f"out_dir={data}", "dataset.random_problems=12",
            "dataset.rooms=[2,3]", "dataset.abstract_sizes=[1,2]")
    assert planners.planner_for(load_domain(data / "domain.pddl")) == "enhsp"
    labels = {e.label for e in load_critic_examples(data, "train")}
    assert labels == {"match", "value", "direction", "fluent"}

    train("problem_generator", data, pg, "trainer.max_steps=4", "model.val_greedy=1",
          "model.max_new_tokens=32")
    results = train("critic", data, critic, "trainer.max_steps=2", "model.batch_size=16")
    meta = json.loads((critic / "export" / "plansuite.json").read_text())
    assert meta["labels"] == ["match", "value", "direction", "fluent"]  # the dataset's kinds
    assert "val/direction/accuracy" in results["metrics"]

    report = nl2pddl("task=critic", f"data_dir={data}", f"out_dir={tmp_path / 'ce'}",
                     "critic=learned", f"critic.export={critic / 'export'}")
    assert set(report["per_kind"]) == labels
    assert report["n"] == len(load_critic_examples(data, "test"))

    pairs = load_pairs(data, "test")[:3]
    header = "| round | n | " + " | ".join(name for name, _ in COLUMNS) + " | op. success but wrong |"
    run = tmp_path / "run"
    metrics = nl2pddl("task=repair", f"data_dir={data}", f"out_dir={run}", "limit=3",
                      "max_attempts=2", f"backend.export={pg / 'export'}", "critic=learned",
                      f"critic.export={critic / 'export'}", "planner.time_limit=30")
    assert sum(metrics["stops"].values()) == len(pairs)
    assert header in (run / "metrics.md").read_text()  # the classical domains' columns
    for r in map(json.loads, (run / "attempts.jsonl").read_text().splitlines()):
        assert (r["critic_accepted"] is None) == (not r["parsed"])  # checks ran on what parsed
        assert (r["domain_consistent"] is None) == (not r["parsed"])

    # a served model that answers the reference, with its metric flipped on the first attempt:
    # ENHSP plans both (the direction does not change solvability), VAL checks the plans, and
    # only the offline structural comparison sees the flipped metric
    references = {p.description: p.problem for p in pairs}

    def oracle(body):
        user = body["messages"][1]["content"]
        description = user.split("Task description:\n", 1)[1].split("\n\nWrite the problem", 1)[0]
        return chat(references[description].replace("minimize", "maximize"))

    server = serve(oracle)
    run = tmp_path / "oracle"
    metrics = nl2pddl("task=repair", f"data_dir={data}", f"out_dir={run}", "limit=3",
                      "max_attempts=2", "backend=openai", f"backend.base_url={server.url}",
                      "backend.model=oracle", "planner.time_limit=60")
    [first] = metrics["overall"]  # operational success at once: one round
    assert metrics["stops"] == {"success": 3}
    assert first["solvable"] == first["plan_valid"] == first["success"] == 1.0
    assert first["structural"] == 0.0 and first["success_not_semantic"] is None  # semantic: n/a
    assert first["semantic"] is None and first["success_not_structural"] == 1.0
    assert "structurally different (semantics not decided), per round: 1.000" in (
        run / "metrics.md").read_text()
    scores = [json.loads(line) for line in (run / "scores.jsonl").read_text().splitlines()]
    assert all("metric direction differs" in s["reasons"]["structural"] for s in scores)
    attempts = [json.loads(line) for line in (run / "attempts.jsonl").read_text().splitlines()]
    assert all(a["plan"] and a["plan"][0].startswith("(") for a in attempts)  # ENHSP's plans
    assert "| 1 | 3 |" in (run / "metrics.md").read_text()


@pytest.mark.parametrize("preset", ["fuel", "timed"])
def test_corpus_tokenizer_covers_numbers_and_metrics_it_never_saw(preset, tmp_path):
    from plansuite.nl2pddl.models.text_datamodules import text_corpus
    from plansuite.nl2pddl.models.text_tokenizer import train_text_tokenizer

    nl2pddl("task=data", f"nl2pddl_dataset={preset}", f"out_dir={tmp_path}", "dataset.random_problems=10",
            "dataset.rooms=[2]", "dataset.abstract_sizes=[1]")
    tok = train_text_tokenizer(text_corpus(tmp_path, "problem_generator"), vocab_size=400)
    unseen = ("(:init (= (fuel truck7) 137.25) (= (move-time robot3) 0.5) (= (fuel-used) -3))\n"
              "  (:metric maximize (+ (total-time) (* 2 (fuel-used)))))")
    for text in [p.prompt + p.completion for p in load_pairs(tmp_path, "test")] + [unseen]:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert tok.decode(ids) == text  # every number and metric form round-trips exactly
    assert len(tok(unseen, add_special_tokens=False)["input_ids"]) < len(unseen)
