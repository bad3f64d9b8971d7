"""Verifier recipes: which steps a verifier trains on, how they are labelled, and the text it reads.

Everything that decides what a verifier learns lives here (``conf/model/verifier.yaml``'s
``model.recipe`` names one of :data:`RECIPES`; ``model.onpolicy`` is :class:`OnPolicyConfig`):

Negatives, made once when the dataset is built (:func:`verifier_rows`, run by
:mod:`plansuite.data.builder` for every walk, written to ``<split>/verifier.jsonl``)
    ``positive`` the walk's own action; ``random`` uniform over the ground actions on the
    state's objects except the positive (the paper's: labelled 0 even when it happens to be
    applicable, ``applicable`` keeps the simulator's truth); ``hard`` uniform over the
    inapplicable actions of the positive's schema (:func:`hard_negative`).
Recipes (:func:`dataset_examples`, :func:`training_items`)
    ``random`` positives + random negatives, the paper's noisy labels; ``relabel`` the same
    steps labelled by the simulator; ``hard`` positives + hard negatives; ``onpolicy`` the
    ``base_recipe`` examples (at most ``base_examples``) plus a generator's own sampled steps
    labelled by the simulator (:func:`judged_items`; the sampling itself is the DataModule's).
Validation sets (:func:`validation_sets`, in loader order :func:`val_set_names`)
    ``random`` (relabelled), ``hard`` and, with a generator export, ``onpolicy``.
Input text (:func:`verifier_input`)
    ``state_action``: the state and the action; ``state_action_next``: also the claimed next
    state (only the on-policy recipe has claims to learn from); ``state_action_diff``: the same
    claim written as the atoms it adds and deletes (:func:`~plansuite.pddl.codec.format_verifier_diff_input`),
    which makes checking a step local (preconditions in the state, effects in the diff).
    Training items, the inference scorer and the planner's verifier adapter all build the text
    here; :data:`EXTRA_TOKENS` names the markers a kind adds to the tokenizer.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from plansuite.data.judged import JudgedStep
from plansuite.data.load import load_trajectories, split_file
from plansuite.errors import ConfigError
from plansuite.jsonl import iter_jsonl
from plansuite.pddl.codec import DIFF_MARKERS, format_verifier_diff_input, format_verifier_input
from plansuite.pddl.judge import StepVerdict
from plansuite.pddl.model import parse_atom_text
from plansuite.pddl.simulator import GroundTask, TaskCache, bits

DATASET_RECIPES = ("random", "relabel", "hard")  # read from the dataset's verifier.jsonl
RECIPES = (*DATASET_RECIPES, "onpolicy")
INPUT_KINDS = ("state_action", "state_action_next", "state_action_diff")
EXTRA_TOKENS = {"state_action_diff": DIFF_MARKERS}  # markers the kind adds to a tokenizer


# ---- settings and the text a verifier reads -------------------------------------------------
@dataclass
class OnPolicyConfig:
    """``model.onpolicy``: how the ``onpolicy`` recipe samples the generator and mixes the samples."""

    prompts: int | None = 2000  # training transitions to sample on (None: all)
    samples_per_prompt: int = 2
    val_prompts: int | None = None  # validation transitions for the on-policy val set
    val_samples_per_prompt: int = 2
    temperature: float = 1.0
    top_p: float = 0.99
    base_recipe: str = "relabel"  # dataset examples mixed with the generator's samples
    base_examples: int | None = None  # at most this many of them (None: all), drawn by seed


def verifier_input(input_kind: str, state: Iterable[str], action: str,
                   next_state: Iterable[str] | None = None) -> str:
    """The text a verifier of ``input_kind`` scores for a step.

    >>> print(verifier_input("state_action", ["(arm-empty)"], "(pickup b1)", ["(holding b1)"]))
    STATE:
    (arm-empty)
    ACTION:
    (pickup b1)
    """
    if input_kind not in INPUT_KINDS:
        raise ConfigError(f"verifier input kind '{input_kind}': unknown (choose from "
                          f"{', '.join(INPUT_KINDS)})")
    if input_kind == "state_action":
        return format_verifier_input(state, action)
    if next_state is None:
        raise ConfigError("this verifier reads (state, action, next state): next_state is required")
    if input_kind == "state_action_diff":
        return format_verifier_diff_input(state, action, next_state)
    return format_verifier_input(state, action, next_state)


def check_recipe(recipe: str, input_kind: str, generator_dir: str | None,
                 base_recipe: str = "relabel") -> None:
    """One-line errors for a recipe that cannot be made with these settings."""
    if recipe not in RECIPES:
        raise ConfigError(f"model.recipe '{recipe}': unknown (choose from {', '.join(RECIPES)})")
    if input_kind not in INPUT_KINDS:
        raise ConfigError(f"model.input_kind '{input_kind}': unknown (choose from "
                          f"{', '.join(INPUT_KINDS)})")
    if recipe == "onpolicy" and not generator_dir:
        raise ConfigError("model.recipe=onpolicy samples a trained generator: set "
                          "model.generator_dir to a generator export")
    if input_kind != "state_action" and recipe != "onpolicy":
        raise ConfigError(f"model.input_kind={input_kind} needs model.recipe=onpolicy "
                          "(claimed next states come from the generator)")
    if base_recipe not in DATASET_RECIPES:
        raise ConfigError(f"model.onpolicy.base_recipe '{base_recipe}': unknown "
                          f"(choose from {', '.join(DATASET_RECIPES)})")


# ---- negatives, made while the dataset is built ------------------------------------------------
def verifier_rows(task: GroundTask, walk, rng: random.Random, stats: Counter) -> list[str]:
    """The verifier examples of one walk, as JSON lines without their ``traj`` field."""
    rows = []
    n_actions = len(task.actions)
    for step, (state, pos) in enumerate(zip(walk.states, walk.actions, strict=False)):
        rows.append(_verifier_line(step, task.actions[pos], "positive", 1, True))
        if n_actions > 1:
            neg = rng.randrange(n_actions - 1)
            neg += neg >= pos  # uniform over every ground action except the positive one
            applicable = task.is_applicable(state, neg)
            stats["random_negatives"] += 1
            stats["random_negatives_applicable"] += applicable
            rows.append(_verifier_line(step, task.actions[neg], "random", 0, applicable))
        hard = hard_negative(task, state, pos, rng)
        if hard is not None:
            stats["hard_negatives"] += 1
            rows.append(_verifier_line(step, task.actions[hard], "hard", 0, False))
    return rows


def _verifier_line(step: int, action: str, kind: str, label: int, applicable: bool) -> str:
    """One compact, key-sorted JSON row, written out by hand: ~2 million per paper-scale build.

    >>> line = _verifier_line(3, "(pickup b1)", "random", 0, True)
    >>> line == json.dumps({"step": 3, "action": "(pickup b1)", "kind": "random", "label": 0,
    ...                     "applicable": True}, separators=(",", ":"), sort_keys=True)
    True
    """
    return (f'{{"action":{json.dumps(action)},"applicable":{"true" if applicable else "false"},'
            f'"kind":"{kind}","label":{label},"step":{step}}}')


def hard_negative(task: GroundTask, state: int, pos: int, rng: random.Random) -> int | None:
    """Uniform among the inapplicable actions of ``pos``'s schema (``None`` if there is none).

    Rejection sampling first (most same-schema actions are inapplicable), the full list only when
    that keeps failing: both give the same uniform distribution.
    """
    same = _same_schema(task, task.actions[pos].split()[0])
    for _ in range(16):
        a = same[rng.randrange(len(same))]
        if a != pos and not task.is_applicable(state, a):
            return a
    options = [a for a in same if a != pos and not task.is_applicable(state, a)]
    return rng.choice(options) if options else None


def _same_schema(task: GroundTask, schema: str) -> list[int]:
    cache = task.__dict__.setdefault("_by_schema", {})
    if schema not in cache:
        cache[schema] = [i for i, a in enumerate(task.actions) if a.split()[0] == schema]
    return cache[schema]


# ---- recipes over a built dataset -------------------------------------------------------------
@dataclass(frozen=True)
class VerifierExample:
    traj: int
    step: int
    objects: dict[str, str]
    goal: tuple[str, ...]
    state: tuple[str, ...]
    action: str
    label: int  # the training label under the chosen recipe
    applicable: bool  # the simulator's truth
    kind: str  # positive | random | hard


def dataset_examples(data_dir: str | Path, split: str, recipe: str = "random",
                     limit: int | None = None) -> list[VerifierExample]:
    """Positives plus the recipe's negatives from ``<split>/verifier.jsonl`` (module docstring)."""
    if recipe not in DATASET_RECIPES:
        raise ConfigError(f"verifier recipe '{recipe}': unknown (choose from "
                          f"{', '.join(DATASET_RECIPES)}, or onpolicy in training)")
    trajs = {t["id"]: t for t in load_trajectories(data_dir, split)}
    want = {"random": "random", "relabel": "random", "hard": "hard"}[recipe]
    out: list[VerifierExample] = []
    for row in iter_jsonl(split_file(data_dir, split, "verifier.jsonl")):
        if row["kind"] not in ("positive", want):
            continue
        traj = trajs[row["traj"]]
        label = int(row["applicable"]) if recipe == "relabel" else row["label"]
        out.append(VerifierExample(row["traj"], row["step"], traj["objects"], tuple(traj["goal"]),
                                   tuple(traj["states"][row["step"]]), row["action"], label,
                                   row["applicable"], row["kind"]))
        if limit is not None and len(out) >= limit:
            break
    return out


