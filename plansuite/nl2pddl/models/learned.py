"""The two learned parts of the NL→PDDL loop, loaded from ``plansuite-train`` exports.

:class:`LocalGenerator` implements the backend protocol of :mod:`plansuite.nl2pddl.decoding.generators`
(``generate(description, domain_text, feedback) -> str``) with a ``problem_generator`` export:

- decoding is constrained by the domain (``constrained=auto``, the default, for STRIPS domains;
  PDDL 2.1 domains decode freely under ``auto`` and ``true`` refuses them;
  :mod:`plansuite.nl2pddl.decoding.constrained`): every candidate parses and agrees with the domain's
  predicates, arities, types and the problem's own ``:objects``; ``constrained=False`` decodes
  freely, to measure what the constraint adds; ``distinct_atoms`` (on by default) also forbids
  writing a fact twice in ``:init`` or the goal, and ``valid_states`` (``auto``: where the domain
  has a state model) a fact no valid state holds together with the section's earlier ones;
  ``stated_relations`` (on by default) a fact relating objects that no clause of a description
  naming every declared object names together (:meth:`~plansuite.nl2pddl.decoding.constrained.ProblemGrammar.start`);
- first attempt (``feedback is None``): decode ``DESCRIPTION: ... PROBLEM:`` at ``temperature``
  (0 = greedy, the default);
- a repair attempt (``feedback`` given): the model was never trained on feedback text, so it
  cannot read the message; it uses the diagnostics' *locations* instead. It keeps the previous
  candidate up to the earliest section a diagnostic points at
  (:func:`~plansuite.nl2pddl.decoding.generators.resample_from`: e.g. everything before ``(:goal`` for a
  ``critic-goal`` or ``unsolvable`` diagnostic, everything for a plan VAL rejects), and samples
  ``samples`` continuations of that prefix at ``retry_temperature``, seeded by the previous text
  (so runs are reproducible). With ``line_patches`` (the default), where a critic quoted the
  doubted fact, each continuation's first line also becomes a *patch*: the previous candidate with
  that one fact replaced (or dropped) and every later fact kept
  (:func:`~plansuite.nl2pddl.decoding.generators.patch_line`), and an object the critic quotes is also
  dropped from ``:objects`` (:func:`~plansuite.nl2pddl.decoding.generators.drop_declared`), and the
  generator goes on greedily from *seeded* facts: a doubted fact with its arguments reordered, a
  fact over objects a clause relates and no fact does
  (:func:`~plansuite.nl2pddl.decoding.generators.seeded_prefixes`). It returns the first candidate that differs
  from the previous one; if all repeat it, it resamples from the start of the doubted fact's
  section, then from the head, and if those repeat it too it returns the previous candidate, and
  the loop stops with ``unchanged``. :meth:`LocalGenerator.rewrites` returns all the distinct ones instead, for
  a loop that checks each (``check_rewrites``, :func:`~plansuite.nl2pddl.loop.repair.repair`);
- ``problem_name="domain"``: the decoder writes the problem's name (the domain's) and its
  ``(:domain`` line, and the model goes on from ``(:objects``. The name means nothing to equivalence, but the training targets'
  names say the scene and its size (``gripper-one_room-other_room-2-2``): written first, a
  name seen in training is a key to that training problem, and for a held-out combination the
  generator wrote a seen one's name and then its problem (two balls for "four balls").

:class:`LearnedCritic` implements the critic protocol of :mod:`plansuite.nl2pddl.judging.critic` with a
``critic`` export: it classifies ``critic_input(description, problem)`` into the labels stored
with the export (``match`` first, then the training data's mismatch kinds); the problem is
accepted when ``match`` is the most probable label (or, with ``threshold`` set, when
P(match) >= threshold), and a rejection names the most probable mismatch kind.
"""

from __future__ import annotations

import dataclasses
import re
import zlib
from pathlib import Path

from plansuite.errors import ConfigError, PlansuiteError
from plansuite.models.backbone import context_length
from plansuite.models.export import load_export
from plansuite.models.inference import GeneratorPolicy, class_probabilities
from plansuite.models.tokenizer import decode, encode
from plansuite.nl2pddl.data.dataset import generation_prompt
from plansuite.nl2pddl.decoding.constrained import ConstrainedProblemDecoding, ProblemGrammar
from plansuite.nl2pddl.decoding.generators import (
    BackendError,
    Feedback,
    drop_declared,
    extract_problem,
    patch_line,
    problem_name_setting,
    resample_from,
    seeded_prefixes,
)
from plansuite.nl2pddl.judging.critic import (
    MISMATCH_KINDS,
    CriticVerdict,
    critic_input,
    verdict_label,
)
from plansuite.pddl.checks import Diagnostic
from plansuite.pddl.parse import parse_domain, parse_problem

