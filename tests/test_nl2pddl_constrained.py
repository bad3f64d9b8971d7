"""Constrained decoding (issue 11): the automaton accepts every reference problem and rejects each
kind of domain inconsistency; a random, untrained model decoding under it always writes a problem
that parses and passes ``check_problem``, while the same model decoding freely does not."""

from __future__ import annotations

import random
import re

import pytest
import torch

from plansuite.domains import domain_file, load_builtin
from plansuite.errors import ConfigError, PDDLError
from plansuite.models.backbone import BackboneConfig, tiny_model
from plansuite.models.inference import GeneratorPolicy
from plansuite.models.tokenizer import decode
from plansuite.nl2pddl.data import scenes
from plansuite.nl2pddl.decoding.constrained import ConstrainedProblemDecoding, ProblemGrammar
from plansuite.nl2pddl.decoding.generators import extract_problem
from plansuite.nl2pddl.models.text_tokenizer import train_text_tokenizer
from plansuite.pddl.checks import check_problem
from plansuite.pddl.model import problem_to_pddl
from plansuite.pddl.parse import parse_problem

DOMAINS = ("blocksworld", "gripper")


def references(name: str, n: int, seed: int = 0) -> list[str]:
    domain, rng = load_builtin(name), random.Random(seed)
    if name == "blocksworld":
        found = [scenes.blocksworld_random(domain, rng, 2, 6) for _ in range(n)]
    else:
        found = [scenes.gripper_random(domain, rng, 2, 5, [2, 3]) for _ in range(n)]
    return [problem_to_pddl(s.problem, domain) for s in found]


@pytest.fixture(scope="module", params=DOMAINS)
def setup(request):
    name = request.param
    return name, load_builtin(name), ProblemGrammar(load_builtin(name))


def assert_consistent(text: str, domain) -> None:
    problem = parse_problem(text, domain, source="generated", check=False)  # raises if it does not parse
    assert check_problem(problem, domain, text) == [], text


def consistent(text: str, domain) -> bool:
    try:
        assert_consistent(text, domain)
    except (PDDLError, AssertionError):
        return False
    return True


def test_every_reference_problem_is_accepted(setup):
    _, _, grammar = setup
    for text in references(setup[0], 60):
        state = grammar.feed(grammar.start(), text.strip())
        assert grammar.accepts(state), text


BAD = {  # each replacement turns a reference into a problem check_problem or the parser rejects
    "blocksworld": [("(:objects ", "(:objects zz "), ("(arm-empty)", "(arm-full)"),
                     ("(arm-empty)", "(arm-empty b1)"), ("(clear b1)", "(clear b1 b1)"),
                     ("(clear b1)", "(clear b99)"), ("blocksworld-4ops", "gripper-strips"),
                     ("(:objects b1", "(:objects b1 b1"), ("(:objects b1", "(:objects b1 - block")],
    "gripper": [("(at-robby ", "(at-robot "), ("(free left)", "(free left right)"),
                ("(free left)", "(free rooma)"), ("(free left)", "(free hand3)"),
                ("- gripper", "- hand"), ("(:objects ", "(:objects left ")],
}


def test_inconsistent_problems_are_rejected_where_they_go_wrong(setup):
    name, domain, grammar = setup
    texts = [t for t in references(name, 80) if all(old in t for old, _ in BAD[name])]
    assert texts
    for old, new in BAD[name]:
        bad = texts[0].replace(old, new, 1)
        state = grammar.feed(grammar.start(), bad)
        assert state is None, (old, new)
        stop = next(i for i in range(len(bad) + 1) if grammar.feed(grammar.start(), bad[:i]) is None)
        assert stop > bad.index(new) - 1  # the prefix up to the change was fine


def test_the_shortest_completion_of_any_prefix_is_a_consistent_problem(setup):
    name, domain, grammar = setup
    rng = random.Random(1)
    for text in references(name, 15, seed=3):
        for cut in sorted(rng.sample(range(len(text.strip())), 12)):
            state = grammar.feed(grammar.start(), text[:cut])
            done = text[:cut] + grammar.completion(state)
            assert grammar.accepts(grammar.feed(grammar.start(), done)), done
            assert_consistent(done, domain)


def test_pddl21_domains_are_refused_with_one_line():
    with pytest.raises(ConfigError, match="STRIPS domains only.*backend.constrained=false"):
        ProblemGrammar(load_builtin("fuel-delivery"))


@pytest.fixture(scope="module")
def random_models():
    """An untrained tiny GPT-2 per domain with a corpus tokenizer fitted to that domain's text."""
    out = {}
    for name in DOMAINS:
        corpus = references(name, 200, seed=7)
        tok = train_text_tokenizer(corpus + ["DESCRIPTION: blocks balls rooms\nPROBLEM:\nEND"], 600)
        torch.manual_seed(0)
        model = tiny_model(BackboneConfig(tokenizer="corpus", n_layer=1, n_embd=32, n_head=2,
                                          n_positions=512), "causal", tok).eval()
        out[name] = GeneratorPolicy(model, tok, max_new_tokens=200)
    return out


