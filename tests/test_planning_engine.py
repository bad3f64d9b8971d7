"""The batched engine against sequential planning (batch size 1), batching limits, garbage, adapters."""

from __future__ import annotations

import random
from dataclasses import replace
from types import SimpleNamespace

import pytest
from scripted import ScriptedGenerator, ScriptedVerifier

from plansuite.domains import load_builtin
from plansuite.domains.blocksworld import BlocksworldStates
from plansuite.pddl.model import Problem, parse_atom_text
from plansuite.pddl.simulator import GroundTask
from plansuite.planning.adapters import ModelGenerator, ModelVerifier, check_same_tokenizer
from plansuite.planning.baselines import SyntheticGenerator
from plansuite.planning.engine import plan_instance, run_batched
from plansuite.planning.episode import InstanceContext
from plansuite.planning.loops import PlannerSpec
from plansuite.planning.outcomes import Outcome, judge_plan
from plansuite.planning.protocols import GenRequest, Proposal, VerifyRequest


def random_contexts(n: int, seed: int = 0) -> list[InstanceContext]:
    """Small blocksworld instances: a random state and a goal a few random steps away."""
    domain, rng = load_builtin("blocksworld"), random.Random(seed)
    sampler = BlocksworldStates(min_blocks=2, max_blocks=4)
    out = []
    for i in range(n):
        objects, init = sampler.sample(rng)
        task = GroundTask(domain, Problem("x", domain.name, objects, init, frozenset()))
        state = task.init
        while state == task.init:  # never the trivial instance
            for _ in range(rng.randint(1, 6)):
                state = task.apply(state, rng.choice(task.applicable(state)))
        goal = frozenset(parse_atom_text(a) for a in task.decode(state))
        problem = Problem(f"r{i}", domain.name, objects, frozenset(init), goal)
        out.append(InstanceContext.of(f"r{i:03d}", GroundTask(domain, problem), seed=seed))
    return out


def noisy_verifier() -> ScriptedVerifier:
    """Pseudo-random scores, a pure function of the request (rejects about 30 %)."""
    return ScriptedVerifier(lambda r: random.Random(f"{r.instance}{r.key}").random(), 0.3)


CHAOTIC = dict(p_garbage=0.1, p_bad_action=0.1, p_bad_state=0.1, greedy=0.7)
SPECS = [PlannerSpec(name="gen", loop="sample", k=4, max_steps=12, propose_on_failure="last"),
         PlannerSpec(name="gv", loop="stepwise", k=5, max_steps=12),
         PlannerSpec(name="ph", loop="posthoc", k=5, max_steps=12)]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.loop)
@pytest.mark.parametrize("batch_size", [1, 5, 64])
def test_batched_engine_equals_sequential_planning(spec, batch_size):
    contexts = random_contexts(30)
    wrap = SyntheticGenerator(**CHAOTIC)
    verifier = noisy_verifier() if spec.loop != "sample" else None

    gen_b = ScriptedGenerator(lambda r: wrap.propose([r])[0])
    ver_b = noisy_verifier() if verifier else None
    batched = {}
    run_batched(contexts, spec, gen_b, ver_b,
                lambda c, r, t: batched.__setitem__(c.id, r), batch_size=batch_size)

    gen_s = ScriptedGenerator(lambda r: wrap.propose([r])[0])
    sequential = {c.id: plan_instance(c, spec, gen_s, verifier) for c in contexts}

    assert batched == sequential  # every attempt, step text, score and call count
    assert gen_b.calls == gen_s.calls == sum(r.generator_calls for r in batched.values())
    assert max(map(len, gen_b.batches)) <= batch_size
    if verifier:
        assert ver_b.calls == verifier.calls and max(map(len, ver_b.batches)) <= batch_size
    if batch_size > 1:
        assert max(map(len, gen_b.batches)) > 1  # the engine really batched
        assert len(gen_b.batches) < gen_s.calls
    outcomes = {judge_plan(c.task, batched[c.id].plan)[0] for c in contexts}
    assert Outcome.SUCCESS in outcomes and len(outcomes) >= 3  # a mixed, non-trivial workload


def test_engine_keeps_slots_full_and_finishes_every_instance():
    contexts = random_contexts(12, seed=3)
    gen = ScriptedGenerator(lambda r: SyntheticGenerator(**CHAOTIC).propose([r])[0])
    finished = []
    run_batched(contexts, SPECS[1], gen, noisy_verifier(),
                lambda c, r, t: finished.append(c.id), batch_size=4)
    assert sorted(finished) == sorted(c.id for c in contexts)  # each exactly once
    # Until the queue runs dry every generator call is a full batch of 4 live instances.
    sizes = [len(b) for b in gen.batches]
    first_short = next(i for i, s in enumerate(sizes) if s < 4)
    assert first_short > 0 and sum(sizes[:first_short]) >= 4 * first_short


