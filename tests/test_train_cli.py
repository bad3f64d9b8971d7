"""plansuite-train in-process: fast_dev_run of each module, a short generator run whose export
feeds V_generator and the on-policy recipe, the pretrained-backbone path, and bad input."""

from __future__ import annotations

import json

import pytest
import torch
from hydra import compose, initialize_config_dir
from test_models_inference import bpe_tokenizer  # the same GPT-2-style tokenizer files
from transformers import AutoModelForCausalLM, AutoTokenizer, GPT2Config, GPT2LMHeadModel

from plansuite.cli import CONF_DIR
from plansuite.cli.train import run, train_spec
from plansuite.data.builder import DatasetSpec, build_dataset
from plansuite.data.load import load_transitions
from plansuite.domains import domain_file, load_builtin
from plansuite.domains.blocksworld import BlocksworldStates
from plansuite.models.inference import GeneratorPolicy, VerifierScorer
from plansuite.training import build

DOMAIN = load_builtin("blocksworld")
SMALL = ["model.backbone.n_layer=1", "model.backbone.n_embd=32", "model.backbone.n_head=2"]
QUIET = ["logger=none", "trainer.enable_progress_bar=false"]


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


def config(data_dir, out_dir, *overrides):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("train", [f"data_dir={data_dir}", f"out_dir={out_dir}", *QUIET, *overrides])


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("ds") / "tiny"
    spec = DatasetSpec(train_states=40, val_states=8, test_instances=4, val_instances=4, chunk_size=20)
    build_dataset(spec, DOMAIN, domain_file("blocksworld").read_text(), BlocksworldStates(3, 6),
                  out, seed=5, workers=1, progress=lambda *_: None)
    return out


@pytest.fixture(scope="module")
def generator(data_dir, tmp_path_factory):
    """A generator trained for a few dozen steps (enough to have an export)."""
    out = tmp_path_factory.mktemp("gen")
    results = run(config(data_dir, out, "model.backbone.n_layer=2", "model.backbone.n_embd=64",
                         "model.backbone.n_head=2", "trainer.max_steps=80", "model.val_greedy=8",
                         "model.optim.warmup_steps=5", "model.optim.lr=3e-3"))
    return out, results


def test_generator_fast_dev_run(data_dir, tmp_path):
    results = run(config(data_dir, tmp_path, *SMALL, "+trainer.fast_dev_run=2", "model.val_greedy=4"))
    assert results["global_step"] == 2 and results["tokens_per_s"] > 0
    assert {"val/loss", "val/next_state_exact", "val/action_valid"} <= set(results["metrics"])


def test_verifier_fast_dev_run(data_dir, tmp_path):
    results = run(config(data_dir, tmp_path, "model=verifier", *SMALL, "+trainer.fast_dev_run=2"))
    assert results["global_step"] == 2
    assert {"random/auroc", "hard/precision", "threshold"} <= set(results["metrics"])


def test_short_generator_run_exports_a_usable_policy(generator, data_dir):
    out, results = generator
    assert results["global_step"] == 80 and (out / "checkpoints" / "last.ckpt").is_file()
    export = out / "export"
    meta = json.loads((export / "plansuite.json").read_text())
    assert meta["kind"] == "generator" and meta["tokenizer"] == "atom"
    assert meta["domain"] == DOMAIN.name and meta["config"]["model"]["kind"] == "generator"
    # the names planners rename instances into: the dataset's blocks, in natural order
    names = meta["object_names"]["object"]
    assert list(meta["object_names"]) == ["object"] and names[:2] == ["b1", "b2"]
    assert names == [f"b{i}" for i in range(1, len(names) + 1)] and len(names) >= 6
    assert AutoModelForCausalLM.from_pretrained(export) and AutoTokenizer.from_pretrained(export)
    policy = GeneratorPolicy.from_export(export)
    gens = policy.generate([r.prompt for r in load_transitions(data_dir, "val")[:4]], seed=1)
    assert all(g.text.startswith("ACTION:") for g in gens)  # learned the format already


