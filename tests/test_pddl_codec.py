"""The paper's text format: exact layout, round trips, and a decoder that never raises."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plansuite.data.explorer import random_walk
from plansuite.pddl.codec import (
    ParseFailure,
    Step,
    Transition,
    format_completion,
    format_prompt,
    format_transition,
    format_verifier_input,
    parse_completion,
    parse_transition,
)
from plansuite.pddl.judge import StepVerdict, judge_step
from plansuite.pddl.simulator import TaskCache


def test_exact_paper_layout():
    text = format_transition(["(on b1 b2)", "(clear b1)"], ["(on-table b2)", "(arm-empty)"],
                             "(pickup b1)", ["(holding b1)"])
    assert text == ("GOAL:\n(clear b1)\n(on b1 b2)\nSTATE:\n(arm-empty)\n(on-table b2)\n"
                    "ACTION:\n(pickup b1)\nNEXT STATE:\n(holding b1)\nEND")
    assert text == format_prompt(["(on b1 b2)", "(clear b1)"], ["(on-table b2)", "(arm-empty)"]) + \
        format_completion("(pickup b1)", ["(holding b1)"])
    assert format_verifier_input(["(arm-empty)"], "(pickup b1)", ["(holding b1)"]) == (
        "STATE:\n(arm-empty)\nACTION:\n(pickup b1)\nNEXT STATE:\n(holding b1)")
    assert format_completion("(noop)", []) == "ACTION:\n(noop)\nNEXT STATE:\nEND"


def _simulated_transitions(domain, random_problem, n: int, name: str = "blocksworld"):
    rng = random.Random(3)
    cache = TaskCache(domain)
    out = []
    while len(out) < n:
        problem = random_problem(name, rng)
        task = cache.get(problem.objects, problem.init)
        walk = random_walk(task, task.encode_atoms(problem.init), rng, 10)
        goal = task.decode(walk.states[-1])
        for i, a in enumerate(walk.actions):
            out.append((task, goal, walk.states[i], task.actions[a], walk.states[i + 1]))
    return out


def test_round_trips_on_simulated_transitions(blocksworld, gripper, random_problem):
    for domain, name in ((blocksworld, "blocksworld"), (gripper, "gripper")):
        for task, goal, s, action, s2 in _simulated_transitions(domain, random_problem, 150, name):
            state, nxt = task.decode(s), task.decode(s2)
            completion = format_completion(action, nxt)
            assert parse_completion(completion) == Step(action, tuple(nxt))
            text = format_prompt(goal, state) + completion
            assert parse_transition(text) == Transition(tuple(goal), tuple(state), action, tuple(nxt))
            # The decoded claim is judged OK against the simulator, and re-encodes to the state.
            verdict, true_next = judge_step(task, s, parse_completion(completion))
            assert verdict is StepVerdict.OK and true_next == s2
            assert task.encode(parse_completion(completion).next_state) == s2


def test_decoder_tolerates_layout_noise_but_not_content_errors():
    clean = parse_completion("ACTION:\n(pickup b1)\nNEXT STATE:\n(holding b1)\nEND")
    noisy = parse_completion("\n  ACTION:  \r\n( PICKUP   b1 )\n\nNEXT STATE:\n(holding b1)\n"
                             "(holding b1)\nEND\nGOAL:\ntrailing text after END")
    assert noisy == clean
    cases = {
        "": "missing ACTION:",
        "ACTION:": "missing action",
        "ACTION:\n(pickup b1)": "missing NEXT STATE:",
        "ACTION:\npickup b1\nNEXT STATE:\nEND": "malformed action 'pickup b1'",
        "ACTION:\n(pickup b1)\nNEXT STATE:\n(holding b1)": "truncated: no END",
        "ACTION:\n(pickup b1)\nNEXT STATE:\n(holding (b1))\nEND": "malformed atom '(holding (b1))'",
        "ACTION:\n(pickup b1)\nNEXT STATE:\nSTATE:\nEND": "malformed atom 'STATE:'",
    }
    for text, reason in cases.items():
        result = parse_completion(text)
        assert isinstance(result, ParseFailure) and result.reason == reason, (text, result)
        assert not result and result.text == text


def test_judge_verdicts(blocksworld):
    cache = TaskCache(blocksworld)
    init = {("on-table", "b1"), ("clear", "b1"), ("arm-empty",)}
    task = cache.get({"b1": "object"}, init)
    s = task.encode_atoms(init)
    judge = lambda text: judge_step(task, s, parse_completion(text))[0]  # noqa: E731
    assert judge("ACTION:\n(pickup b1)\nNEXT STATE:\n(holding b1)\nEND") is StepVerdict.OK
    assert judge("ACTION:\n(pickup b1)\nNEXT STATE:\n(holding b2)\nEND") is StepVerdict.BAD_NEXT_STATE
    assert judge("ACTION:\n(pickup b2)\nNEXT STATE:\n(holding b2)\nEND") is StepVerdict.BAD_ACTION
    assert judge("ACTION:\n(stack b1 b1)\nNEXT STATE:\nEND") is StepVerdict.BAD_ACTION
    assert judge("NEXT STATE:\nEND") is StepVerdict.UNPARSEABLE
    assert all(v.is_bad_transition for v in StepVerdict if v is not StepVerdict.OK)


# ---- property-based: garbage in, ParseFailure out, never an exception -------------------------
TOKENS = ["ACTION:", "NEXT STATE:", "STATE:", "GOAL:", "END", "(pickup b1)", "(on b1 b2)",
          "(holding b1)", "(", ")", "((", "b1", " ", "\n", "\r\n", "\t", "\x00", "é", ";", "?x",
          "(on b1", "ACTION", "NEXT", "( )", "()"]


@st.composite
def token_soup(draw) -> str:
    return "".join(draw(st.lists(st.sampled_from(TOKENS), max_size=40)))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=300), token_soup(), st.binary(max_size=200).map(
    lambda b: b.decode("latin-1"))))
def test_decoders_never_raise_on_garbage(text):
    for decode in (parse_completion, parse_transition):
        result = decode(text)
        assert isinstance(result, (Step, Transition, ParseFailure))
        if isinstance(result, ParseFailure):
            assert isinstance(result.reason, str) and result.reason and not result
        else:  # anything accepted is canonical: lower-case sorted unique atoms
            states = [result.next_state] if isinstance(result, Step) else [
                result.goal, result.state, result.next_state]
            for atoms in states:
                assert list(atoms) == sorted(set(atoms))
                assert all(a.startswith("(") and a.endswith(")") and a == a.lower() for a in atoms)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=10_000), st.data())
def test_truncated_and_mutated_completions_never_raise(seed, data):
    rng = random.Random(seed)
    atoms = [f"(on b{rng.randint(1, 9)} b{rng.randint(1, 9)})" for _ in range(rng.randint(0, 6))]
    text = format_completion(f"(stack b{rng.randint(1, 9)} b{rng.randint(1, 9)})", atoms)
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    insert = data.draw(st.text(max_size=5))
    mutated = text[:cut] + insert + text[cut + data.draw(st.integers(0, 3)):]
    result = parse_completion(mutated)
    assert isinstance(result, (Step, ParseFailure))
    if cut == len(text) and not insert.strip():
        assert isinstance(result, Step)


def test_non_text_input_is_a_failure():
    assert parse_completion(None).reason == "not text"  # type: ignore[arg-type]
    assert parse_transition(b"ACTION:").reason == "not text"  # type: ignore[arg-type]
