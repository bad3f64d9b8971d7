"""The learned NL→PDDL parts: corpus tokenizer, text-pair and critic data, ``plansuite-train
model=problem_generator|critic``, the local backend and the learned critic loaded from their
exports, ``task=critic`` and the ``backend=`` / ``critic=`` wiring of ``task=repair``.

Models here are trained for a handful of steps: the tests check mechanics, not quality (the
measured run is experiments/nl2pddl/RESULTS.md; the slow test at the end trains for real)."""

from __future__ import annotations

import json
import re

import pytest
from hydra import compose, initialize_config_dir

from plansuite.cli import CONF_DIR
from plansuite.cli.nl2pddl import run as nl2pddl_run
from plansuite.cli.train import run as train_run
from plansuite.domains import builtin_path, load_builtin
from plansuite.errors import ConfigError
from plansuite.nl2pddl.data.dataset import (
    NL2PDDLSpec,
    build_nl2pddl,
    load_critic_examples,
    load_pairs,
)
from plansuite.nl2pddl.decoding.generators import BackendError, Feedback, resample_from
from plansuite.nl2pddl.judging.critic import CRITIC_LABELS, CriticVerdict
from plansuite.nl2pddl.judging.problem_checks import OperationalChecker
from plansuite.nl2pddl.loop.repair import repair
from plansuite.nl2pddl.models.learned import LearnedCritic, LocalGenerator
from plansuite.nl2pddl.models.text_datamodules import (
    CriticDataModule,
    ProblemDataModule,
    text_corpus,
)
from plansuite.nl2pddl.models.text_tokenizer import train_text_tokenizer
from plansuite.pddl.checks import Diagnostic
from plansuite.pddl.parse import parse_problem

TINY = ["model.backbone.n_layer=1", "model.backbone.n_embd=32", "model.backbone.n_head=2",
        "model.vocab_size=400", "logger=none", "trainer.enable_progress_bar=false"]


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("PLANSUITE_DEBUG", raising=False)  # errors as one line and exit 1


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    out = tmp_path_factory.mktemp("nl") / "data"
    spec = NL2PDDLSpec(random_problems=30, max_objects=4, abstract_sizes=[3, 4])
    build_nl2pddl(spec, load_builtin("blocksworld"), builtin_path("blocksworld").read_text(), out,
                  seed=3, progress=lambda _: None)
    return out


def train(kind: str, data, out, *overrides: str) -> dict:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", [f"model={kind}", f"data_dir={data}", f"out_dir={out}", *TINY, *overrides])
    return train_run(cfg)


def nl2pddl(*overrides: str) -> dict:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return nl2pddl_run(compose("nl2pddl", list(overrides)))


