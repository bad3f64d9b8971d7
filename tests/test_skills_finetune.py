"""Expert-iteration finetuning: a generator started from an export on extra transitions mixed
with the dataset's own (``plansuite-train ... model.finetune.*``, as the skill rounds call it)."""

from __future__ import annotations

import json

import pytest
import torch
from test_train_cli import DOMAIN, config, data_dir, offline  # noqa: F401 -- fixtures

from plansuite.cli.train import run, train_spec
from plansuite.data.load import load_transitions
from plansuite.errors import ConfigError
from plansuite.models.export import load_export
from plansuite.skills.finetune import ExportFinetuner, FinetuneSettings
from plansuite.training import build

SMALL = ["model.backbone.n_layer=1", "model.backbone.n_embd=32", "model.backbone.n_head=2"]


@pytest.fixture(scope="module")
def base(data_dir, tmp_path_factory):  # noqa: F811
    out = tmp_path_factory.mktemp("base")
    run(config(data_dir, out, *SMALL, "trainer.max_steps=6", "model.val_greedy=2",
               "model.optim.warmup_steps=1"))
    return out / "export"


@pytest.fixture(scope="module")
def extra(data_dir, tmp_path_factory):  # noqa: F811
    """Five 'skill' transitions (here: validation transitions, which training never sees)."""
    path = tmp_path_factory.mktemp("extra") / "skills.jsonl"
    rows = load_transitions(data_dir, "val")[:5]
    path.write_text("".join(json.dumps({"prompt": r.prompt, "completion": r.completion}) + "\n"
                            for r in rows))
    return path


def test_finetuning_starts_from_the_export_and_mixes_the_extra_transitions(data_dir, base, extra,  # noqa: F811
                                                                           tmp_path):
    cfg = config(data_dir, tmp_path, f"model.finetune.init_from={base}",
                 f"model.finetune.extra={extra}", "model.finetune.original_fraction=0.75",
                 "model.finetune.examples=40")
    module, dm, tokenizer, meta = build(train_spec(cfg), DOMAIN)
    model, base_tok, base_meta = load_export(base, "generator")
    mine, theirs = module.model.state_dict(), model.state_dict()
    assert mine.keys() == theirs.keys() and all(torch.equal(mine[k], theirs[k]) for k in mine)
    assert tokenizer.get_vocab() == base_tok.get_vocab()
    assert meta["max_new_tokens"] == base_meta["max_new_tokens"]
    assert dm.train_counts == {"examples": 40, "original": 30, "extra": 10, "extra_distinct": 5}
    extra_ids = {tuple(e[0]) for e in dm.encode_pairs(
        [(r["prompt"], r["completion"]) for r in map(json.loads, extra.read_text().splitlines())])}
    assert sum(tuple(e[0]) in extra_ids for e in dm.train) == 10  # each extra one twice


def test_the_backend_finetunes_a_candidate_and_resumes(data_dir, base, extra, tmp_path):  # noqa: F811
    settings = FinetuneSettings(steps=3, batch_size=4, val_greedy=2, warmup_steps=1)
    finetuner = ExportFinetuner(data_dir, settings)
    export = finetuner.finetune(str(base), extra, tmp_path / "cand", seed=1)
    results = json.loads((tmp_path / "cand" / "results.json").read_text())
    assert results["global_step"] == 3 and results["train_examples"]["extra"] == 6
    new, _, meta = load_export(export, "generator")
    old, _, _ = load_export(base, "generator")
    assert meta["config"]["model"]["finetune"]["init_from"] == str(base)
    assert not torch.equal(new.transformer.wte.weight, old.transformer.wte.weight)  # it trained
    mtime = (tmp_path / "cand" / "results.json").stat().st_mtime
    assert finetuner.finetune(str(base), extra, tmp_path / "cand", seed=1) == export  # done: skipped
    assert (tmp_path / "cand" / "results.json").stat().st_mtime == mtime


def test_bad_finetuning_inputs_are_one_line_errors(data_dir, base, extra, tmp_path):  # noqa: F811
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "GOAL:"}\n')
    for overrides, match in [([f"model.finetune.init_from={tmp_path}"], "not a plansuite export"),
                             ([f"model.finetune.init_from={base}", f"model.finetune.extra={bad}"],
                              r"bad.jsonl:1: not a"),
                             ([f"model.finetune.extra={tmp_path / 'none.jsonl'}"], "not found"),
                             ([f"model.finetune.extra={extra}", "model.finetune.original_fraction=2"],
                              "must be in")]:
        with pytest.raises(ConfigError, match=match):
            build(train_spec(config(data_dir, tmp_path, *SMALL, *overrides)), DOMAIN)
