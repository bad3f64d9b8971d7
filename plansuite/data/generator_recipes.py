"""Generator recipes: which (prompt, completion) transitions the generator trains on.

``conf/model/generator.yaml``'s ``model.finetune`` chooses the recipe:

- the dataset's own training transitions (the default; :func:`plansuite.data.load.load_transitions`);
- finetuning (expert iteration, :mod:`plansuite.skills`): start from an export and train on
  :func:`mix_examples` of the dataset's transitions and ``extra`` ones (a JSONL file of
  ``{"prompt": ..., "completion": ...}`` lines, e.g. the transitions of verified plans), in a
  fixed proportion (:func:`finetune_split`);
- relabelling (``model.finetune.dagger``, DAgger-style expert correction): the ``init_from``
  generator is rolled out on the true states from the training walks' starts
  (:func:`plansuite.models.sampling.dagger_pairs`), and every state it reaches off the walk's
  path is planned to the walk's goal by the dataset's shortest-path planner
  (:func:`expert_transitions`); those plans' transitions are extra examples. A generator trained
  on paths only never sees the states its own mistakes lead to, and loops there.

Validation is always the dataset's val split. New training-data recipes for the generator belong
here; the DataModule (:class:`plansuite.models.datamodules.GeneratorDataModule`) only tokenizes.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from plansuite.errors import ConfigError
from plansuite.pddl.codec import format_completion, format_prompt

T = TypeVar("T")


def _passes(items: Sequence[T], n: int, rng: random.Random) -> list[T]:
    """``n`` items in shuffled full passes over ``items`` (each used equally often, +-1)."""
    out: list[T] = []
    while len(out) < n:
        order = list(items)
        rng.shuffle(order)
        out.extend(order[:n - len(out)])
    return out


def mix_examples(original: Sequence[T], extra: Sequence[T], original_fraction: float,
                 size: int | None = None, seed: int = 0) -> list[T]:
    """A shuffled training split of ``size`` examples, ``original_fraction`` of them from
    ``original`` and the rest from ``extra``; each side is drawn in shuffled passes, so no
    example repeats before all of its side were used. ``size=None``: every extra example once.

    >>> mixed = mix_examples(list("abcdefgh"), ["X", "Y"], 0.5, size=8)
    >>> len(mixed), mixed.count("X"), mixed.count("Y"), len(set(mixed) - {"X", "Y"})
    (8, 2, 2, 4)
    >>> len(mix_examples(list("abcdefgh"), ["X", "Y"], 0.75))  # each extra once: 2 / (1 - 0.75)
    8
    """
    if not 0.0 <= original_fraction <= 1.0:
        raise ConfigError(f"model.finetune.original_fraction={original_fraction}: must be in [0, 1]")
    if size is None:
        if original_fraction == 1.0:
            raise ConfigError("model.finetune.examples: required when original_fraction is 1")
        size = round(len(extra) / (1.0 - original_fraction))
    n_original = round(size * original_fraction)
    if n_original and not original:
        raise ConfigError("model.finetune: no original training examples to mix in")
    if size - n_original and not extra:
        raise ConfigError("model.finetune.extra: no extra examples to mix in")
    rng = random.Random(seed)
    mixed = _passes(original, n_original, rng) + _passes(extra, size - n_original, rng)
    rng.shuffle(mixed)
    return mixed


def load_extra_transitions(path: str | Path) -> list[tuple[str, str]]:
    """(prompt, completion) pairs from a JSONL file of ``{"prompt", "completion"}`` objects."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: extra transitions file not found")
    pairs = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        try:
            row = json.loads(line)
            pairs.append((str(row["prompt"]), str(row["completion"])))
        except (json.JSONDecodeError, KeyError, TypeError):
            raise ConfigError(f"{path}:{n}: not a {{\"prompt\", \"completion\"}} JSON object") from None
    return pairs


@dataclass
class DaggerConfig:
    """DAgger-style relabelling of the ``init_from`` generator's rollouts (``model.finetune.dagger``)."""

    rollouts: int = 0  # rollouts per training walk (0: off)
    walks: int | None = None  # training walks rolled out, a seeded sample (None: all)
    max_steps: int = 20  # steps per rollout; an inapplicable or unparseable step ends it
    temperature: float = 1.0  # sampling temperature of the rollouts (top-p 0.99)

    def check(self) -> None:
        if self.rollouts < 0 or self.max_steps < 1 or self.temperature < 0 \
                or (self.walks is not None and self.walks < 1):
            raise ConfigError(f"model.finetune.dagger={self}: needs rollouts >= 0, walks >= 1 "
                              "(or null), max_steps >= 1 and temperature >= 0")


def expert_transitions(planner, tasks, walks: Sequence[dict], goals: Sequence[int],
                       visited: Sequence[set[int]]) -> list[tuple[str, str]]:
    """(prompt, completion) pairs of the expert's plans from every ``visited`` state (bit sets of
    each walk's task) that is off the walk's own path to the walk's goal (any state holding its
    atoms); ``planner.plan(task, start, goal, exact=False)`` is the expert
    (:class:`plansuite.data.shortest.ShortestPaths`). A (state, goal, objects) seen once is written
    once; states are visited in sorted order, so the output is deterministic."""
    seen, pairs = set(), []
    for task, goal, walk, states in zip(tasks, goals, walks, visited, strict=True):
        names = tuple(sorted(walk["objects"]))
        on_path = {task.encode(s) for s in walk["states"]}
        for start in sorted(states - on_path):
            path = planner.plan(task, start, goal, exact=False)
            if path is None:
                continue
            for action, before, after in zip(path.actions, path.states[:-1], path.states[1:],
                                             strict=True):
                if (before, goal, names) not in seen:
                    seen.add((before, goal, names))
                    pairs.append((format_prompt(walk["goal"], task.decode(before)),
                                  format_completion(task.actions[action], task.decode(after))))
    return pairs


@dataclass
class FinetuneConfig:
    """Start from an export and mix extra transitions into the training split (``model.finetune``)."""

    init_from: str | None = None  # generator export whose weights and tokenizer to start from
    extra: str | None = None  # JSONL of {"prompt", "completion"}: mixed into the training split
    original_fraction: float = 0.5  # share of the dataset's own training transitions in the mix
    examples: int | None = None  # size of the mixed training split (None: every extra one once)
    dagger: DaggerConfig = field(default_factory=DaggerConfig)  # more extra examples: the
    #                            init_from generator's rollouts, relabelled by a planner


def finetune_split(original: Sequence[T], extra: Sequence[T], finetune: FinetuneConfig,
                   seed: int = 0) -> tuple[list[T], dict[str, int]]:
    """The finetuning training split and its counts (examples, original, extra, extra_distinct).

    >>> split, counts = finetune_split(list("abcd"), ["X"], FinetuneConfig(examples=4), seed=1)
    >>> sorted(split).count("X"), counts
    (2, {'examples': 4, 'original': 2, 'extra': 2, 'extra_distinct': 1})
    """
    tagged = mix_examples([(0, e) for e in original], [(1, e) for e in extra],
                          finetune.original_fraction, finetune.examples, seed)
    n_extra = sum(side for side, _ in tagged)
    counts = {"examples": len(tagged), "original": len(tagged) - n_extra, "extra": n_extra,
              "extra_distinct": len(extra)}
    return [e for _, e in tagged], counts