@pytest.fixture(scope="module")
def generator_export(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("pg")
    results = train("problem_generator", data, out, "trainer.max_steps=6", "model.val_greedy=2",
                    "model.max_new_tokens=48")
    return out / "export", results


@pytest.fixture(scope="module")
def critic_export(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("critic")
    results = train("critic", data, out, "trainer.max_steps=6", "model.batch_size=16")
    return out / "export", results


# ---- data and tokenizer -----------------------------------------------------------------------
def test_corpus_tokenizer_round_trips_dataset_text_compactly(data):
    pairs = load_pairs(data, "test")
    tok = train_text_tokenizer(text_corpus(data, "problem_generator"), vocab_size=400)
    for p in pairs[:10]:
        ids = tok(p.prompt + p.completion, add_special_tokens=False)["input_ids"]
        assert tok.decode(ids) == p.prompt + p.completion  # held-out text: exact
        assert len(ids) < len(p.prompt + p.completion) / 3  # whitespace-led chunks, not bytes
    explicit = next(p for p in pairs if p.style == "explicit")
    names = set(tok(explicit.prompt, add_special_tokens=False)["input_ids"])
    problem = tok.convert_ids_to_tokens(tok(explicit.completion, add_special_tokens=False)["input_ids"])
    objects = [t for t in problem if t.lstrip("Ġ").startswith("b") and t.lstrip("Ġ")[1:].isdigit()]
    assert objects and {tok.convert_tokens_to_ids(t) for t in objects} <= names  # " b1": one token, copied
    assert "ĊĠĠĠĠ(clear" in problem  # a keyword is one token with "(" and its indent
    with pytest.raises(ConfigError, match="vocab_size"):
        train_text_tokenizer(["x"], vocab_size=100)


def test_problem_datamodule_masks_the_description_and_ends_with_eos(data):
    tok = train_text_tokenizer(text_corpus(data, "problem_generator"), vocab_size=400)
    dm = ProblemDataModule(data, tok, 512, batch_size=4, greedy_n=3, seed=1)
    dm.setup()
    pairs = load_pairs(data, "train")
    assert len(dm.train) == len(pairs) and len(dm.greedy_records) == 3
    ids, labels = dm.train[0]
    prompt = tok(pairs[0].prompt, add_special_tokens=False)["input_ids"]
    assert ids[:len(prompt)] == prompt and labels[:len(prompt)] == [-100] * len(prompt)
    assert ids[-1] == tok.eos_token_id and tok.decode(labels[len(prompt):-1]) == pairs[0].completion
    batch = next(iter(dm.train_dataloader()))
    assert batch["input_ids"].shape == batch["labels"].shape
    assert len(dm.val_dataloader()) == 2  # loss, then the greedy-decoded pairs
    with pytest.raises(ConfigError, match="longer than the model's context"):
        small = ProblemDataModule(data, tok, 16)
        small.setup()


def test_problem_datamodule_repeats_abstract_pairs_only(data):
    tok = train_text_tokenizer(text_corpus(data, "problem_generator"), vocab_size=400)
    pairs = load_pairs(data, "train")
    abstract = [p for p in pairs if p.style == "abstract"]
    assert abstract and len(abstract) < len(pairs)
    dm = ProblemDataModule(data, tok, 512, batch_size=4, greedy_n=3, seed=1, abstract_repeat=3)
    dm.setup()
    assert len(dm.train) == len(pairs) + 2 * len(abstract)
    assert dm.train_counts["abstract"] == 3 * len(abstract)
    first = tok(abstract[0].prompt, add_special_tokens=False)["input_ids"]
    assert sum(ids[:len(first)] == first for ids, _ in dm.train) == 3
    with pytest.raises(ConfigError, match="abstract_repeat=0"):
        ProblemDataModule(data, tok, 512, abstract_repeat=0)


def test_critic_datamodule_labels_every_kind(data):
    tok = train_text_tokenizer(text_corpus(data, "critic"), vocab_size=400)
    dm = CriticDataModule(data, tok, 512, batch_size=8)
    dm.setup()
    examples = load_critic_examples(data, "train")
    assert dm.train_counts["examples"] == len(examples)
    assert all(dm.train_counts[k] == sum(e.label == k for e in examples) > 0 for k in CRITIC_LABELS)
    batch = next(iter(dm.val_dataloader()))
    assert set(batch["labels"].tolist()) <= set(range(len(CRITIC_LABELS)))
    assert batch["attention_mask"][:, 0].all()  # right padding: the head reads the last real token


# ---- training and exports ---------------------------------------------------------------------
def test_problem_generator_trains_and_exports(generator_export):
    export, results = generator_export
    meta = json.loads((export / "plansuite.json").read_text())
    assert results["kind"] == "problem_generator" and results["global_step"] == 6
    assert meta["kind"] == "problem_generator" and meta["max_new_tokens"] > 0
    assert {"val/loss", "val/parse", "val/structural", "val/semantic"} <= set(results["metrics"])
    assert (export / "tokenizer.json").is_file() and (export / "domain.pddl").is_file()


def test_local_backend_generates_and_resamples_only_the_flagged_section(generator_export, data):
    export, _ = generator_export
    gen = LocalGenerator(export, seed=0, samples=2)
    domain_text = builtin_path("blocksworld").read_text()
    pair = load_pairs(data, "test")[0]
    first = gen.generate(pair.description, domain_text, None)
    assert isinstance(first, str) and first == gen.generate(pair.description, domain_text, None)  # greedy
    previous = pair.problem  # a full problem: a critic-goal rejection keeps all but the goal
    feedback = Feedback(previous, (Diagnostic("critic-goal", "c", "(:goal ...)", "wrong goal"),), "fix")
    retry = gen.generate(pair.description, domain_text, feedback)
    keep = previous[:resample_from(previous, feedback.diagnostics)]
    assert "(:init" in keep and "(:goal" not in keep
    assert retry.startswith(keep) and retry.split() != previous.split()
    assert retry == gen.generate(pair.description, domain_text, feedback)  # seeded by the previous text
    rewrites = gen.rewrites(pair.description, domain_text, feedback)  # what check_rewrites checks
    assert rewrites[0] == retry and len({tuple(r.split()) for r in rewrites}) == len(rewrites) <= 2
    assert all(r.startswith(keep) and r.split() != previous.split() for r in rewrites)
    with pytest.raises(BackendError, match="trained on domain 'blocksworld-4ops'"):
        gen.generate(pair.description, builtin_path("gripper").read_text(), None)


def test_local_backend_samples_reproducible_first_attempts_under_the_constraint(generator_export, data):
    gen = LocalGenerator(generator_export[0], seed=0)
    domain_text = builtin_path("blocksworld").read_text()
    domain = load_builtin("blocksworld")
    pair = load_pairs(data, "test")[0]
    assert gen.sample(pair.description, domain_text) == [gen.generate(pair.description, domain_text, None)]
    drawn = gen.sample(pair.description, domain_text, n=4, temperature=1.5, seed=3)
    assert len(drawn) == 4 and drawn == gen.sample(pair.description, domain_text, n=4, temperature=1.5, seed=3)
    assert len({tuple(t.split()) for t in drawn}) > 1  # sampled, not four greedy copies
    for text in drawn:  # the constraint holds for samples too: each parses and checks against the domain
        parse_problem(text, domain, source="<sample>")


def test_local_backend_patches_the_fact_a_critic_quotes_and_keeps_the_facts_after_it(generator_export, data):
    export, _ = generator_export
    domain_text = builtin_path("blocksworld").read_text()
    pair = load_pairs(data, "test")[0]
    previous = pair.problem
    lines = previous.split("\n")
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("(on-table"))
    doubted = Diagnostic("critic-init", "c", f"init {lines[at].strip()}", "doubt", at + 1)
    feedback = Feedback(previous, (doubted,), "fix")
    patched = LocalGenerator(export, seed=0, samples=6).rewrites(pair.description, domain_text, feedback)
    plain = LocalGenerator(export, seed=0, samples=6, line_patches=False).rewrites(
        pair.description, domain_text, feedback)
    patches = [r for r in patched if r not in plain]
    assert set(plain) <= set(patched) and patches  # the continuations, then the one-line patches
    for text in patches:  # only the doubted line changed (or went), every other line kept
        new = text.split("\n")
        assert new[:at] == lines[:at] and new[-(len(lines) - at - 1):] == lines[at + 1:]
        assert len(new) in (len(lines), len(lines) - 1) and lines[at] not in new[at:at + 1]


def test_local_backend_that_cannot_change_its_answer_ends_the_loop_unchanged(generator_export, data):
    gen = LocalGenerator(generator_export[0])
    bad = "(define (problem p) (:domain blocksworld-4ops) (:objects a) (:init (clear zz)) (:goal (and)))"
    # a model that always continues the kept prefix (here: up to (:init) into the same problem
    gen._complete = lambda description, n, temperature, seed, domain_text, prefix="": [bad[len(prefix):]] * n
    result = repair(load_pairs(data, "test")[0].description, gen,
                    OperationalChecker(builtin_path("blocksworld")), max_attempts=4)
    assert [a.text for a in result.attempts] == [bad, bad] and result.stop == "unchanged"


def test_local_backend_backs_off_to_the_section_then_the_head_when_every_rewrite_repeats(generator_export, data):
    """Continuations from the doubted fact that all repeat the candidate (the facts kept before it
    leave one way on) are followed by continuations from the start of its section."""
    gen = LocalGenerator(generator_export[0], samples=2)
    domain_text = builtin_path("blocksworld").read_text()
    previous = load_pairs(data, "test")[0].problem
    lines = previous.split("\n")
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("(on-table"))
    doubted = Diagnostic("critic-init", "c", f"init {lines[at].strip()}", "doubt", at + 1)
    init = previous.index("\n  (:init")
    asked: list[str] = []

    def complete(description, n, temperature, seed, domain_text, prefix=""):
        asked.append(prefix)  # the same problem again from the fact; a new one from the section
        rest = previous[len(prefix):]
        return [rest if len(prefix) > init else rest.replace(lines[at] + "\n", "", 1)] * n

    gen._complete = complete
    out = gen.rewrites("any", domain_text, Feedback(previous, (doubted,), "fix"))
    assert [len(p) for p in asked] == [len(previous[:resample_from(previous, [doubted])]), init]
    assert len(out) == 1 and out[0].split() != previous.split()