def test_v_generator_starts_from_the_generator_weights(generator, data_dir, tmp_path):
    gen_out, _ = generator
    cfg = config(data_dir, tmp_path, "model=verifier", "model.init=generator",
                 f"model.generator_dir={gen_out / 'export'}")
    module, *_ = build(train_spec(cfg), DOMAIN)
    gen = AutoModelForCausalLM.from_pretrained(gen_out / "export")
    ours, theirs = module.model.transformer.state_dict(), gen.transformer.state_dict()
    assert ours.keys() == theirs.keys()
    assert all(torch.equal(ours[k], theirs[k]) for k in ours)
    assert module.model.training  # trains in train mode (dropout on), unlike from_pretrained's default
    # and V_base does not
    base, *_ = build(train_spec(config(data_dir, tmp_path, "model=verifier", *SMALL)), DOMAIN)
    assert base.model.transformer.wte.weight.shape != gen.transformer.wte.weight.shape or not torch.equal(
        base.model.transformer.wte.weight, gen.transformer.wte.weight)


def test_onpolicy_v_generator_trains_and_is_judged_by_the_simulator(generator, data_dir, tmp_path):
    gen_out, _ = generator
    results = run(config(data_dir, tmp_path, "model=verifier", "model.init=generator",
                         f"model.generator_dir={gen_out / 'export'}", "model.recipe=onpolicy",
                         "model.onpolicy.prompts=40", "model.onpolicy.val_prompts=30",
                         "trainer.max_steps=4"))
    cached = (tmp_path / "data" / "onpolicy-train.jsonl").read_text().splitlines()
    assert len(cached) > 1
    items = [json.loads(x) for x in cached[1:]]
    assert all(i["label"] == i["truth"] for i in items)  # labels come from the simulator
    assert "onpolicy/auroc" in results["metrics"]
    scorer = VerifierScorer.from_export(tmp_path / "export")
    assert scorer.threshold == results["metrics"]["threshold"]
    assert scorer.meta["init"] == "generator" and scorer.meta["recipe"] == "onpolicy"
    r = load_transitions(data_dir, "val")[0]
    assert 0 <= scorer.score([scorer.input_text(r.state, r.action)])[0] <= 1


def test_diff_verifier_adds_its_markers_and_scores_claimed_changes(generator, data_dir, tmp_path):
    """``state_action_diff``: the export's tokenizer knows ADDED:/DELETED: (no [UNK] in its input),
    the embedding grew to match, and the scorer reads the claimed change."""
    gen_out, _ = generator
    run(config(data_dir, tmp_path, "model=verifier", "model.init=generator",
               f"model.generator_dir={gen_out / 'export'}", "model.recipe=onpolicy",
               "model.input_kind=state_action_diff", "model.augment=rename",
               "model.onpolicy.prompts=20",
               "model.onpolicy.val_prompts=20", "trainer.max_steps=2"))
    scorer = VerifierScorer.from_export(tmp_path / "export")
    assert scorer.meta["input_kind"] == "state_action_diff"
    r = load_transitions(data_dir, "val")[0]
    text = scorer.input_text(r.state, r.action, r.next_state)
    assert "ADDED:" in text and "DELETED:" in text
    ids = scorer.tokenizer(text, add_special_tokens=False)["input_ids"]
    assert scorer.tokenizer.unk_token_id not in ids
    assert scorer.model.get_input_embeddings().weight.shape[0] == len(scorer.tokenizer)
    assert 0 <= scorer.score([text])[0] <= 1


def test_pretrained_backbone_from_a_saved_directory(data_dir, tmp_path):
    """The gpt2 backbone's code path, on a tiny GPT-2 + byte-level BPE saved with save_pretrained."""
    texts = [r.prompt + r.completion for r in load_transitions(data_dir, "train")]
    tok = bpe_tokenizer(texts, tmp_path, vocab_size=300)
    pre = tmp_path / "pretrained"
    GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_layer=1, n_embd=32, n_head=2,
                               n_positions=512)).save_pretrained(pre)
    tok.save_pretrained(pre)
    results = run(config(data_dir, tmp_path / "run", "model=generator_paper", f"model.backbone.path={pre}",
                         "+trainer.fast_dev_run=1", "model.val_greedy=2", "model.max_new_tokens=8"))
    assert results["global_step"] == 1
    meta = json.loads((tmp_path / "run" / "export" / "plansuite.json").read_text())
    assert meta["tokenizer"] == "bpe"
    ver = run(config(data_dir, tmp_path / "ver", "model=verifier_paper", f"model.backbone.path={pre}",
                     "+trainer.fast_dev_run=1"))
    assert ver["global_step"] == 1