@dataclass(frozen=True)
class VerifierItem:
    text: str  # what the verifier reads
    label: int  # training label under the recipe
    truth: int  # the simulator's verdict: 1 = a valid step


def dataset_items(data_dir: str | Path, split: str, recipe: str, input_kind: str,
                  tasks: TaskCache) -> list[VerifierItem]:
    """The dataset's verifier examples as texts, labelled by the simulator's truth under a kind
    that reads a claimed next state (see :func:`claimed_items`)."""
    examples = dataset_examples(data_dir, split, recipe)
    if input_kind == "state_action":
        return [VerifierItem(verifier_input(input_kind, e.state, e.action), e.label,
                             int(e.applicable)) for e in examples]
    return [item for e in examples for item in claimed_items(e, input_kind, tasks)]


def claimed_items(e: VerifierExample, input_kind: str, tasks: TaskCache) -> list[VerifierItem]:
    """A dataset example with claimed next states, for the kinds that read one.

    Each action claims its own effects, applied whether or not it is applicable -- what a
    generator that picked it would write -- so the label is the action's applicability. The walk's
    own action also comes with a claim one atom off (:func:`corrupt_claim`): the generator's other
    kind of mistake, a right action with a wrong next state.
    """
    task = tasks.get(e.objects, [parse_atom_text(a) for a in e.state])
    state, action = task.encode(e.state), task.action_id(e.action)
    claim = task.apply(state, action)
    truth = int(task.is_applicable(state, action))
    items = [VerifierItem(verifier_input(input_kind, e.state, e.action, task.decode(claim)),
                          truth, truth)]
    if e.kind == "positive":
        wrong = corrupt_claim(task, state, action, random.Random(e.traj * 1009 + e.step))
        items.append(VerifierItem(verifier_input(input_kind, e.state, e.action, task.decode(wrong)),
                                  0, 0))
    return items