def test_local_backend_drops_an_object_the_critic_quotes_even_when_every_rewrite_repeats(generator_export, data):
    """A generator sure of its object list writes the idle object again from every cut; the
    quoted object dropped from ``:objects`` is still among the rewrites, and comes first."""
    gen = LocalGenerator(generator_export[0], samples=2)
    domain_text = builtin_path("blocksworld").read_text()
    reference = load_pairs(data, "test")[0].problem
    previous = reference.replace("(:objects ", "(:objects spare7 ", 1)
    line = next(i for i, text in enumerate(previous.split("\n"), 1) if "spare7" in text)
    idle = Diagnostic("critic-object", "c", "objects spare7", "declared for nothing", line)
    unpatched = LocalGenerator(generator_export[0], samples=2, line_patches=False)
    for backend in (gen, unpatched):
        backend._complete = lambda description, n, temperature, seed, domain_text, prefix="": \
            [previous[len(prefix):]] * n
    out = gen.rewrites("any", domain_text, Feedback(previous, (idle,), "fix"))
    assert [o.split() for o in out] == [reference.split()]
    assert unpatched.rewrites("any", domain_text, Feedback(previous, (idle,), "fix")) == []  # line_patches' own


def test_local_backend_seeds_a_reversed_fact_and_a_left_out_relation(generator_export, data):
    """A generator sure of a fact it copied backwards (or of a stated relation it left out) writes
    it again from every cut; the rewrites seeded with the fact's arguments reordered reach the
    reference, and a relation the critic names seeds a fact over its objects in :init."""
    domain_text = builtin_path("blocksworld").read_text()
    reference = next(p.problem for p in load_pairs(data, "test") if re.search(r"\(on \w+ \w+\)", p.problem))
    fact = re.search(r"\(on (\w+) (\w+)\)", reference)
    x, y = fact.groups()
    previous = reference.replace(fact.group(0), f"(on {y} {x})", 1)
    line = previous[:previous.index(f"(on {y} {x})")].count("\n") + 1
    asked: list[str] = []

    def go_on(description, domain_text, prefixes, temperature, seed=0):
        asked.extend(prefixes)
        return [reference[len(p):] if reference.startswith(p) else "\n  )\n)" for p in prefixes]

    gen, unpatched = LocalGenerator(generator_export[0], samples=2), \
        LocalGenerator(generator_export[0], samples=2, line_patches=False)
    for backend in (gen, unpatched):
        backend._complete = lambda description, n, temperature, seed, domain_text, prefix="": \
            [previous[len(prefix):]] * n
        backend._continue = go_on
    doubted = Diagnostic("critic-init", "c", f"init (on {y} {x})", "unlikely", line)
    out = gen.rewrites("any", domain_text, Feedback(previous, (doubted,), "fix"))
    assert reference.split() in [o.split() for o in out]
    assert unpatched.rewrites("any", domain_text, Feedback(previous, (doubted,), "fix")) == []  # line_patches' own
    asked.clear()
    left_out = reference.replace(fact.group(0), "", 1)
    gen.rewrites("any", domain_text, Feedback(left_out, (Diagnostic("critic", "c", f"relation {x} {y}", "unstated"),),
                                               "fix"))
    assert any(p.endswith(f"(:init\n    (on {x} {y})") for p in asked)