REWRITE_ROOM = 96  # tokens a repair needs after the kept prefix (a goal section is ~20-80)


def domain_name(domain_text: str) -> str | None:
    """The name in ``(define (domain NAME)``, if any.

    >>> domain_name("(define (domain Blocksworld-4ops) (:requirements :strips))")
    'blocksworld-4ops'
    """
    m = re.search(r"\(\s*domain\s+([^\s()]+)", domain_text, re.IGNORECASE)
    return m.group(1).lower() if m else None


class LocalGenerator:
    """A ``problem_generator`` export as a repair-loop backend (see the module docstring)."""

    def __init__(self, export: str | Path, device: str = "cpu", temperature: float = 0.0,
                 retry_temperature: float = 0.8, top_p: float = 0.95, samples: int = 4,
                 seed: int = 0, max_new_tokens: int | None = None,
                 constrained: bool | str = "auto", distinct_atoms: bool = True,
                 valid_states: bool | str = "auto", line_patches: bool = True,
                 problem_name: str = "model", stated_relations: bool = True):
        if samples < 1:
            raise ConfigError(f"backend.samples={samples}: must be >= 1")
        if constrained not in (True, False, "auto"):
            raise ConfigError(f"backend.constrained={constrained}: choose true, false or auto")
        model, tokenizer, meta = load_export(export, "problem_generator", device)
        self.policy = GeneratorPolicy(model, tokenizer, int(meta.get("max_new_tokens", 512)))
        self.export, self.meta = Path(export), meta
        self.temperature, self.retry_temperature, self.top_p = temperature, retry_temperature, top_p
        self.samples, self.seed, self.max_new_tokens = samples, seed, max_new_tokens
        self.constrained, self.distinct_atoms = constrained, distinct_atoms
        if valid_states not in (True, False, "auto"):
            raise ConfigError(f"backend.valid_states={valid_states}: choose true, false or auto")
        self.valid_states, self.line_patches = valid_states, line_patches
        self.stated_relations = stated_relations
        self.problem_name = problem_name_setting(problem_name, "backend.problem_name")
        self._grammars: dict[str, ProblemGrammar] = {}
        self._strips: dict[str, bool] = {}  # domain text -> does the grammar cover it
        self._token_texts: list[str] | None = None
        trained_on = self.export / "domain.pddl"
        self.domain = domain_name(trained_on.read_text()) if trained_on.is_file() else None

    def _check_domain(self, domain_text: str) -> None:
        asked = domain_name(domain_text)
        if self.domain and asked and asked != self.domain:
            raise BackendError(f"{self.export}: trained on domain '{self.domain}', asked for '{asked}'")

    def grammar(self, domain_text: str) -> ProblemGrammar:
        """The constraint automaton for ``domain_text`` (parsed once per domain text)."""
        if domain_text not in self._grammars:
            self._grammars[domain_text] = ProblemGrammar(parse_domain(domain_text, "domain.pddl"),
                                                          self.distinct_atoms, self.valid_states)
        return self._grammars[domain_text]

    def uses_constraint(self, domain_text: str) -> bool:
        """``constrained=auto`` (the default) constrains where the grammar covers the domain
        (STRIPS) and decodes freely for PDDL 2.1; ``true`` insists (an error for PDDL 2.1)."""
        if self.constrained == "auto":
            if domain_text not in self._strips:
                domain = parse_domain(domain_text, "domain.pddl")
                self._strips[domain_text] = domain.level == "classical" and not domain.functions
            return self._strips[domain_text]
        return bool(self.constrained)

    def _processor(self, domain_text: str, prefixes: list[str],
                   description: str | None) -> ConstrainedProblemDecoding | None:
        if not self.uses_constraint(domain_text):
            return None
        if self._token_texts is None:
            tok = self.policy.tokenizer
            self._token_texts = [decode(tok, [i]) for i in range(len(tok))]
        return ConstrainedProblemDecoding(self.grammar(domain_text), self._token_texts,
                                          self.policy.stop_ids, prefixes,
                                          description if self.stated_relations else None)

    def _complete(self, description: str, n: int, temperature: float, seed: int, domain_text: str,
                  prefix: str = "") -> list[str]:
        return self._continue(description, domain_text, [prefix] * n, temperature, seed)

    def _continue(self, description: str, domain_text: str, prefixes: list[str], temperature: float,
                  seed: int = 0) -> list[str]:
        """One continuation of each of ``prefixes`` (the problem text written so far)."""
        prompt = generation_prompt(description)
        gens = self.policy.generate([prompt + p for p in prefixes], temperature=temperature, top_p=self.top_p,
                                    max_new_tokens=self.max_new_tokens,
                                    seed=[seed + i for i in range(len(prefixes))] if temperature > 0 else None,
                                    logits_processor=self._processor(domain_text, prefixes, description))
        return [g.text for g in gens]  # a trailing END is dropped by extract_problem

    def rewrites(self, description: str, domain_text: str, feedback: Feedback) -> list[str]:
        """The distinct candidates, in sampling order, among ``samples`` resampled continuations
        of the previous candidate's kept prefix that differ from it (see the module docstring).
        When every continuation from the doubted fact repeats the previous candidate (the facts
        kept before it leave the generator one way on), it backs off: from the start of that
        fact's section, then from the head."""
        self._check_domain(domain_text)
        previous = feedback.previous
        fine = resample_from(previous, feedback.diagnostics)
        coarse = resample_from(previous, [dataclasses.replace(d, construct=d.construct.split(" ")[0], line=None)
                                          for d in feedback.diagnostics])
        drops = [p for d in feedback.diagnostics if self.line_patches and d.kind == "critic-object"
                 and " " in d.construct and (p := drop_declared(previous, d.construct.split(" ", 1)[1]))]
        seeded = self._seeded_rewrites(description, domain_text, previous, feedback.diagnostics)
        tried: set[str] = set()
        for backoff, cut in enumerate((fine, coarse, 0)):
            prefix = self._kept_prefix(description, domain_text, previous[:cut])
            if prefix in tried:
                continue
            tried.add(prefix)
            if out := self._rewrites_from(description, domain_text, previous, prefix, backoff):
                return distinct(drops + out + seeded, previous)
        return distinct(drops + seeded, previous)

    def _seeded_rewrites(self, description: str, domain_text: str, previous: str,
                         diagnostics: tuple[Diagnostic, ...]) -> list[str]:
        """With ``line_patches``, greedy continuations of the seeded prefixes the constraint
        accepts (:func:`~plansuite.nl2pddl.decoding.generators.seeded_prefixes`: a doubted fact with its
        arguments reordered, a fact over objects a clause relates and no fact does)."""
        if not (self.line_patches and self.uses_constraint(domain_text)):
            return []
        grammar = self.grammar(domain_text)
        try:
            objects = parse_problem(previous, grammar.domain, "<candidate>").objects
        except PlansuiteError:
            return []
        start = grammar.start(description if self.stated_relations else None)
        room = self.policy.context - REWRITE_ROOM
        prefixes = seeded_prefixes(previous, diagnostics, grammar.domain, objects, lambda p: (
            grammar.feed(start, p) is not None
            and len(encode(self.policy.tokenizer, [generation_prompt(description) + p])[0]) <= room))
        if not prefixes:
            return []
        return [extract_problem(p + c) for p, c in
                zip(prefixes, self._continue(description, domain_text, prefixes, 0.0), strict=True)]

    def _kept_prefix(self, description: str, domain_text: str, prefix: str) -> str:
        """``prefix`` if a rewrite can go on from it, else the head (see :meth:`head`)."""
        if len(encode(self.policy.tokenizer, [generation_prompt(description) + prefix])[0]) \
                > self.policy.context - REWRITE_ROOM:
            prefix = ""  # a runaway candidate: keeping it would leave no room to rewrite the rest
        if self.uses_constraint(domain_text):
            grammar = self.grammar(domain_text)
            if grammar.feed(grammar.start(description if self.stated_relations else None), prefix) is None:
                prefix = ""  # written without the constraint: it cannot be continued under it
        return prefix or self.head(domain_text)  # a rewrite of everything still starts with the decoder's name

    def _rewrites_from(self, description: str, domain_text: str, previous: str, prefix: str,
                       backoff: int) -> list[str]:
        # reproducible, new per attempt (and per back-off)
        seed = self.seed * 1_000_003 + zlib.crc32(previous.encode()) + 7919 * backoff
        continuations = self._complete(description, self.samples, self.retry_temperature, seed, domain_text, prefix)
        candidates = [extract_problem(prefix + c) for c in continuations]
        if self.line_patches and prefix and previous.startswith(prefix):  # the doubted fact alone rewritten
            candidates += [p for c in continuations if (p := patch_line(previous, len(prefix), c))]
        return distinct(candidates, previous)

    def head(self, domain_text: str) -> str:
        """What the decoder writes before the model: with ``problem_name="domain"`` the problem's
        name and domain, up to ``(:objects`` (a head cut after a newline splits a token training
        never split); else nothing."""
        if self.problem_name != "domain":
            return ""
        name = domain_name(domain_text) or "problem"
        return f"(define (problem {name})\n  (:domain {name})\n  (:objects"

    def sample(self, description: str, domain_text: str, n: int = 1, temperature: float | None = None,
               seed: int | None = None) -> list[str]:
        """``n`` first attempts under the decoder's settings (the head, the constraint), at
        ``temperature`` (default: the backend's) and seeded from ``seed`` (default: the backend's),
        so ``sample(d, t)`` is :meth:`generate`'s first attempt and ``n`` samples are reproducible."""
        self._check_domain(domain_text)
        head = self.head(domain_text)
        temperature = self.temperature if temperature is None else temperature
        texts = self._complete(description, n, temperature, self.seed if seed is None else seed, domain_text, head)
        return [extract_problem(head + text) for text in texts]

    def generate(self, description: str, domain_text: str, feedback: Feedback | None) -> str:
        if feedback is None:
            return self.sample(description, domain_text)[0]
        return next(iter(self.rewrites(description, domain_text, feedback)), feedback.previous)


