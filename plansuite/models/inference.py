"""Inference API over exports, for the planning loops and evaluation.

Generator::

    policy = GeneratorPolicy.from_export("O/export", device="cpu")
    outs = policy.generate([format_prompt(goal, state), ...], temperature=1.0, top_p=0.99,
                           max_new_tokens=None, seed=0)
    outs[0].text      # "ACTION:\\n(pickup b1)\\nNEXT STATE:\\n...\\nEND" -> codec.parse_completion
    outs[0].n_tokens  # new tokens generated for that row (including the stop token)

Rows are generated together with a KV cache (left padding, attention mask and explicit position
ids) and each row stops at ``END`` (or the end-of-sequence token). ``temperature == 0`` is greedy;
otherwise nucleus sampling (``top_p``, no top-k). ``seed`` is one int for the whole call, or
one int per prompt: then each row draws its uniforms from its own ``random.Random(seed)``, so a
row's text does not depend on which other rows share its batch (the planning engine relies on
this to match its sequential reference). Either way the global RNG is untouched. ``max_new_tokens=None`` uses the export's ``max_new_tokens`` (twice the longest
training completion), clipped to the model's context. ``exclude_actions`` (one list of action
texts per prompt) forbids those actions as a row's ``ACTION:`` (:class:`ActionExclusion`).

Verifier::

    scorer = VerifierScorer.from_export("V/export", device="cpu")
    text = scorer.input_text(state_atoms, action, next_state_atoms)  # via verifier_recipes.verifier_input
    probs = scorer.score([text, ...])      # P(step is valid), batched
    accept = probs[0] >= scorer.threshold  # threshold calibrated on validation data
    scorer.input_kind                      # "state_action", "state_action_next" or "state_action_diff"

Both ``from_export`` raise :class:`plansuite.errors.ConfigError` (a PlansuiteError) with one line
for a missing, foreign or incompatible export.
"""

from __future__ import annotations

import inspect
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import torch
from transformers import GPT2LMHeadModel, PreTrainedModel, PreTrainedTokenizerBase

from plansuite.data.verifier_recipes import INPUT_KINDS, verifier_input
from plansuite.errors import ConfigError
from plansuite.models.backbone import context_length
from plansuite.models.export import load_export
from plansuite.models.tokenizer import decode, encode, pad_ids, stop_token_ids
from plansuite.pddl.codec import ACTION, format_completion


@dataclass(frozen=True)
class Generated:
    text: str  # the completion, from "ACTION:" on
    n_tokens: int  # new tokens generated


class RowLogitsProcessor(Protocol):
    """A per-step logits mask that knows which prompt each live row is (e.g. constrained decoding,
    :class:`plansuite.nl2pddl.decoding.constrained.ConstrainedProblemDecoding`).

    Called before sampling with ``rows[i]`` the prompt index of logits line ``i``, ``new[r]`` the
    ids generated so far for prompt ``r``, and ``steps_left`` the tokens a row may still emit
    (this one included); returns the (possibly in-place) modified logits.
    """

    def __call__(self, rows: Sequence[int], new: Sequence[Sequence[int]], logits: torch.Tensor,
                 steps_left: int) -> torch.Tensor:
        ...


class ActionExclusion:
    """Per-prompt actions a completion may not propose (a :class:`RowLogitsProcessor`).

    A completion starts ``ACTION:\n<action>\n``; for each excluded action the token that would
    finish that line, in the canonical tokenization the generator was trained on, is masked
    while the row's tokens so far are the ones before it. With the atom tokenizer that is the
    action's own token right after ``ACTION:``; with BPE the last token of the action line.
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase, excluded: Sequence[Sequence[str]]):
        self.masks: dict[int, dict[tuple[int, ...], list[int]]] = {}
        for row, actions in enumerate(excluded):
            for action in actions:
                *before, last = action_line_ids(tokenizer, action)
                self.masks.setdefault(row, {}).setdefault(tuple(before), []).append(last)

    def __call__(self, rows: Sequence[int], new: Sequence[Sequence[int]], logits: torch.Tensor,
                 steps_left: int) -> torch.Tensor:
        for i, r in enumerate(rows):
            banned = self.masks.get(r, {}).get(tuple(new[r]))
            if banned:
                logits[i, banned] = float("-inf")
        return logits


def action_line_ids(tokenizer: PreTrainedTokenizerBase, action: str) -> list[int]:
    """The first tokens of a completion proposing ``action``, up to the one that ends its line."""
    covered = len(f"{ACTION}\n{action}")
    ids = encode(tokenizer, [format_completion(action, [])])[0]
    for n in range(1, len(ids) + 1):
        if len(decode(tokenizer, ids[:n])) >= covered:
            return ids[:n]
    return ids


def _chain(*processors: RowLogitsProcessor | None) -> RowLogitsProcessor | None:
    chained = [p for p in processors if p is not None]
    if len(chained) < 2:
        return chained[0] if chained else None

    def apply(rows, new, logits, steps_left):
        for p in chained:
            logits = p(rows, new, logits, steps_left)
        return logits
    return apply


def _top_p_filter(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Zero the tail outside the smallest set of tokens whose mass reaches ``top_p``."""
    if top_p >= 1.0:
        return probs
    sorted_p, order = probs.sort(dim=-1, descending=True)
    outside = sorted_p.cumsum(-1) - sorted_p >= top_p  # the first token always stays
    sorted_p = sorted_p.masked_fill(outside, 0.0)
    return torch.zeros_like(probs).scatter_(-1, order, sorted_p)