def test_critic_trains_and_judges_with_a_kind(critic_export, data):
    export, results = critic_export
    assert results["kind"] == "critic" and "val/accuracy" in results["metrics"]
    meta = json.loads((export / "plansuite.json").read_text())
    assert meta["labels"] == list(CRITIC_LABELS)
    critic = LearnedCritic(export)
    example = load_critic_examples(data, "test")[0]
    verdict = critic.judge(example.description, example.problem)
    assert isinstance(verdict, CriticVerdict) and 0.0 <= verdict.score <= 1.0
    assert verdict.accepted == (verdict.kind is None) and verdict.kind in (None, *CRITIC_LABELS[1:])
    strict = LearnedCritic(export, threshold=1.0)  # nothing is that sure: every problem rejected
    assert not strict.judge(example.description, example.problem).accepted
    long_problem = example.problem.replace("(:init", "(:init" + " (clear b1)" * 400)
    assert isinstance(critic.judge(example.description, long_problem), CriticVerdict)  # truncated
    with pytest.raises(ConfigError, match="export directory not found"):
        LearnedCritic(export.parent.parent / "missing")


def test_critic_can_start_from_the_problem_generator(generator_export, data, tmp_path):
    results = train("critic", data, tmp_path, "model.init=generator", "trainer.max_steps=2",
                    f"model.generator_dir={generator_export[0]}")
    assert results["global_step"] == 2
    assert json.loads((tmp_path / "export" / "plansuite.json").read_text())["init"] == "generator"


