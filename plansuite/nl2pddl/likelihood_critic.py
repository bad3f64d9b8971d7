"""A critic read off the problem generator itself (``critic=likelihood``).

The generator was trained to write, token by token, the problem a description states. Reading a
candidate problem under it (teacher forcing, prompt = the description) gives every token's
probability; a fact the description does not support -- a wrong block under ``on``, a missing
object, a goal fact too many or too few -- is a token the generator finds unlikely. The critic
rejects a candidate whose least likely token has probability below ``threshold`` and says where
that token is: its section gives the mismatch kind (``object``, ``init``, ``goal``) and the
message quotes the atom (or object) around it, so a repair knows what to rewrite.

Unlike the classifier critic (``critic=learned``, :class:`plansuite.nl2pddl.learned.LearnedCritic`)
it needs no training of its own: only a threshold, chosen on the held-out corruptions of a
dataset's ``val`` split (``calibrate_on=DATA_DIR``, the default with ``data_dir`` set) to
maximise balanced detection (the mean of the match acceptance rate and the mismatch rejection
rate, so the three corrupted kinds per match do not push it to reject everything). It judges
the generator's own candidates by what the generator believes; ground truth stays with the
references (structural and semantic equivalence), never with this score.

>>> least_likely_span("(:init (on a b) (clear a))", 12)
'(on a b)'
>>> least_likely_span("(:objects a b c)", 13)
'b'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch

from plansuite.errors import ConfigError
from plansuite.models.export import load_export
from plansuite.models.tokenizer import decode, encode, pad_ids
from plansuite.nl2pddl.critic import CriticVerdict, verdict_label
from plansuite.nl2pddl.dataset import END, generation_prompt
from plansuite.nl2pddl.generators import section_starts

SECTION_KIND = {"objects": "object", "init": "init", "goal": "goal"}


@dataclass(frozen=True)
class TokenDoubt:
    """The least likely token of a candidate: its probability and character offset."""

    probability: float
    offset: int  # in the problem text (len(text) for the END marker after it)


def least_likely_span(text: str, offset: int) -> str:
    """The atom ``( ... )`` around ``offset``, or the word there when it is not inside one."""
    start = text.rfind("(", 0, offset + 1)
    end = text.find(")", offset)
    inner = text[start + 1:end] if start >= 0 and end >= 0 else ""
    if start >= 0 and end >= 0 and "(" not in inner and not inner.lstrip().startswith(":"):
        return text[start:end + 1]
    left = offset
    while left > 0 and not text[left - 1].isspace() and text[left - 1] not in "()":
        left -= 1
    right = offset
    while right < len(text) and not text[right].isspace() and text[right] not in "()":
        right += 1
    return text[left:right] or text[max(0, offset - 10):offset + 10]


def best_threshold(match_scores: list[float], mismatch_scores: list[float]) -> float:
    """The threshold that maximises balanced detection (accept iff score >= threshold).

    >>> best_threshold([0.9, 0.8, 0.7], [0.1, 0.75, 0.05])
    0.7
    """
    if not match_scores or not mismatch_scores:
        raise ConfigError("critic calibration needs match and mismatch examples")
    best, best_rate = 0.0, -1.0
    for t in sorted(set(match_scores) | set(mismatch_scores)):
        rate = (sum(s >= t for s in match_scores) / len(match_scores)
                + sum(s < t for s in mismatch_scores) / len(mismatch_scores)) / 2
        if rate > best_rate:
            best, best_rate = t, rate
    return best


class LikelihoodCritic:
    """A ``problem_generator`` export as a critic (see the module docstring)."""

    labels = ("match", "object", "init", "goal")

    def __init__(self, export: str | Path, device: str = "cpu", threshold: float | None = None,
                 calibrate_on: str | Path | None = None, calibrate_split: str = "val",
                 batch_size: int = 16):
        if not export:
            raise ConfigError("critic=likelihood: critic.export (a problem_generator export) is required")
        self.model, self.tokenizer, self.meta = load_export(export, "problem_generator", device)
        self.model.eval()
        self.batch_size = batch_size
        self.context = self.model.config.n_positions
        self.threshold = threshold
        if threshold is None:
            if not calibrate_on:
                raise ConfigError("critic=likelihood: set critic.threshold or critic.calibrate_on "
                                  "(a task=data folder whose val critic examples pick it)")
            self.threshold = self.calibrate(calibrate_on, calibrate_split)
        if not 0 < self.threshold <= 1:
            raise ConfigError(f"critic.threshold={self.threshold}: must be in (0, 1]")

    def calibrate(self, data_dir: str | Path, split: str = "val") -> float:
        """The balanced-detection threshold on ``data_dir``'s ``split`` critic examples."""
        from plansuite.nl2pddl.dataset import load_critic_examples

        examples = load_critic_examples(data_dir, split)
        if not examples:
            raise ConfigError(f"{data_dir}/critic/{split}.jsonl: no critic examples to calibrate on")
        doubts = self.doubts([e.description for e in examples], [e.problem for e in examples])
        match = [d.probability for d, e in zip(doubts, examples, strict=True) if e.label == "match"]
        other = [d.probability for d, e in zip(doubts, examples, strict=True) if e.label != "match"]
        return best_threshold(match, other)

    @torch.no_grad()
    def token_logprobs(self, descriptions: list[str], problems: list[str]) -> list[tuple[list[float], list[int]]]:
        """Per problem: the log-probability of each token of ``problem + END`` given its
        description, and each token's character offset in the problem (inputs longer than the
        context keep their first tokens)."""
        prompts = encode(self.tokenizer, [generation_prompt(d) for d in descriptions])
        completions = encode(self.tokenizer, [p + END + "\n" for p in problems])
        rows = [((prompt + completion)[:self.context], len(prompt))
                for prompt, completion in zip(prompts, completions, strict=True)]
        out: list[tuple[list[float], list[int]]] = []
        for start in range(0, len(rows), self.batch_size):
            chunk = rows[start:start + self.batch_size]
            batch, mask = pad_ids([ids for ids, _ in chunk], self.tokenizer.pad_token_id)
            batch, mask = batch.to(self.model.device), mask.to(self.model.device)
            logprobs = torch.log_softmax(self.model(input_ids=batch, attention_mask=mask).logits.float(), -1)
            for row, (ids, n_prompt) in enumerate(chunk):
                targets = ids[n_prompt:]
                if not targets:
                    out.append(([], []))
                    continue
                picked = logprobs[row, n_prompt - 1:len(ids) - 1].gather(
                    1, torch.tensor(targets, device=batch.device)[:, None])[:, 0]
                lengths = [len(decode(self.tokenizer, [t])) for t in targets]
                offsets = [sum(lengths[:i]) for i in range(len(targets))]
                out.append((picked.tolist(), offsets))
        return out

    def doubts(self, descriptions: list[str], problems: list[str]) -> list[TokenDoubt]:
        """The least likely token of each problem (and of its ``END``) given its description."""
        out = []
        for scores, offsets in self.token_logprobs(descriptions, problems):
            if not scores:
                out.append(TokenDoubt(0.0, 0))  # nothing of the problem fits the context
                continue
            worst = min(range(len(scores)), key=scores.__getitem__)
            out.append(TokenDoubt(math.exp(scores[worst]), offsets[worst]))
        return out

    def _verdict(self, problem: str, doubt: TokenDoubt) -> CriticVerdict:
        if doubt.probability >= self.threshold:
            return CriticVerdict(True, None, round(doubt.probability, 6))
        offset = min(doubt.offset, len(problem))
        starts = section_starts(problem)
        before = [name for name, at in starts.items() if at <= offset]
        section = max(before, key=starts.__getitem__) if before else None
        kind = SECTION_KIND.get(section or "")
        quote, line = None, None
        if offset >= len(problem.rstrip()):
            where = "the end of the problem (something is missing)"
        else:
            quote = least_likely_span(problem, offset)
            line = problem.count("\n", 0, offset) + 1
            where = f"{quote!r} in :{section or 'problem'}"
        message = (f"the generator, reading the description, finds {where} unlikely "
                   f"(p = {doubt.probability:.2g} < {self.threshold:.2g})")
        return CriticVerdict(False, kind, round(doubt.probability, 6), message, quote, line)

    def judge(self, description: str, problem_text: str) -> CriticVerdict:
        [doubt] = self.doubts([description], [problem_text])
        return self._verdict(problem_text, doubt)

    def predict_examples(self, descriptions: list[str], problems: list[str]) -> list[str]:
        """The label each (description, problem) gets: ``match`` or the suspected kind."""
        doubts = self.doubts(descriptions, problems)
        return [verdict_label(self._verdict(p, d)) for p, d in zip(problems, doubts, strict=True)]
