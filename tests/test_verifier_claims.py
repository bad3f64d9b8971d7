"""Claimed next states for the verifier kinds that read one: labels are the simulator's truth."""

from __future__ import annotations

import random

from plansuite.data.verifier_recipes import corrupt_claim, dataset_examples, dataset_items
from plansuite.pddl.codec import format_verifier_diff_input
from plansuite.pddl.model import parse_atom_text
from plansuite.pddl.simulator import TaskCache


def test_diff_input_is_the_claimed_next_state_rewritten():
    state = ["(arm-empty)", "(clear a)", "(on b a)", "(on-table a)"]
    nxt = ["(clear a)", "(holding b)", "(on-table a)"]
    text = format_verifier_diff_input(state, "(unstack b a)", nxt)
    added = text.split("ADDED:\n")[1].split("\nDELETED:")[0].split("\n")
    deleted = text.split("DELETED:\n")[1].split("\n")
    assert set(added) == {"(holding b)"} and set(deleted) == {"(arm-empty)", "(on b a)"}
    assert (set(state) - set(deleted)) | set(added) == set(nxt)  # lossless


def test_claimed_items_are_labelled_by_the_simulator(tiny_dataset, blocksworld):
    tasks = TaskCache(blocksworld)
    examples = dataset_examples(tiny_dataset, "train", "hard")[:200]
    items = dataset_items(tiny_dataset, "train", "hard", "state_action_next", tasks)
    positives = sum(e.kind == "positive" for e in examples)
    assert len(items) >= len(examples) + positives  # every positive also has a corrupted claim
    for item in items[:300]:
        lines = item.text.split("\n")
        state = lines[1:lines.index("ACTION:")]
        action = lines[lines.index("ACTION:") + 1]
        claim = lines[lines.index("NEXT STATE:") + 1:]
        task = tasks.get({o: "object" for a in state + claim for o in parse_atom_text(a)[1:]},
                         [parse_atom_text(a) for a in state])
        truth = task.step(task.encode(state), action) == task.encode(claim)
        assert item.truth == item.label == int(truth), item.text
    assert {i.truth for i in items} == {0, 1}


def test_corrupt_claim_is_one_atom_off_in_every_way(blocksworld):
    task = TaskCache(blocksworld).get({"a": "object", "b": "object", "c": "object"})
    s = task.encode(["(arm-empty)", "(clear a)", "(on a b)", "(on b c)", "(on-table c)"])
    unstack = task.action_id("(unstack a b)")
    true = task.apply(s, unstack)
    seen = set()
    for seed in range(200):
        wrong = corrupt_claim(task, s, unstack, random.Random(seed))
        assert bin(wrong ^ true).count("1") == 1
        seen.add(wrong)
    assert len(seen) > 5


def test_renaming_a_verifier_text_keeps_its_truth(tiny_dataset, blocksworld):
    """Renaming is a symmetry: a renamed step is valid exactly when the original is."""
    from plansuite.data.augment import name_pool, rename_text_blocks

    tasks = TaskCache(blocksworld)
    items = dataset_items(tiny_dataset, "train", "hard", "state_action_diff", tasks)[:200]
    types = {f"b{i}": "object" for i in range(1, 9)}
    pool = name_pool(types)
    changed = 0
    for n, item in enumerate(items):
        text = rename_text_blocks(item.text, types, pool, random.Random(n))
        changed += text != item.text
        assert _diff_truth(text, tasks) == _diff_truth(item.text, tasks) == item.truth
        for block in _blocks(text):
            assert block == sorted(block)  # the text format's sorted atoms
    assert changed > len(items) / 2


def _blocks(text: str) -> list[list[str]]:
    out: list[list[str]] = []
    for line in text.split("\n"):
        if line.startswith("("):
            out[-1].append(line)
        else:
            out.append([])
    return out


def _diff_truth(text: str, tasks: TaskCache) -> int:
    lines = text.split("\n")
    state = lines[1:lines.index("ACTION:")]
    action = lines[lines.index("ACTION:") + 1]
    added = lines[lines.index("ADDED:") + 1:lines.index("DELETED:")]
    deleted = lines[lines.index("DELETED:") + 1:]
    objects = {o: "object" for a in state + added for o in parse_atom_text(a)[1:]}
    task = tasks.get(objects, [parse_atom_text(a) for a in state])
    claim = (set(state) - set(deleted)) | set(added)
    return int(task.step(task.encode(state), action) == task.encode(claim))
