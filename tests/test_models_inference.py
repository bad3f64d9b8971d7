"""Tokenizers, the generation loop, exports and the inference API (untrained tiny models: fast)."""

from __future__ import annotations

import json

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (
    AutoModelForCausalLM,
    AutoModelForSequenceClassification,
    AutoTokenizer,
    GPT2TokenizerFast,
)

from plansuite.data.builder import DatasetSpec, build_dataset
from plansuite.data.load import load_transitions
from plansuite.domains import domain_file, load_builtin
from plansuite.domains.blocksworld import BlocksworldStates
from plansuite.errors import ConfigError, PlansuiteError
from plansuite.models.backbone import BackboneConfig, pretrained_model, tiny_model
from plansuite.models.datamodules import dataset_objects
from plansuite.models.export import save_export
from plansuite.models.inference import GeneratorPolicy, VerifierScorer, sample_ids
from plansuite.models.tokenizer import build_atom_tokenizer, decode, encode, stop_token_ids
from plansuite.pddl.codec import format_completion, parse_completion

DOMAIN = load_builtin("blocksworld")
SMALL = BackboneConfig(n_layer=2, n_embd=32, n_head=2, n_positions=160)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("ds") / "tiny"
    spec = DatasetSpec(train_states=40, val_states=8, test_instances=4, val_instances=4, chunk_size=20)
    build_dataset(spec, DOMAIN, domain_file("blocksworld").read_text(), BlocksworldStates(3, 8),
                  out, seed=3, workers=1, progress=lambda *_: None)
    return out


@pytest.fixture(scope="module")
def atom_tok(data_dir):
    return build_atom_tokenizer(DOMAIN, dataset_objects(data_dir, DOMAIN), SMALL.n_positions)


@pytest.fixture(scope="module")
def gen_export(tmp_path_factory, atom_tok):
    torch.manual_seed(0)
    model = tiny_model(SMALL, "causal", atom_tok)
    return save_export(tmp_path_factory.mktemp("exp") / "gen", model, atom_tok,
                       {"kind": "generator", "domain": DOMAIN.name, "max_new_tokens": 24})


def bpe_tokenizer(texts: list[str], folder, vocab_size: int = 400) -> GPT2TokenizerFast:
    """A small byte-level BPE trained on our text and saved as a GPT-2 tokenizer (the same
    files and loading path as the real GPT-2 vocabulary)."""
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    core.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"],
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    core.model.save(str(folder))  # vocab.json + merges.txt, like GPT-2's own files
    return GPT2TokenizerFast.from_pretrained(str(folder))


def test_atom_tokenizer_round_trips_every_transition_and_covers_instances(data_dir, atom_tok):
    records = load_transitions(data_dir, "train") + load_transitions(data_dir, "val")
    texts = [r.prompt + r.completion for r in records]
    ids = encode(atom_tok, texts)
    assert atom_tok.unk_token_id not in {i for x in ids for i in x}
    assert all(decode(atom_tok, x) == t for x, t in zip(ids, texts, strict=True))
    # one token per line
    assert all(len(x) == t.count("\n") + 1 for x, t in zip(ids, texts, strict=True))
    from plansuite.data.load import load_instances

    for inst in load_instances(data_dir / "test", DOMAIN):
        assert set(inst.problem.objects) <= set(dataset_objects(data_dir, DOMAIN))


def test_unknown_line_decodes_to_text_the_codec_rejects(atom_tok):
    bad = "ACTION:\n(pickup b99)\nNEXT STATE:\n(holding b1)\nEND"
    ids = encode(atom_tok, [bad])[0]
    assert atom_tok.unk_token_id in ids
    text = decode(atom_tok, ids)
    assert "[UNK]" in text and not parse_completion(text)


def test_saved_atom_tokenizer_loads_with_autotokenizer(tmp_path, atom_tok):
    atom_tok.save_pretrained(tmp_path)
    again = AutoTokenizer.from_pretrained(tmp_path)
    text = format_completion("(pickup b1)", ["(holding b1)", "(clear b2)"])
    assert again(text, add_special_tokens=False)["input_ids"] == encode(atom_tok, [text])[0]
    assert decode(again, encode(again, [text])[0]) == text


def test_bpe_tokenizer_round_trips_codec_text(tmp_path, data_dir):
    records = load_transitions(data_dir, "train")
    tok = bpe_tokenizer([r.prompt + r.completion for r in records], tmp_path)
    text = records[0].prompt + records[0].completion
    assert decode(tok, encode(tok, [text])[0]) == text
    assert tok.eos_token_id in stop_token_ids(tok)