def generate(policy: GeneratorPolicy, domain_name: str, n: int, constrained: bool,
             temperature: float = 1.0, budget: int = 200, prefix: str = "",
             description: str | None = None) -> list[str]:
    tok = policy.tokenizer
    processor = None
    if constrained:
        texts = [decode(tok, [i]) for i in range(len(tok))]
        processor = ConstrainedProblemDecoding(ProblemGrammar(load_builtin(domain_name)), texts,
                                               policy.stop_ids, [prefix] * n, description)
    gens = policy.generate(["DESCRIPTION: blocks\nPROBLEM:\n" + prefix] * n, temperature=temperature,
                           top_p=1.0, max_new_tokens=budget, seed=list(range(n)),
                           logits_processor=processor)
    return [extract_problem(prefix + g.text) for g in gens]


@pytest.mark.parametrize("name", DOMAINS)
def test_a_random_model_under_the_constraint_always_writes_a_consistent_problem(random_models, name):
    domain = load_builtin(name)
    free = generate(random_models[name], name, 6, constrained=False)
    assert not any(consistent(t, domain) for t in free)  # unconstrained: noise (the test can fail)
    for budget in (120, 60):  # 60: too few tokens to wander, the budget forces a completion
        texts = generate(random_models[name], name, 4, constrained=True, budget=budget)
        for text in texts:
            assert_consistent(text, domain)
        objects = [parse_problem(t, domain, check=False).objects for t in texts]
        assert sum(bool(o) for o in objects) >= 2  # it does more than the shortest way out


def test_greedy_decoding_and_a_kept_prefix_stay_consistent(random_models):
    domain = load_builtin("gripper")
    prefix = references("gripper", 1)[0].split("(:init")[0].rstrip()
    for temperature in (0.0, 1.5):
        for text in generate(random_models["gripper"], "gripper", 4, True, temperature, prefix=prefix):
            assert text.startswith(prefix)
            assert_consistent(text, domain)
    bad_prefix = "(define (problem p) (:domain gripper-strips) (:objects x - hand"
    with pytest.raises(ConfigError, match="not a valid start"):
        generate(random_models["gripper"], "gripper", 1, True, prefix=bad_prefix)


def test_the_local_backend_option_reaches_the_decoder(random_models, tmp_path):
    """``constrained`` of :class:`LocalGenerator` switches the processor on and off."""
    from plansuite.nl2pddl.models.learned import LocalGenerator

    gen = LocalGenerator.__new__(LocalGenerator)  # the export-free parts: grammar and processor
    gen.policy, gen._grammars, gen._token_texts = random_models["blocksworld"], {}, None
    text = domain_file("blocksworld").read_text()
    gen.constrained, gen.distinct_atoms, gen.valid_states = True, False, False
    gen.stated_relations = True
    processor = gen._processor(text, [""], "Blocks a and b. Block a is on block b.")
    assert isinstance(processor, ConstrainedProblemDecoding) and not processor.grammar.distinct_atoms
    assert processor.grammar.world is None
    assert processor.prefix_states[0].parse.together is not None
    gen.stated_relations = False
    assert gen._processor(text, [""], "Blocks a and b.").prefix_states[0].parse.together is None
    gen._grammars, gen.valid_states = {}, "auto"
    assert gen._processor(text, [""], None).grammar.world is not None
    gen.constrained = False
    assert gen._processor(text, [""], None) is None


def test_no_fact_twice_and_never_a_dead_end():
    bw = load_builtin("blocksworld")  # valid_states off: this is about distinct atoms alone
    strict, loose = ProblemGrammar(bw, valid_states=False), ProblemGrammar(bw, False, valid_states=False)
    head = "(define (problem p) (:domain blocksworld-4ops) (:objects a) (:init (clear a) "
    assert strict.feed(strict.start(), head + "(clear a)") is None
    assert loose.feed(loose.start(), head + "(clear a)") is not None
    # every fact over one block written: no "(" is left, yet the file can still be finished
    full = head + "(on-table a) (arm-empty) (holding a) (on a a)"
    state = strict.feed(strict.start(), full)
    assert state is not None and strict.feed(state, " (") is None
    assert strict.accepts(strict.feed(state, strict.completion(state)))
    # the goal is a section of its own: a fact of :init may be a goal too
    assert strict.feed(strict.start(), full + ") (:goal (and (clear a) (on a a)") is not None
    # with valid states the section closes sooner: after a complete state no fact fits
    valid = ProblemGrammar(bw)
    state = valid.feed(valid.start(), head + "(on-table a) (arm-empty)")
    assert state is not None and valid.feed(state, " (") is None
    assert valid.accepts(valid.feed(state, valid.completion(state)))