def distinct(candidates: list[str], previous: str) -> list[str]:
    """``candidates`` in order, each once and none equal to ``previous`` (up to whitespace).

    >>> distinct(["(a  b)", "(a b)", "(c)", "(d)"], "(c)")
    ['(a  b)', '(d)']
    """
    out: list[str] = []
    seen = {tuple(previous.split())}
    for candidate in candidates:
        if tuple(candidate.split()) not in seen:
            seen.add(tuple(candidate.split()))
            out.append(candidate)
    return out


class LearnedCritic:
    """A ``critic`` export as the loop's critic (see the module docstring)."""

    def __init__(self, export: str | Path, device: str = "cpu", threshold: float | None = None,
                 batch_size: int = 32):
        self.model, self.tokenizer, self.meta = load_export(export, "critic", device)
        labels = self.meta.get("labels")
        if (not isinstance(labels, list) or labels[:1] != ["match"] or len(labels) < 2
                or not set(labels[1:]) <= set(MISMATCH_KINDS)):
            raise ConfigError(f"{export}: critic labels {labels}: expected 'match' then kinds "
                              f"among {list(MISMATCH_KINDS)}")
        if self.model.config.num_labels != len(labels):
            raise ConfigError(f"{export}: {len(labels)} critic labels but the model has "
                              f"{self.model.config.num_labels} classes")
        self.labels = tuple(labels)
        if self.model.config.pad_token_id is None:
            raise ConfigError(f"{export}: critic config has no pad_token_id")
        self.threshold, self.batch_size = threshold, batch_size
        self.context = context_length(self.model.config)

    def probabilities(self, texts: list[str]) -> list[list[float]]:
        """P(label) for each critic input text; over-long inputs keep their first tokens."""
        ids = [x[:self.context] for x in encode(self.tokenizer, texts)]
        return class_probabilities(self.model, self.tokenizer.pad_token_id, ids, self.batch_size)

    def decide(self, probs: list[float]) -> CriticVerdict:
        """The verdict for one row of :meth:`probabilities`."""
        p_match = probs[0]
        best = max(range(len(self.labels)), key=probs.__getitem__)
        accepted = best == 0 if self.threshold is None else p_match >= self.threshold
        kind = None if accepted else self.labels[max(range(1, len(self.labels)), key=probs.__getitem__)]
        return CriticVerdict(accepted, kind, round(p_match, 6))

    def predict(self, texts: list[str]) -> list[str]:
        """The label each text gets: ``match`` when accepted, else the suspected kind."""
        return [verdict_label(v) for v in map(self.decide, self.probabilities(texts))]

    def judge(self, description: str, problem_text: str) -> CriticVerdict:
        return self.decide(self.probabilities([critic_input(description, problem_text)])[0])