# transformers 5 renamed the KV cache argument and output field from past_key_values to cache.
_CACHE_ARG = "cache" if "cache" in inspect.signature(GPT2LMHeadModel.forward).parameters else "past_key_values"


def _cache_of(output):
    return getattr(output, "cache", None) if _CACHE_ARG == "cache" else output.past_key_values


@torch.inference_mode()
def sample_ids(model: PreTrainedModel, prompts: list[list[int]], *, pad_id: int,
               stop_ids: Iterable[int], max_new_tokens: int, temperature: float = 1.0,
               top_p: float = 1.0, generator: torch.Generator | None = None,
               row_rngs: Sequence[random.Random] | None = None,
               banned_ids: Iterable[int] = (),
               logits_processor: RowLogitsProcessor | None = None) -> list[list[int]]:
    """New token ids per prompt (each ending at its first stop id, if reached).

    One forward pass over the left-padded prompts, then one token per step for the rows still
    running; finished rows are dropped from the batch and the cache. With ``row_rngs`` each row
    samples by inverse CDF from a uniform of its own generator (batching-independent).
    """
    device = model.device
    n = len(prompts)
    ids, mask = pad_ids(prompts, pad_id, left=True)
    ids, mask = ids.to(device), mask.to(device)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    out = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True)
    cache, logits = _cache_of(out), out.logits[:, -1, :]
    next_pos = positions[:, -1] + 1
    stops = torch.tensor(sorted(set(stop_ids)), device=device)
    banned = sorted(set(banned_ids) - set(stops.tolist()))
    rows = torch.arange(n, device=device)  # which prompt each live batch row is
    new: list[list[int]] = [[] for _ in range(n)]
    for step in range(max_new_tokens):
        logits = logits.float()
        if banned:
            logits[:, banned] = float("-inf")
        if logits_processor is not None:
            logits = logits_processor(rows.tolist(), new, logits, max_new_tokens - step)
        if temperature == 0:
            tokens = logits.argmax(-1)
        else:
            probs = _top_p_filter(torch.softmax(logits / temperature, dim=-1), top_p)
            if row_rngs is not None:
                u = torch.tensor([row_rngs[r].random() for r in rows.tolist()], device=device)
                cdf = probs.cumsum(-1)
                tokens = (cdf < u[:, None] * cdf[:, -1:]).sum(-1).clamp(max=probs.shape[-1] - 1)
            else:
                tokens = torch.multinomial(probs, 1, generator=generator).squeeze(1)
        for r, t in zip(rows.tolist(), tokens.tolist(), strict=True):
            new[r].append(t)
        live = ~torch.isin(tokens, stops)
        if not live.any():
            break
        if not live.all():
            keep = live.nonzero().squeeze(1)
            cache.batch_select_indices(keep)
            rows, tokens, mask, next_pos = rows[keep], tokens[keep], mask[keep], next_pos[keep]
        mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=1)
        out = model(input_ids=tokens[:, None], attention_mask=mask, position_ids=next_pos[:, None],
                    use_cache=True, **{_CACHE_ARG: cache})
        cache, logits = _cache_of(out), out.logits[:, -1, :]
        next_pos = next_pos + 1
    return new