# ---- the CLI ----------------------------------------------------------------------------------
def test_task_critic_reports_held_out_accuracy_per_kind(critic_export, data, tmp_path):
    report = nl2pddl("task=critic", f"data_dir={data}", f"out_dir={tmp_path}", "critic=learned",
                     f"critic.export={critic_export[0]}")
    test = load_critic_examples(data, "test")
    assert report["n"] == len(test) and set(report["per_kind"]) == set(CRITIC_LABELS)
    assert sum(r["n"] for r in report["per_kind"].values()) == len(test)
    assert 0.0 <= report["accuracy"] <= report["detection"] <= 1.0  # a named kind implies detection
    assert json.loads((tmp_path / "critic_eval.json").read_text())["accuracy"] == report["accuracy"]
    assert "| all |" in (tmp_path / "critic_eval.md").read_text()
    with pytest.raises(SystemExit):  # no critic configured: one line, exit 1
        nl2pddl("task=critic", f"data_dir={data}", f"out_dir={tmp_path}")


def test_task_repair_with_the_local_backend_and_the_learned_critic(generator_export, critic_export,
                                                                   data, tmp_path):
    metrics = nl2pddl("task=repair", f"data_dir={data}", f"out_dir={tmp_path}", "limit=2",
                      "max_attempts=2", f"backend.export={generator_export[0]}", "critic=learned",
                      f"critic.export={critic_export[0]}", "planner.time_limit=10")
    assert metrics["overall"][0]["n"] == 2 and sum(metrics["stops"].values()) == 2
    rows = [json.loads(line) for line in (tmp_path / "attempts.jsonl").read_text().splitlines()]
    run_cfg = json.loads((tmp_path / "run.json").read_text())
    assert run_cfg["backend"]["_target_"].endswith("LocalGenerator")
    assert run_cfg["critic"]["_target_"].endswith("LearnedCritic")
    for r in rows:  # the critic ran on everything that parsed
        assert (r["critic_accepted"] is None) == (not r["parsed"])


def test_missing_export_settings_are_one_line(data, tmp_path, capsys):
    with pytest.raises(SystemExit):
        nl2pddl("task=repair", f"data_dir={data}", f"out_dir={tmp_path}", "limit=1")
    assert "backend.export: required" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        nl2pddl("task=repair", f"data_dir={data}", f"out_dir={tmp_path}", "limit=1",
                f"backend.export={tmp_path}/nowhere")
    assert "export directory not found" in capsys.readouterr().err