@pytest.mark.parametrize(("overrides", "message"), [
    (["model.recipe=nope"], "model.recipe 'nope': unknown"),
    (["model=verifier", "model.init=generator"], "model.init=generator: set model.generator_dir"),
    (["model=verifier", "model.recipe=onpolicy"], "model.recipe=onpolicy samples a trained generator"),
    (["model=verifier", "model.generator_dir=/no/such/export"], "export directory not found"),
    (["model.backbone.n_head=5"], "not divisible by n_head=5"),
    (["model=verifier", "model.input_kind=state_action_next"], "needs model.recipe=onpolicy"),
    (["model=verifier", "model.init=nope"], "model.init 'nope': unknown"),
    (["model.loss_on=half"], "model.loss_on 'half': unknown"),
    (["model/backbone=gpt2", "model.backbone.path=gpt2-offline-nowhere"], "model/backbone=tiny"),
    (["ckpt_path=/no/such.ckpt"], "checkpoint file not found"),
])
def test_bad_config_is_one_line(data_dir, tmp_path, capsys, overrides, message):
    if overrides[0] == "model.recipe=nope":
        overrides = ["model=verifier", *overrides]
    with pytest.raises(SystemExit) as exit_info:
        run(config(data_dir, tmp_path, *overrides, "+trainer.fast_dev_run=1"))
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 1 and len(err) == 1
    assert err[0].startswith("error: ") and message in err[0], err


def test_missing_dataset_and_existing_checkpoints(data_dir, tmp_path, capsys):
    with pytest.raises(SystemExit):
        run(config(tmp_path / "nothing", tmp_path / "o"))
    assert "not a plansuite dataset" in capsys.readouterr().err
    (tmp_path / "o" / "checkpoints").mkdir(parents=True)
    (tmp_path / "o" / "checkpoints" / "last.ckpt").write_bytes(b"x")
    with pytest.raises(SystemExit):
        run(config(data_dir, tmp_path / "o"))
    assert "resume with ckpt_path=last" in capsys.readouterr().err


def test_real_generator_batched_engine_equals_sequential_reference(data_dir, generator, tmp_path):
    """With per-request seeds, a real model's runs do not depend on batching."""
    from plansuite.data.load import load_instances
    from plansuite.planning.adapters import load_generator
    from plansuite.planning.evaluate import EvalSettings, evaluate
    from plansuite.planning.loops import PlannerSpec

    out, _ = generator
    instances = load_instances(data_dir / "test", DOMAIN)
    policy = load_generator(str(out / "export"))
    spec = PlannerSpec(name="generator", loop="sample", k=3, propose_on_failure="last")
    runs = {}
    for engine, batch in (("batched", 64), ("sequential", 1)):
        settings = EvalSettings(spec, seed=4, engine=engine, batch_size=batch, val=False)
        evaluate(instances, DOMAIN, domain_file("blocksworld"), policy, None, settings,
                 tmp_path / engine, log=lambda *_: None)
        lines = (tmp_path / engine / "instances.jsonl").read_text().splitlines()
        runs[engine] = sorted(
            (r["id"], r["outcome"], r["plan"], r["attempts"], r["calls"]["generator"])
            for r in map(json.loads, lines))
    assert runs["batched"] == runs["sequential"]
    assert sum(r[4] for r in runs["batched"]) > len(instances)  # attempts really took steps