def test_a_random_model_under_the_constraint_repeats_no_fact(random_models):
    domain = load_builtin("blocksworld")
    for text in generate(random_models["blocksworld"], "blocksworld", 6, constrained=True, budget=200):
        problem = parse_problem(text, domain, check=False)
        init_text = re.split(r"\(\s*:goal", re.split(r"\(\s*:init", text)[1])[0]
        init = [" ".join(a.split()) for a in re.findall(r"\(([^()]*)\)", init_text)]
        assert len(init) == len(set(init)) == len(problem.init), text


VALID_STATE_CASES = {  # (objects and earlier facts, a fact no valid state holds with them, one it can)
    "blocksworld": ("(:objects a b c) (:init (on-table a) (on b a) ", "(holding a)", "(on c b)"),
    "gripper": ("(:objects ball1 - ball rooma roomb - room left right - gripper) (:init (at ball1 rooma) ",
                "(at ball1 roomb)", "(at-robby roomb)"),
}


@pytest.mark.parametrize("name", DOMAINS)
def test_valid_states_forbid_a_fact_no_state_holds_with_the_earlier_ones(name):
    domain = load_builtin(name)
    head = f"(define (problem p) (:domain {domain.name}) " + VALID_STATE_CASES[name][0]
    bad, good = VALID_STATE_CASES[name][1:]
    strict, loose = ProblemGrammar(domain), ProblemGrammar(domain, valid_states=False)
    assert strict.world is not None and loose.world is None
    assert strict.feed(strict.start(), head + bad) is None
    assert loose.feed(loose.start(), head + bad) is not None
    assert strict.feed(strict.start(), head + good) is not None
    # the goal is a section of its own: there the same fact is fine again
    done = strict.feed(strict.start(), head)
    assert strict.feed(done, strict.completion(done)[:-3] + f"{bad}))") is not None
    # and the shortest completion never needs a forbidden fact
    state = strict.feed(strict.start(), head + good)
    assert strict.accepts(strict.feed(state, strict.completion(state)))


@pytest.mark.parametrize("name", DOMAINS)
def test_a_random_model_under_valid_states_writes_only_sections_some_state_holds(random_models, name):
    from plansuite.nl2pddl.judging.worlds import find_state, world_for

    domain = load_builtin(name)
    texts = generate(random_models[name], name, 6, constrained=True, budget=160)
    for text in texts:
        problem = parse_problem(text, domain, check=False)
        for atoms in (problem.init, problem.goal_pos):  # (objects no state fits allow no fact at all)
            assert not atoms or find_state(world_for(domain), problem.objects, atoms, ()) is not None, text


def test_valid_states_true_needs_a_state_model():
    from plansuite.pddl.parse import parse_domain

    lamp = parse_domain("(define (domain lamp) (:requirements :strips) (:predicates (lit ?x)) "
                        "(:action light :parameters (?x) :precondition (and) :effect (lit ?x)))", "lamp.pddl")
    assert ProblemGrammar(lamp).world is None  # auto: no state model, no such constraint
    with pytest.raises(ConfigError, match="lamp.pddl: valid_states=true needs a domain with a state model"):
        ProblemGrammar(lamp, valid_states=True)


def test_inside_an_atom_only_one_space_separates_its_words():
    """A generator unsure of an argument wrote ``(at-robby`` then eight newlines: inside an atom
    the grammar allows one space between words, and the layout between atoms stays free."""
    g = ProblemGrammar(load_builtin("gripper"))
    head = "(define (problem p) (:domain gripper) (:objects rooma roomb - room) (:init\n    (at-robby"
    assert g.feed(g.start(), head + " rooma)\n    (at-robby") is None  # (a robot in two rooms)
    assert g.feed(g.start(), head + " rooma)\n  )") is not None
    for bad in ("\n rooma)", "  rooma)", "\trooma)"):
        assert g.feed(g.start(), head + bad) is None, bad


@pytest.mark.parametrize("name", DOMAINS)
def test_a_random_model_started_with_an_explicit_description_writes_only_stated_relations(random_models, name):
    """Under ``stated_relations`` (the decoder started with the description), every fact relating
    two or more objects relates objects one clause names together, once the declared objects are
    all named in the text; without the description, a random model writes others."""
    from plansuite.nl2pddl.decoding.mentions import problem_facts, unsupported_facts

    domain = load_builtin(name)
    reference = references(name, 1, seed=3)[0]
    objects = list(parse_problem(reference, domain).objects)
    facts = problem_facts(reference)
    description = f"Objects {', '.join(objects)}. " + "; ".join(
        " with ".join(f[1].strip("()").split()[1:]) for f in facts) + "."
    prefix = reference.split("(:init")[0].rstrip()  # the reference's objects: all named in the text
    stated = generate(random_models[name], name, 6, True, prefix=prefix, budget=160, description=description)
    free = generate(random_models[name], name, 6, True, prefix=prefix, budget=160)
    for text in stated:
        assert_consistent(text, domain)
        assert unsupported_facts(description, objects, problem_facts(text)) == [], text
    assert any(unsupported_facts(description, objects, problem_facts(t)) for t in free)
