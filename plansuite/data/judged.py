"""Generated steps judged by the simulator: the torch-free half of sampling the generator.

A :class:`JudgedStep` is one completion proposed at a dataset transition, decoded and judged
against the transition's state. The generator's validation, the verifier's ``onpolicy`` recipe
(:func:`plansuite.data.verifier_recipes.judged_items`) and the training report read them; the
sampling itself (a model's ``generate``) is :func:`plansuite.models.sampling.sample_and_judge`.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

from plansuite.data.load import TransitionRecord
from plansuite.pddl.codec import Step, parse_completion
from plansuite.pddl.judge import StepVerdict, judge_step
from plansuite.pddl.model import parse_atom_text
from plansuite.pddl.simulator import TaskCache


@dataclass(frozen=True)
class JudgedStep:
    record: TransitionRecord  # where the step was proposed (its state and goal)
    text: str  # the generated completion
    step: Step | None  # decoded, or None when unparseable
    verdict: StepVerdict


def judge_texts(tasks: TaskCache, records: list[TransitionRecord], texts: list[str]) -> list[JudgedStep]:
    """Decode and judge one completion per record against the record's state."""
    out = []
    for record, text in zip(records, texts, strict=True):
        task = tasks.get(record.objects, [parse_atom_text(a) for a in record.state])
        parsed = parse_completion(text)
        verdict, _ = judge_step(task, task.encode(record.state), parsed)
        out.append(JudgedStep(record, text, parsed if isinstance(parsed, Step) else None, verdict))
    return out


def step_rates(judged: list[JudgedStep]) -> dict[str, float]:
    """Fractions of parseable steps, applicable actions and exactly right next states.

    >>> from plansuite.pddl.judge import StepVerdict as V
    >>> fake = [JudgedStep(None, "", None, v) for v in (V.OK, V.OK, V.BAD_NEXT_STATE, V.UNPARSEABLE)]
    >>> step_rates(fake)
    {'parseable': 0.75, 'action_valid': 0.75, 'next_state_exact': 0.5, 'n': 4}
    """
    counts = Counter(j.verdict for j in judged)
    n = max(1, len(judged))
    return {"parseable": 1 - counts[StepVerdict.UNPARSEABLE] / n,
            "action_valid": (counts[StepVerdict.OK] + counts[StepVerdict.BAD_NEXT_STATE]) / n,
            "next_state_exact": counts[StepVerdict.OK] / n, "n": len(judged)}


def pick_records(records: list[TransitionRecord], n: int | None, seed: int) -> list[TransitionRecord]:
    """A seeded subset of ``n`` records (all of them when ``n`` is None or too large).

    >>> pick_records([1, 2, 3], None, 0), len(pick_records(list(range(10)), 4, 0))
    ([1, 2, 3], 4)
    """
    if n is None or n >= len(records):
        return list(records)
    return random.Random(seed).sample(records, n)