# ---- end to end from the command line -----------------------------------------------------------
@pytest.mark.slow
def test_end_to_end_train_both_models_then_critic_and_repair(tmp_path):
    """task=data -> plansuite-train problem_generator and critic -> task=critic -> task=repair
    with the local backend and the learned critic, as subprocesses (the documented commands)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "WANDB_MODE": "offline", "HF_HUB_OFFLINE": "1", "PLANSUITE_DEBUG": ""}

    def cli(module: str, *args: str) -> subprocess.CompletedProcess:
        proc = subprocess.run([sys.executable, "-m", f"plansuite.cli.{module}", *args], env=env,
                              capture_output=True, text=True, timeout=1800)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc

    data, pg, critic = tmp_path / "data", tmp_path / "pg", tmp_path / "critic"
    cli("nl2pddl", "task=data", f"out_dir={data}", "dataset.random_problems=120",
        "dataset.max_objects=4", "dataset.abstract_sizes=[3,4]")
    cli("train", "model=problem_generator", f"data_dir={data}", f"out_dir={pg}", "logger=none",
        "model.epochs=15", "model.val_greedy=8")
    cli("train", "model=critic", f"data_dir={data}", f"out_dir={critic}", "logger=none", "model.epochs=2")
    pg_metrics = json.loads((pg / "results.json").read_text())["metrics"]
    assert pg_metrics["val/parse"] >= 0.5  # it has learned to write PDDL problems

    cli("nl2pddl", "task=critic", f"data_dir={data}", f"out_dir={tmp_path / 'ce'}", "critic=learned",
        f"critic.export={critic / 'export'}")
    report = json.loads((tmp_path / "ce" / "critic_eval.json").read_text())
    assert set(report["per_kind"]) == set(CRITIC_LABELS) and report["n"] > 0

    run = tmp_path / "run"
    proc = cli("nl2pddl", "task=repair", f"data_dir={data}", f"out_dir={run}", "limit=8",
               "max_attempts=3", f"backend.export={pg / 'export'}", "critic=learned",
               f"critic.export={critic / 'export'}")
    metrics = json.loads((run / "metrics.json").read_text())
    assert sum(metrics["stops"].values()) == 8 and set(metrics["stops"]) <= {
        "success", "unchanged", "no-feedback", "max-attempts"}
    first = metrics["overall"][0]
    assert first["parsed"] > 0 and first["critic_accepted"] is not None
    assert "op. success but wrong" in proc.stdout


# ---- the generator as critic (critic=likelihood) ----------------------------------------------
def test_likelihood_critic_scores_exactly_the_generators_loss(generator_export, data):
    import torch

    from plansuite.models.tokenizer import encode
    from plansuite.nl2pddl.data.dataset import END, generation_prompt
    from plansuite.nl2pddl.models.likelihood_critic import LikelihoodCritic

    critic = LikelihoodCritic(generator_export[0], threshold=0.5, batch_size=3)
    pairs = load_pairs(data, "test")[:4]
    scored = critic.token_logprobs([p.description for p in pairs], [p.problem for p in pairs])
    for pair, (logprobs, offsets) in zip(pairs, scored, strict=True):
        prompt = encode(critic.tokenizer, [generation_prompt(pair.description)])[0]
        completion = encode(critic.tokenizer, [pair.problem + END + "\n"])[0]
        ids = torch.tensor([prompt + completion])
        labels = torch.tensor([[-100] * len(prompt) + completion])
        with torch.no_grad():
            loss = critic.model(input_ids=ids, labels=labels).loss  # mean over completion tokens
        assert sum(logprobs) == pytest.approx(-float(loss) * len(completion), rel=1e-4)
        assert offsets[0] == 0 and offsets == sorted(offsets) and offsets[-1] >= len(pair.problem)  # END, then "\n"


def test_likelihood_critic_names_the_section_and_atom_of_its_doubt(generator_export):
    from plansuite.nl2pddl.models.likelihood_critic import LikelihoodCritic, TokenDoubt

    critic = LikelihoodCritic(generator_export[0], threshold=0.01)
    text = "(define (problem p)\n  (:domain d)\n  (:objects b1 b2)\n  (:init (on b1 b2) (clear b1))\n  (:goal (and (on b2 b1))))"
    for needle, kind in (("b2)\n", "object"), ("b2) (clear", "init"), ("b1))))", "goal")):
        verdict = critic._verdict(text, text, TokenDoubt(0.001, text.index(needle)))
        assert not verdict.accepted and verdict.kind == kind, (needle, verdict)
    assert "'(on b1 b2)' in :init" in critic._verdict(text, text, TokenDoubt(0.001, text.index("b2) (clear"))).message
    assert critic._verdict(text, text, TokenDoubt(0.5, 3)).accepted
    # the repair keeps the facts before the doubted one and rewrites from it
    from plansuite.nl2pddl.judging.critic import critic_diagnostic

    doubted = critic._verdict(text, text, TokenDoubt(0.001, text.index("b2) (clear")))
    kept = text[:resample_from(text, [critic_diagnostic(doubted, "generated")])]
    assert kept == text[:text.index("(on b1 b2)")].rstrip()
    # a doubted token that opens a line (newline, indent and "(holding") quotes that line's atom
    lines = "(define (problem p)\n  (:domain d)\n  (:objects b1 b2)\n  (:init\n    (clear b1)\n    (holding b2)\n  )"
    at_newline = critic._verdict(lines, lines, TokenDoubt(0.001, lines.index("\n    (holding")))
    assert at_newline.quote == "(holding b2)" and at_newline.line == 6 and at_newline.kind == "init"


def test_likelihood_critic_judges_the_facts_not_their_order_or_layout(generator_export, data):
    from plansuite.nl2pddl.models.likelihood_critic import LikelihoodCritic, atom_lines

    critic = LikelihoodCritic(generator_export[0], threshold=0.5)
    pair = load_pairs(data, "test")[0]
    lines = pair.problem.split("\n")
    spans = atom_lines(lines)
    assert set(spans) == {"init", "goal"}
    start, end = spans["init"]
    shuffled = "\n".join(lines[:start] + lines[start:end][::-1] + lines[end:])
    one_line = " ".join(line.strip() for line in lines)  # no canonical layout: parsed and rewritten
    (read, doubt), *others = critic.doubts([pair.description] * 3, [pair.problem, shuffled, one_line])
    assert all(other == (read, doubt) for other in others)
    # the reading order is the generator's: each placed fact was its most likely next line
    assert sorted(read.split("\n")) == sorted(pair.problem.split("\n"))
    read_lines = read.split("\n")
    head = "\n".join(read_lines[:start])
    rest = read_lines[start:end]
    scores = critic.token_logprobs([pair.description] * len(rest), [f"{head}\n{r}" for r in rest], end=False)
    totals = [sum(s) for s, _ in scores]
    assert max(range(len(totals)), key=totals.__getitem__) == 0
    # a doubted atom is quoted on its line in the candidate as written
    first_fact = read_lines[start].strip()
    verdict = critic._verdict(shuffled, read, type(doubt)(0.0, read.index(first_fact, read.index("(:init"))))
    assert verdict.quote == first_fact and verdict.kind == "init"
    assert shuffled.split("\n")[verdict.line - 1].strip() == read_lines[start].strip()


def test_the_decoder_can_write_the_problems_name_and_the_critic_reads_under_it(generator_export, data):
    from plansuite.nl2pddl.models.likelihood_critic import LikelihoodCritic

    export, _ = generator_export
    domain_text = builtin_path("blocksworld").read_text()
    pair = load_pairs(data, "test")[0]
    named = LocalGenerator(export, problem_name="domain").generate(pair.description, domain_text, None)
    assert named.startswith("(define (problem blocksworld-4ops)\n")
    assert parse_problem(named, load_builtin("blocksworld")).name == "blocksworld-4ops"  # constrained: it parses
    critic = LikelihoodCritic(export, threshold=0.5, problem_name="domain")
    assert critic.canonical(pair.problem).startswith("(define (problem blocksworld-4ops)")
    assert critic.canonical(pair.problem).split("\n")[1:] == \
        LikelihoodCritic(export, threshold=0.5).canonical(pair.problem).split("\n")[1:]
    for bad in (lambda: LocalGenerator(export, problem_name="x"),
                lambda: LikelihoodCritic(export, threshold=0.5, problem_name="x")):
        with pytest.raises(ConfigError, match="problem_name='x'"):
            bad()


def test_task_critic_with_the_likelihood_critic_calibrates_on_val(generator_export, data, tmp_path):
    report = nl2pddl("task=critic", f"data_dir={data}", f"out_dir={tmp_path}", "critic=likelihood",
                     f"backend.export={generator_export[0]}")
    assert 0 < report["threshold"] <= 1 and set(report["per_kind"]) == set(CRITIC_LABELS)
    assert all("precision" in r for r in report["per_kind"].values())
    assert "precision (kind named)" in (tmp_path / "critic_eval.md").read_text()
    with pytest.raises(SystemExit):  # neither a threshold nor data to calibrate on: one line
        nl2pddl("task=critic", f"data_dir={data}", f"out_dir={tmp_path}", "critic=likelihood",
                f"backend.export={generator_export[0]}", "critic.calibrate_on=null")


def test_completion_loss_is_the_models_own_loss_and_gradient():
    """The training loss reads the output layer at the labelled positions only; its value and
    gradients are the ones ``model(..., labels=...).loss`` gives."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from plansuite.nl2pddl.models.problem_generator_module import completion_loss

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=50, n_positions=64, n_embd=32, n_layer=1, n_head=2,
                                       resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))
    ids = torch.randint(1, 50, (3, 20))
    mask = torch.ones_like(ids)
    mask[2, 15:] = 0  # right padding
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, :8] = -100  # the prompt
    ours = completion_loss(model, ids, mask, labels)
    ours.backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    theirs = model(input_ids=ids, attention_mask=mask, labels=labels).loss
    theirs.backward()
    assert float(ours) == pytest.approx(float(theirs), rel=1e-5)
    for ours_grad, p in zip(grads, model.parameters(), strict=True):
        assert torch.allclose(ours_grad, p.grad, atol=1e-6)