GARBAGE = ["", "ACTION:", "ACTION:\n(pickup a)\nNEXT STATE:\n(holding a", "x" * 20000,
           "ACTION:\n((()))\nNEXT STATE:\nEND", "ACTION:\n(pickup zz)\nNEXT STATE:\n(holding zz)\nEND",
           "ACTION:\n(fly a)\nNEXT STATE:\nEND", "ACTION:\n(pickup a)\nNEXT STATE:\n(flying a)\nEND",
           "ACTION:\n(pickup a;b)\nNEXT STATE:\nEND", "\u00e9\u4e2d\U0001f600", None, b"\xff\x00"]


@pytest.mark.parametrize("loop", ["sample", "stepwise", "posthoc"])
def test_garbage_generations_never_crash(loop):
    contexts = random_contexts(len(GARBAGE), seed=5)
    by_id = {c.id: g for c, g in zip(contexts, GARBAGE, strict=True)}
    ctx = contexts[7]  # an applicable action with an unknown atom in its next state
    action = ctx.task.actions[ctx.task.applicable(ctx.task.init)[0]]
    by_id[ctx.id] = f"ACTION:\n{action}\nNEXT STATE:\n(flying b1)\nEND"
    gen = SimpleNamespace(  # a broken model: also None and bytes instead of text
        propose=lambda reqs: [Proposal(by_id[r.instance], 3) for r in reqs])
    spec = PlannerSpec(name="x", loop=loop, k=2, max_steps=5, propose_on_failure="last")
    results = {}
    run_batched(contexts, spec, gen, ScriptedVerifier(lambda r: 1.0) if loop != "sample" else None,
                lambda c, r, t: results.__setitem__(c.id, r))
    outcomes = [judge_plan(c.task, results[c.id].plan)[0].value for c in contexts]
    assert len(results) == len(GARBAGE)
    assert set(outcomes) <= {"unparseable", "bad_action", "bad_next_state", "no_plan"}
    if loop == "sample":  # the lone generator proposes its last attempt: classified
        u, a = "unparseable", "bad_action"
        assert outcomes == [u, u, u, u, u, a, a, "bad_next_state", a, u, u, u]


class FakePolicy:
    """Stands in for GeneratorPolicy: echoes the prompt's first goal atom as a pickup."""

    def __init__(self):
        self.calls, self.excluded = [], []

    def generate(self, prompts, temperature=1.0, top_p=0.99, max_new_tokens=None, seed=None,
                 exclude_actions=None):
        self.calls.append((len(prompts), temperature, top_p, max_new_tokens, seed))
        self.excluded.append(exclude_actions)
        return [SimpleNamespace(text=f"ACTION:\n(pickup b{i})\nNEXT STATE:\nEND", n_tokens=7)
                for i, _ in enumerate(prompts)]


def test_model_generator_groups_sampling_settings_and_keeps_order():
    policy = FakePolicy()
    req = GenRequest("p", (0, 0), ("(on a b)",), ("(arm-empty)",), seed=11)
    requests = [req, replace(req, temperature=1.5, seed=12), replace(req, key=(1, 0), seed=13)]
    proposals = ModelGenerator(policy).propose(requests)
    assert [p.n_tokens for p in proposals] == [7, 7, 7]
    assert proposals[0].text.startswith("ACTION:\n(pickup b0)")  # group (T=1.0): rows 0, 2
    assert proposals[2].text.startswith("ACTION:\n(pickup b1)")
    assert proposals[1].text.startswith("ACTION:\n(pickup b0)")  # group (T=1.5): row 1
    assert sorted(policy.calls) == [(1, 1.5, 0.99, None, [12]), (2, 1.0, 0.99, None, [11, 13])]
    assert req.prompt == "GOAL:\n(on a b)\nSTATE:\n(arm-empty)\n"
    assert policy.excluded == [None, None]  # nothing excluded: the plain call
    ModelGenerator(policy).propose([replace(req, exclude_actions=("(pickup b0)",)), requests[2]])
    assert policy.excluded[-1] == [("(pickup b0)",), ()]  # per row, in the group's order


def test_model_verifier_formats_its_input_kind():
    seen = []
    scorer = SimpleNamespace(threshold=0.5, input_kind="state_action_next",
                             score=lambda texts: seen.extend(texts) or [0.9] * len(texts))
    req = VerifyRequest("p", (0, 0), ("(arm-empty)",), "(pickup a)", ("(holding a)",))
    assert ModelVerifier(scorer).score([req]) == [0.9]
    assert seen == ["STATE:\n(arm-empty)\nACTION:\n(pickup a)\nNEXT STATE:\n(holding a)"]
    scorer.input_kind = "state_action"
    ModelVerifier(scorer).score([req])
    assert seen[-1] == "STATE:\n(arm-empty)\nACTION:\n(pickup a)"


def test_tokenizer_mismatch_is_detected(tmp_path):
    from plansuite.errors import ConfigError

    for name, vocab in (("gen", '{"a": 0, "b": 1}'), ("same", '{"b": 1, "a": 0}'), ("other", '{"a": 0}')):
        (tmp_path / name).mkdir()
        (tmp_path / name / "vocab.json").write_text(vocab)
        (tmp_path / name / "merges.txt").write_text("#version: 0.2\n")
    check_same_tokenizer(tmp_path / "gen", tmp_path / "same")
    with pytest.raises(ConfigError, match="tokenizer differs"):
        check_same_tokenizer(tmp_path / "gen", tmp_path / "other")