def _ref_greedy(model, prompt: list[int], stops: list[int], n: int) -> list[int]:
    """Plain greedy decoding without a cache, one sequence: the reference."""
    ids, new = list(prompt), []
    with torch.no_grad():
        for _ in range(n):
            t = int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
            new.append(t)
            ids.append(t)
            if t in stops:
                break
    return new


def test_batched_cached_greedy_equals_uncached_one_at_a_time(gen_export, data_dir):
    policy = GeneratorPolicy.from_export(gen_export)
    records = load_transitions(data_dir, "val")[:6]
    prompts = encode(policy.tokenizer, [r.prompt for r in records])  # different lengths
    assert len({len(p) for p in prompts}) > 1
    batched = sample_ids(policy.model, prompts, pad_id=policy.tokenizer.pad_token_id,
                         stop_ids=policy.stop_ids, max_new_tokens=12, temperature=0)
    for p, got in zip(prompts, batched, strict=True):
        # the untrained model may pick a special token the policy bans: compare unbanned rows only
        ref = _ref_greedy(policy.model, p, policy.stop_ids, 12)
        if not set(ref) & set(policy.banned_ids):
            assert got == ref


def test_generate_is_seeded_and_reports_new_tokens(gen_export, data_dir):
    policy = GeneratorPolicy.from_export(gen_export)
    prompts = [r.prompt for r in load_transitions(data_dir, "val")[:5]]
    a = policy.generate(prompts, temperature=1.0, seed=7)
    b = policy.generate(prompts, temperature=1.0, seed=7)
    assert [g.text for g in a] == [g.text for g in b]
    assert all(0 < g.n_tokens <= 24 for g in a)
    greedy = policy.generate(prompts, temperature=0)
    assert [g.text for g in greedy] == [g.text for g in policy.generate(prompts, temperature=0)]
    assert policy.generate([], temperature=0) == []
    with pytest.raises(ConfigError):
        policy.generate(prompts, top_p=0)


def test_per_row_seeds_make_each_row_independent_of_its_batch(gen_export, data_dir):
    policy = GeneratorPolicy.from_export(gen_export, batch_size=3)
    prompts = [r.prompt for r in load_transitions(data_dir, "val")[:6]]
    seeds = [11, 12, 13, 14, 15, 16]
    together = [g.text for g in policy.generate(prompts, seed=seeds)]
    alone = [policy.generate([p], seed=[s])[0].text for p, s in zip(prompts, seeds, strict=True)]
    reordered = policy.generate(prompts[::-1], seed=seeds[::-1])
    assert together == alone == [g.text for g in reordered][::-1]
    assert len(set(together)) > 1  # the rows really are sampled, not greedy
    with pytest.raises(ConfigError):
        policy.generate(prompts, seed=[1, 2])


def test_generation_stops_at_end(gen_export):
    policy = GeneratorPolicy.from_export(gen_export)
    end = encode(policy.tokenizer, ["END"])[0][0]
    with torch.no_grad():  # make END the only likely token
        policy.model.lm_head.weight.zero_()
        policy.model.lm_head.weight[end] = 1.0
        policy.model.transformer.ln_f.bias.fill_(1.0)
        policy.model.transformer.ln_f.weight.zero_()
    out = policy.generate(["GOAL:\n(arm-empty)\nSTATE:\n(arm-empty)\n"] * 3, temperature=0)
    assert [(g.text, g.n_tokens) for g in out] == [("END", 1)] * 3


def test_exports_load_with_auto_classes_and_scorer(tmp_path, atom_tok, data_dir):
    verifier = tiny_model(SMALL, "classifier", atom_tok)
    path = save_export(tmp_path / "ver", verifier, atom_tok,
                       {"kind": "verifier", "domain": DOMAIN.name, "threshold": 0.42,
                        "input_kind": "state_action"})
    assert AutoModelForSequenceClassification.from_pretrained(path).config.num_labels == 2
    assert AutoTokenizer.from_pretrained(path).pad_token == "[PAD]"
    scorer = VerifierScorer.from_export(path)
    assert scorer.threshold == 0.42 and scorer.input_kind == "state_action"
    r = load_transitions(data_dir, "val")
    texts = [scorer.input_text(x.state, x.action, x.next_state) for x in r[:5]]
    assert "NEXT STATE" not in texts[0]
    together = scorer.score(texts)
    alone = [scorer.score([t])[0] for t in texts]  # right padding must not change scores
    assert together == pytest.approx(alone, abs=1e-5)
    assert all(0 <= p <= 1 for p in together)
    from plansuite.planning.adapters import load_verifier
    assert load_verifier(str(path)).threshold == 0.42
    assert load_verifier(str(path), threshold=0.9).threshold == 0.9  # plansuite-eval verifier_threshold=
    with pytest.raises(ConfigError, match="in \\[0, 1\\]"):
        load_verifier(str(path), threshold=1.5)