@pytest.mark.parametrize("kind", ["generator", "verifier", "problem_generator", "critic"])
def test_the_model_configs_are_the_typed_defaults(kind, tmp_path):
    """``conf/model/<kind>.yaml`` and ``conf/trainer/cpu.yaml`` say what the library's
    dataclasses say, so a run built without Hydra (the skill rounds) trains the same way."""
    from plansuite.training import CPU_TRAINER, kind_def

    spec = train_spec(config(tmp_path, tmp_path, f"model={kind}", "logger=none",
                             "trainer.enable_progress_bar=true"))
    assert spec.model == kind_def(kind).config()
    derived = {"default_root_dir": str(tmp_path), "max_epochs": spec.model.epochs}
    assert spec.trainer == {**CPU_TRAINER, **derived}


def test_resume_with_changed_settings_names_the_key_and_fresh_starts_over(data_dir, tmp_path,
                                                                          capsys):
    common = [*SMALL, "trainer.max_steps=3", "model.val_greedy=2", "ckpt_path=last"]
    run(config(data_dir, tmp_path, *common, "model.optim.lr=1e-3"))
    capsys.readouterr()
    with pytest.raises(SystemExit):
        run(config(data_dir, tmp_path, *common, "model.optim.lr=2e-3"))
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "model.optim.lr: 0.001 -> 0.002" in err[0], err
    # settings that only change reporting may differ on a resume
    run(config(data_dir, tmp_path, *common, "model.optim.lr=1e-3", "trainer.log_every_n_steps=7",
               "progress_every_n_steps=5"))
    # a run from before a setting existed resumes while that setting stays at its default, and
    # one recorded with a setting removed since, at the value the code now trains with
    settings = tmp_path / "run_settings.json"
    recorded = json.loads(settings.read_text())
    del recorded["model"]["loss_on"]
    recorded["model"]["backbone"]["arch"] = "gpt2"
    settings.write_text(json.dumps(recorded))
    run(config(data_dir, tmp_path, *common, "model.optim.lr=1e-3"))
    results = run(config(data_dir, tmp_path, *SMALL, "trainer.max_steps=3", "model.val_greedy=2",
                         "ckpt_path=fresh", "model.optim.lr=2e-3"))
    assert results["resumed_from_step"] is None
    assert list(tmp_path.glob("checkpoints.old-*"))
    assert json.loads((tmp_path / "export" / "plansuite.json").read_text())["config"]["model"][
        "optim"]["lr"] == 2e-3


def test_callbacks_group_adds_early_stopping_and_a_resume_keeps_its_settings(data_dir, tmp_path,
                                                                             capsys):
    """``callbacks=[early_stopping]`` stops a run whose monitored metric stops improving (here no
    improvement is big enough); its settings are part of what a resume must keep."""
    stop = [*SMALL, "model.epochs=6", "+trainer.limit_train_batches=2", "model.val_greedy=2",
            "callbacks=[early_stopping]", "callbacks.early_stopping.patience=1",
            "callbacks.early_stopping.min_delta=100", "ckpt_path=last"]
    results = run(config(data_dir, tmp_path, *stop))
    assert results["epochs"] == 2 and results["global_step"] == 4  # 2 of the 6 epochs
    recorded = json.loads((tmp_path / "run_settings.json").read_text())
    assert recorded["callbacks"]["early_stopping"]["monitor"] == "val/loss"
    capsys.readouterr()
    with pytest.raises(SystemExit):
        run(config(data_dir, tmp_path, *stop, "callbacks.early_stopping.patience=4"))
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "callbacks.early_stopping.patience: 1 -> 4" in err[0], err


@pytest.mark.parametrize(("overrides", "message"), [
    (["+callbacks.mine._target_=no.such.Callback"], "callbacks: "),
    (["+callbacks.mine.patience=3"], "callbacks.mine: needs _target_"),
    (["callbacks=[lr_monitor]"], "has no logger"),
])
def test_bad_callbacks_are_one_line(data_dir, tmp_path, capsys, overrides, message):
    with pytest.raises(SystemExit):
        run(config(data_dir, tmp_path, *SMALL, *overrides, "+trainer.fast_dev_run=1"))
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0], err