def corrupt_claim(task: GroundTask, state: int, action: int, rng: random.Random) -> int:
    """The true next state with one atom wrong: an effect missed (an added atom left out or a
    deleted one kept) or the frame broken (an untouched atom dropped, a stray atom added).

    >>> from plansuite.domains import load_builtin
    >>> from plansuite.pddl.simulator import TaskCache
    >>> task = TaskCache(load_builtin("blocksworld")).get({"a": "object", "b": "object"})
    >>> s = task.encode(["(arm-empty)", "(clear a)", "(on-table a)", "(clear b)", "(on-table b)"])
    >>> pickup = task.action_id("(pickup a)")
    >>> true = task.apply(s, pickup)
    >>> wrong = [corrupt_claim(task, s, pickup, random.Random(i)) for i in range(20)]
    >>> all(w != true and bin(w ^ true).count("1") == 1 for w in wrong)
    True
    """
    true = task.apply(state, action)
    effects = task.add[action] | (task.delete[action] & state)
    untouched = true & ~effects
    absent = ~true & ((1 << len(task.atoms)) - 1)
    options = [m for m in (effects, untouched, absent) if m]
    flip = rng.choice(bits(rng.choice(options)))
    return true ^ (1 << flip)


def judged_items(judged: Sequence[JudgedStep], input_kind: str) -> list[VerifierItem]:
    """Sampled generator steps as verifier examples labelled by the simulator (unparseable
    samples have nothing to score and are skipped; repeats of a step in one state count once)."""
    out, seen = [], set()
    for j in judged:
        if j.step is None:
            continue
        text = verifier_input(input_kind, j.record.state, j.step.action, j.step.next_state)
        if input_kind == "state_action":
            truth = int(j.verdict is not StepVerdict.BAD_ACTION)
        else:
            truth = int(j.verdict is StepVerdict.OK)
        if text not in seen:
            seen.add(text)
            out.append(VerifierItem(text, truth, truth))
    return out


def training_items(data_dir: str | Path, recipe: str, input_kind: str, tasks: TaskCache,
                   onpolicy: Sequence[VerifierItem] = (), base_recipe: str = "relabel",
                   base_examples: int | None = None, seed: int = 0) -> list[VerifierItem]:
    """The recipe's training split; ``onpolicy``: the generator's judged samples (that recipe)."""
    if recipe != "onpolicy":
        return dataset_items(data_dir, "train", recipe, input_kind, tasks)
    train = dataset_items(data_dir, "train", base_recipe, input_kind, tasks)
    if base_examples is not None and base_examples < len(train):
        train = random.Random(seed).sample(train, base_examples)  # the samples stay a large share
    return train + list(onpolicy)


def val_set_names(generator_dir: str | None) -> list[str]:
    """The verifier's validation sets, in loader order."""
    return ["random", "hard"] + (["onpolicy"] if generator_dir else [])


def validation_sets(data_dir: str | Path, input_kind: str, tasks: TaskCache,
                    onpolicy: Sequence[VerifierItem] | None = None) -> dict[str, list[VerifierItem]]:
    """Validation sets by name (labels are the simulator's truth in all of them)."""
    sets = {"random": dataset_items(data_dir, "val", "relabel", input_kind, tasks),
            "hard": dataset_items(data_dir, "val", "hard", input_kind, tasks)}
    if onpolicy is not None:
        sets["onpolicy"] = list(onpolicy)
    return sets