def test_bad_exports_fail_with_one_line(tmp_path, gen_export, atom_tok):
    with pytest.raises(ConfigError, match="export directory not found"):
        GeneratorPolicy.from_export(tmp_path / "nope")
    with pytest.raises(ConfigError, match="a generator export, expected a verifier"):
        VerifierScorer.from_export(gen_export)
    (tmp_path / "plain").mkdir()
    with pytest.raises(ConfigError, match="not a plansuite export"):
        GeneratorPolicy.from_export(tmp_path / "plain")
    # tokenizer larger than the model's embedding: a mismatch, reported as such
    small = tiny_model(SMALL, "causal", atom_tok)
    small.resize_token_embeddings(10)
    bad = save_export(tmp_path / "bad", small, atom_tok, {"kind": "generator", "domain": "x"})
    with pytest.raises(ConfigError, match="tokenizer/model mismatch"):
        GeneratorPolicy.from_export(bad)
    meta = json.loads((gen_export / "plansuite.json").read_text())
    assert meta["kind"] == "generator" and AutoModelForCausalLM.from_pretrained(gen_export)


def test_pretrained_backbone_offline_names_the_alternatives(atom_tok, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(PlansuiteError, match="model/backbone=tiny") as err:
        pretrained_model("gpt2-not-cached-here", "causal", atom_tok)
    assert "\n" not in str(err.value)


# ---- actions excluded while sampling (refine_resume's exclude_refused) -----------------------

def test_action_exclusion_masks_the_token_that_would_finish_the_action_line(atom_tok, data_dir, tmp_path):
    from plansuite.models.inference import ActionExclusion, action_line_ids

    ids = action_line_ids(atom_tok, "(pickup b1)")
    assert atom_tok.convert_ids_to_tokens(ids) == ["ACTION:", "(pickup b1)"]
    mask = ActionExclusion(atom_tok, [["(pickup b1)", "(stack b1 b2)"], []])
    logits = torch.zeros(2, len(atom_tok))
    action_id = ids[0]
    out = mask([0, 1], [[action_id], [action_id]], logits.clone(), 5)
    banned = {atom_tok.convert_ids_to_tokens(i) for i in (out[0] == float("-inf")).nonzero().flatten().tolist()}
    assert banned == {"(pickup b1)", "(stack b1 b2)"}
    assert not torch.isinf(out[1]).any()  # the other prompt excludes nothing
    assert not torch.isinf(mask([0], [[]], logits[:1].clone(), 5)).any()  # not yet at the action
    # BPE: the masked token is the one that completes the action text, after its canonical prefix
    records = load_transitions(data_dir, "train")
    bpe = bpe_tokenizer([r.prompt + r.completion for r in records], tmp_path)
    *before, last = action_line_ids(bpe, "(stack b1 b2)")
    assert decode(bpe, before + [last]).startswith("ACTION:\n(stack b1 b2)")
    assert not decode(bpe, before).startswith("ACTION:\n(stack b1 b2)")


def test_generate_never_proposes_an_excluded_action(gen_export, data_dir):
    policy = GeneratorPolicy.from_export(gen_export)
    tok = policy.tokenizer
    action_marker = tok.convert_tokens_to_ids("ACTION:")
    pick1, pick2 = tok.convert_tokens_to_ids("(pickup b1)"), tok.convert_tokens_to_ids("(pickup b2)")

    def force(rows, new, logits, steps_left):  # ACTION:, then (pickup b1) or (pickup b2)
        for i, r in enumerate(rows):
            allowed = [action_marker] if not new[r] else [pick1, pick2] if len(new[r]) == 1 else None
            if allowed is not None:
                keep = logits[i, allowed].clone()
                logits[i] = float("-inf")
                logits[i, allowed] = keep
        return logits

    prompts = [r.prompt for r in load_transitions(data_dir, "val")[:4]] * 4
    seeds = list(range(len(prompts)))
    free = policy.generate(prompts, seed=seeds, max_new_tokens=3, logits_processor=force)
    assert {parse_action(g.text) for g in free} == {"(pickup b1)", "(pickup b2)"}
    excluded = policy.generate(prompts, seed=seeds, max_new_tokens=3, logits_processor=force,
                               exclude_actions=[["(pickup b1)"]] * len(prompts))
    assert {parse_action(g.text) for g in excluded} == {"(pickup b2)"}
    with pytest.raises(ConfigError, match="exclusion lists"):
        policy.generate(prompts, exclude_actions=[[]])


def parse_action(text: str) -> str:
    return text.split("\n")[1]