class GeneratorPolicy:
    """Batched completion of ``GOAL: ... STATE: ...`` prompts by a generator."""

    def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                 max_new_tokens: int = 64, batch_size: int = 64):
        self.model, self.tokenizer = model, tokenizer
        self.max_new_tokens, self.batch_size = max_new_tokens, batch_size
        self.stop_ids = stop_token_ids(tokenizer)
        self.context = context_length(model.config)
        specials = {tokenizer.pad_token_id, tokenizer.unk_token_id, tokenizer.eos_token_id}
        self.banned_ids = sorted(i for i in specials if i is not None)
        self.meta: dict = {}

    @classmethod
    def from_export(cls, path: str | Path, device: str = "cpu", batch_size: int = 64) -> GeneratorPolicy:
        model, tokenizer, meta = load_export(path, "generator", device)
        policy = cls(model, tokenizer, int(meta.get("max_new_tokens", 64)), batch_size)
        policy.meta = meta
        return policy

    def generate(self, prompts: list[str], temperature: float = 1.0, top_p: float = 0.99,
                 max_new_tokens: int | None = None,
                 seed: int | Sequence[int] | None = None,
                 logits_processor: RowLogitsProcessor | None = None,
                 exclude_actions: Sequence[Sequence[str]] | None = None) -> list[Generated]:
        """Completions of ``prompts``; a ``logits_processor`` sees prompt indices of the whole call."""
        if temperature < 0 or not 0 < top_p <= 1:
            raise ConfigError(f"generation: temperature must be >= 0 and top_p in (0, 1] "
                              f"(got {temperature}, {top_p})")
        if not prompts:
            return []
        if exclude_actions is not None:
            if len(exclude_actions) != len(prompts):
                raise ConfigError(f"generation: {len(exclude_actions)} exclusion lists for "
                                  f"{len(prompts)} prompts")
            logits_processor = _chain(logits_processor,
                                      ActionExclusion(self.tokenizer, exclude_actions))
        budget = max_new_tokens or self.max_new_tokens
        generator, rngs = None, None
        if temperature > 0 and isinstance(seed, Sequence):
            if len(seed) != len(prompts):
                raise ConfigError(f"generation: {len(seed)} seeds for {len(prompts)} prompts")
            rngs = [random.Random(int(s)) for s in seed]
        elif temperature > 0:
            generator = torch.Generator(device=self.model.device)
            if seed is None:
                generator.seed()
            else:
                generator.manual_seed(seed)
        prompt_ids = encode(self.tokenizer, prompts)
        longest = max(len(p) for p in prompt_ids)
        if longest >= self.context:
            raise ConfigError(f"generation: a prompt of {longest} tokens does not fit the "
                              f"model's context of {self.context}")
        budget = min(budget, self.context - longest)
        out: list[Generated] = []
        for start in range(0, len(prompts), self.batch_size):
            chunk = prompt_ids[start:start + self.batch_size]
            new = sample_ids(self.model, chunk, pad_id=self.tokenizer.pad_token_id,
                             stop_ids=self.stop_ids, max_new_tokens=budget,
                             temperature=temperature, top_p=top_p, generator=generator,
                             row_rngs=rngs[start:start + self.batch_size] if rngs else None,
                             banned_ids=self.banned_ids,
                             logits_processor=_offset(logits_processor, start))
            out.extend(Generated(self._text(ids), len(ids)) for ids in new)
        return out

    def _text(self, ids: list[int]) -> str:
        if ids and ids[-1] == self.tokenizer.eos_token_id:
            ids = ids[:-1]
        return decode(self.tokenizer, ids)


def _offset(processor: RowLogitsProcessor | None, start: int) -> RowLogitsProcessor | None:
    """``processor`` for a batch that starts at prompt ``start`` (it indexes the whole call)."""
    if processor is None or start == 0:
        return processor

    def shifted(rows, new, logits, steps_left):
        whole = {start + r: ids for r, ids in enumerate(new)}
        return processor([start + r for r in rows], whole, logits, steps_left)
    return shifted


class VerifierScorer:
    """P(valid) for verifier input texts, with the export's calibrated threshold."""

    def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                 threshold: float = 0.5, input_kind: str = "state_action", batch_size: int = 64):
        if input_kind not in INPUT_KINDS:
            raise ConfigError(f"verifier input kind '{input_kind}': unknown (choose from "
                              f"{', '.join(INPUT_KINDS)})")
        self.model, self.tokenizer = model, tokenizer
        self.threshold, self.input_kind, self.batch_size = threshold, input_kind, batch_size
        self.context = context_length(model.config)
        self.meta: dict = {}

    @classmethod
    def from_export(cls, path: str | Path, device: str = "cpu", batch_size: int = 64) -> VerifierScorer:
        model, tokenizer, meta = load_export(path, "verifier", device)
        if model.config.pad_token_id is None:
            raise ConfigError(f"{path}: verifier config has no pad_token_id")
        scorer = cls(model, tokenizer, float(meta.get("threshold", 0.5)),
                     meta.get("input_kind", "state_action"), batch_size)
        scorer.meta = meta
        return scorer

    def input_text(self, state: Iterable[str], action: str,
                   next_state: Iterable[str] | None = None) -> str:
        """The text this verifier scores for a step (the next state only if it reads one)."""
        return verifier_input(self.input_kind, state, action, next_state)

    def score(self, texts: list[str]) -> list[float]:
        ids = encode(self.tokenizer, texts)
        longest = max((len(x) for x in ids), default=0)
        if longest > self.context:
            raise ConfigError(f"verifier: an input of {longest} tokens does not fit the "
                              f"model's context of {self.context}")
        return [p[1] for p in class_probabilities(self.model, self.tokenizer.pad_token_id, ids,
                                                  self.batch_size)]


@torch.inference_mode()
def class_probabilities(model: PreTrainedModel, pad_id: int, ids: list[list[int]],
                        batch_size: int) -> list[list[float]]:
    """A sequence classifier's label probabilities for token-id lists, in right-padded batches
    (the head reads the last real token)."""
    out: list[list[float]] = []
    for start in range(0, len(ids), batch_size):
        batch, mask = pad_ids(ids[start:start + batch_size], pad_id)
        logits = model(input_ids=batch.to(model.device), attention_mask=mask.to(model.device)).logits
        out.extend(torch.softmax(logits.float(), -1).tolist())
    return out
