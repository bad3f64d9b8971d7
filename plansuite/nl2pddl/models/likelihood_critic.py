"""A critic read off the problem generator itself (``critic=likelihood``).

The generator was trained to write, token by token, the problem a description states. Reading a
candidate problem under it (teacher forcing, prompt = the description) gives every token's
probability; a fact the description does not support -- a wrong block under ``on``, a missing
object, a goal fact too many or too few -- is a token the generator finds unlikely. The critic
rejects a candidate whose least likely token has probability below ``threshold`` and says where
that token is: its section gives the mismatch kind (``object``, ``init``, ``goal``) and the
message quotes the atom (or object) around it, so a repair knows what to rewrite.

A generator trained on facts in the order a description states them finds a correct problem
whose facts come in another order (or layout) unlikely too. So the critic first rewrites a
candidate that parses against the export's domain in the canonical layout
(:func:`~plansuite.pddl.model.problem_to_pddl`), then puts its ``:init`` and ``:goal`` facts in
their *reading order* (:meth:`LikelihoodCritic.reading_order`):
at each line, of the facts not yet placed, the one the generator finds most likely next. The
verdict is about which facts the problem states, never about how it lists them; a fact no
clause supports is the one left to be placed where nothing points at it. For the same reason a
goal that adds facts its other facts imply (``(clear b1)`` after every block is placed) is read
without them too (:meth:`LikelihoodCritic.equivalent_readings`), and the critic keeps the
reading it finds most likely: the generator writes what a description states, and the implied
facts are not stated.

A generator that copied a fact wrong (``(on d b)`` for "c rests on b") finds its own copy likely,
so with ``mentions`` (the default) the critic first asks the description itself: an object no
fact mentions and the text never names, and, where the text names every object of the candidate,
a fact relating objects no clause names together, or a clause no fact states, is rejected before
any likelihood is read (:mod:`~plansuite.nl2pddl.decoding.mentions`).

Unlike the classifier critic (``critic=learned``, :class:`plansuite.nl2pddl.models.learned.LearnedCritic`)
it needs no training of its own: only a threshold, chosen on the held-out corruptions of a
dataset's ``val`` split (``calibrate_on=DATA_DIR``, the default with ``data_dir`` set) to
maximise balanced detection (the mean of the match acceptance rate and the mismatch rejection
rate, so the three corrupted kinds per match do not push it to reject everything). It judges
the generator's own candidates by what the generator believes; ground truth stays with the
references (structural and semantic equivalence), never with this score.

>>> atom_lines("  (:init\\n    (a)\\n    (b)\\n  )\\n  (:goal (and\\n    (c)\\n  ))".split("\\n"))
{'init': (1, 3), 'goal': (5, 6)}
>>> least_likely_span("(:init (on a b) (clear a))", 12)
'(on a b)'
>>> least_likely_span("(:objects a b c)", 13)
'b'
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import torch

from plansuite.errors import ConfigError, PlansuiteError
from plansuite.models.backbone import context_length
from plansuite.models.export import load_export
from plansuite.models.tokenizer import decode, encode, pad_ids
from plansuite.nl2pddl.data.dataset import END, generation_prompt
from plansuite.nl2pddl.decoding.generators import problem_name_setting, section_starts
from plansuite.nl2pddl.decoding.mentions import mention_verdict
from plansuite.nl2pddl.judging.critic import CriticVerdict, verdict_label
from plansuite.nl2pddl.judging.general_semantics import complete_goal
from plansuite.nl2pddl.judging.worlds import SearchBudgetExceeded, implied_literals, world_for
from plansuite.pddl.model import Atom, Domain, Problem, parse_atom_text, problem_to_pddl
from plansuite.pddl.parse import load_domain, parse_problem
from plansuite.pddl.simulator import _static_predicates

SECTION_KIND = {"objects": "object", "init": "init", "goal": "goal"}
SECTION_OPENERS = {"init": "(:init", "goal": "(:goal (and"}


def atom_lines(lines: list[str]) -> dict[str, tuple[int, int]]:
    """Section -> the [start, end) line range of the one-atom lines right after its opener line,
    for the canonical layout (:func:`~plansuite.pddl.model.problem_to_pddl`, the generator's own);
    a section written another way is left out (and read as it is written)."""
    out = {}
    for section, opener in SECTION_OPENERS.items():
        starts = [i for i, line in enumerate(lines) if line.strip() == opener]
        if len(starts) != 1:
            continue
        end = start = starts[0] + 1
        while end < len(lines) and lines[end].strip().startswith("(") and lines[end].strip().endswith(")") \
                and lines[end].strip().count("(") == 1:
            end += 1
        if end > start:
            out[section] = (start, end)
    return out


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


def _line_in(text: str, quote: str, section: str | None) -> int | None:
    """1-based line of ``quote`` in ``text``, in ``section`` if it has one (first such line).

    >>> _line_in("(:init\\n  (on a b)\\n)\\n(:goal (and\\n  (on a b)))", "(on a b)", "goal")
    5
    """
    starts = section_starts(text)
    after = starts.get(section or "", 0)
    at = text.find(quote, after)
    return None if at < 0 else text.count("\n", 0, at) + 1


def goal_implied_by(problem: Problem, domain: Domain, atoms: list[Atom]) -> bool:
    """Do ``atoms`` (with the problem's negative goal) imply every fact of ``problem``'s goal?
    The Blocksworld / Gripper model when it applies, else the domain-general completion from the
    problem's initial state; ``False`` when that cannot be decided (state space too large).
    """
    world = world_for(domain)
    if world is not None:
        try:
            implied = implied_literals(world, problem.objects, atoms, problem.goal_neg)
        except SearchBudgetExceeded:
            return False
        return implied is not None and problem.goal_pos <= implied[0]
    completion = complete_goal(dataclasses.replace(problem, goal_pos=frozenset(atoms)), domain)
    if not completion.exact or completion.goal_pos is None:
        return False
    static = _static_predicates(domain)  # left out of a completion: they hold iff in :init
    return all(a in completion.goal_pos or (a[0] in static and a in problem.init)
               for a in problem.goal_pos)


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


def _least_likely(problem: str, scores: list[float], offsets: list[int]) -> TokenDoubt:
    # The problem's name carries no meaning: doubts start at the first section.
    first = min(section_starts(problem).values(), default=0)
    kept = [(s, at) for s, at in zip(scores, offsets, strict=True) if at >= first]
    if not kept:
        return TokenDoubt(0.0, 0)  # nothing of the problem fits the context
    score, at = min(kept, key=lambda pair: pair[0])
    return TokenDoubt(math.exp(score), at)


class LikelihoodCritic:
    """A ``problem_generator`` export as a critic (see the module docstring)."""

    labels = ("match", "object", "init", "goal")

    def __init__(self, export: str | Path, device: str = "cpu", threshold: float | None = None,
                 calibrate_on: str | Path | None = None, calibrate_split: str = "val",
                 calibrate_limit: int | None = None, batch_size: int = 16, problem_name: str = "model",
                 mentions: bool = True):
        self.mentions = mentions
        self.problem_name = problem_name_setting(problem_name, "critic.problem_name")
        if not export:
            raise ConfigError("critic=likelihood: critic.export (a problem_generator export) is required")
        self.model, self.tokenizer, self.meta = load_export(export, "problem_generator", device)
        domain_file = Path(export) / "domain.pddl"
        self.domain = load_domain(domain_file) if domain_file.is_file() else None
        self.model.eval()
        self.batch_size = batch_size
        self.context = context_length(self.model.config)
        self.threshold = threshold
        if threshold is None:
            if not calibrate_on:
                raise ConfigError("critic=likelihood: set critic.threshold or critic.calibrate_on "
                                  "(a task=data folder whose val critic examples pick it)")
            self.threshold = self.calibrate(calibrate_on, calibrate_split, calibrate_limit)
        if not 0 < self.threshold <= 1:
            raise ConfigError(f"critic.threshold={self.threshold}: must be in (0, 1]")

    def calibrate(self, data_dir: str | Path, split: str = "val", limit: int | None = None) -> float:
        """The balanced-detection threshold on ``data_dir``'s ``split`` critic examples (the
        first ``limit`` of them: each pair's match and corruptions are consecutive)."""
        from plansuite.nl2pddl.data.dataset import load_critic_examples

        examples = load_critic_examples(data_dir, split)[:limit]
        if not examples:
            raise ConfigError(f"{data_dir}/critic/{split}.jsonl: no critic examples to calibrate on")
        doubts = self.doubts([e.description for e in examples], [e.problem for e in examples])
        match = [d.probability for (_, d), e in zip(doubts, examples, strict=True) if e.label == "match"]
        other = [d.probability for (_, d), e in zip(doubts, examples, strict=True) if e.label != "match"]
        return best_threshold(match, other)

    @torch.no_grad()
    def token_logprobs(self, descriptions: list[str], problems: list[str],
                       end: bool = True) -> list[tuple[list[float], list[int]]]:
        """Per problem: the log-probability of each token of ``problem + END`` (``end=False``:
        of the problem alone, e.g. a prefix) given its description, and each token's character
        offset in the problem (inputs longer than the context keep their first tokens)."""
        prompts = encode(self.tokenizer, [generation_prompt(d) for d in descriptions])
        completions = encode(self.tokenizer, [p + (END + "\n" if end else "") for p in problems])
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

    def canonical(self, problem: str) -> str:
        """``problem`` in the canonical layout when it parses against the domain, else as written
        (what does not parse is for the parse check to report, not for this critic); with
        ``problem_name="domain"`` named as the decoder names it (:class:`~plansuite.nl2pddl.models.learned.LocalGenerator`)."""
        if self.domain is None:
            return problem
        try:
            parsed = parse_problem(problem, self.domain, "<candidate>")
        except PlansuiteError:
            return problem
        if self.problem_name == "domain":  # read every candidate under the name the decoder writes
            parsed = dataclasses.replace(parsed, name=self.domain.name)
        return problem_to_pddl(parsed, self.domain)

    def reading_order(self, description: str, problem: str) -> str:
        """``problem`` with the facts of its ``:init`` and ``:goal`` in the order the generator
        finds most likely: line by line, the remaining fact whose line is most probable next
        (teacher forcing on what is placed so far). Other lines stay where they are."""
        lines = problem.split("\n")
        for start, end in atom_lines(lines).values():
            remaining, placed = lines[start:end], []
            while len(remaining) > 1:
                head = "\n".join(lines[:start] + placed)
                scored = self.token_logprobs([description] * len(remaining),
                                             [f"{head}\n{line}" for line in remaining], end=False)
                totals = [sum(scores) for scores, _ in scored]
                placed.append(remaining.pop(max(range(len(totals)), key=totals.__getitem__)))
            lines[start:end] = placed + remaining
        return "\n".join(lines)

    def equivalent_readings(self, read: str) -> list[str]:
        """``read`` (a problem in its reading order), then the same text with its last goal fact
        dropped, its last two, ... while the facts kept still imply the whole goal: the same
        problem, written as a description would state it. The reading order places the facts no
        clause supports last, so implied facts a rewrite added are at the tail."""
        lines = read.split("\n")
        span = atom_lines(lines).get("goal")
        if self.domain is None or span is None:
            return [read]
        try:
            problem = parse_problem(read, self.domain, "<candidate>")
        except PlansuiteError:
            return [read]
        start, end = span
        atoms = [parse_atom_text(line) for line in lines[start:end]]
        out = [read]
        for keep in range(len(atoms) - 1, 0, -1):  # implication is monotone: stop at the first miss
            if not goal_implied_by(problem, self.domain, atoms[:keep]):
                break
            out.append("\n".join(lines[:start + keep] + lines[end:]))
        return out

    def doubts(self, descriptions: list[str], problems: list[str]) -> list[tuple[str, TokenDoubt]]:
        """Each problem in its most likely equivalent reading, and that text's least likely token
        (or ``END``) given the description."""
        reads = [self.reading_order(d, self.canonical(p)) for d, p in zip(descriptions, problems, strict=True)]
        variants = [(i, text) for i, read in enumerate(reads) for text in self.equivalent_readings(read)]
        scored = self.token_logprobs([descriptions[i] for i, _ in variants], [t for _, t in variants])
        best: dict[int, tuple[str, TokenDoubt]] = {}
        for (i, text), (scores, offsets) in zip(variants, scored, strict=True):
            doubt = _least_likely(text, scores, offsets)
            if i not in best or doubt.probability > best[i][1].probability:
                best[i] = (text, doubt)
        return [best[i] for i in range(len(reads))]

    def _verdict(self, problem: str, read: str, doubt: TokenDoubt) -> CriticVerdict:
        """The verdict on ``problem`` from the doubt found in ``read``, its reading order; a
        quoted atom's line is its line in ``problem``, where a repair rewrites from."""
        if doubt.probability >= self.threshold:
            return CriticVerdict(True, None, round(doubt.probability, 6))
        offset = min(doubt.offset, len(read))
        while offset < len(read) and read[offset].isspace():
            offset += 1  # a token that opens a line starts with its newline: point at its atom
        starts = section_starts(read)
        before = [name for name, at in starts.items() if at <= offset]
        section = max(before, key=starts.__getitem__) if before else None
        kind = SECTION_KIND.get(section or "")
        quote, line = None, None
        if offset >= len(read.rstrip()):
            where = "the end of the problem (something is missing)"
        else:
            quote = least_likely_span(read, offset)
            line = _line_in(problem, quote, section) or read.count("\n", 0, offset) + 1
            where = f"{quote!r} in :{section or 'problem'}"
        message = (f"the generator, reading the description, finds {where} unlikely "
                   f"(p = {doubt.probability:.2g} < {self.threshold:.2g})")
        return CriticVerdict(False, kind, round(doubt.probability, 6), message, quote, line)

    def mention_verdict(self, description: str, problem_text: str) -> CriticVerdict | None:
        """With ``mentions``, the rejection of a fact the description never states
        (:mod:`~plansuite.nl2pddl.decoding.mentions`), else ``None`` (also for what does not parse)."""
        if not self.mentions or self.domain is None:
            return None
        try:
            objects = parse_problem(problem_text, self.domain, "<candidate>").objects
        except PlansuiteError:
            return None
        return mention_verdict(description, problem_text, objects)

    def judge(self, description: str, problem_text: str) -> CriticVerdict:
        if (verdict := self.mention_verdict(description, problem_text)) is not None:
            return verdict
        [(read, doubt)] = self.doubts([description], [problem_text])
        return self._verdict(problem_text, read, doubt)

    def predict_examples(self, descriptions: list[str], problems: list[str]) -> list[str]:
        """The label each (description, problem) gets: ``match`` or the suspected kind."""
        labels: list[str | None] = [None if (v := self.mention_verdict(d, p)) is None else verdict_label(v)
                                    for d, p in zip(descriptions, problems, strict=True)]
        rest = [i for i, label in enumerate(labels) if label is None]
        doubts = self.doubts([descriptions[i] for i in rest], [problems[i] for i in rest])
        for i, (read, doubt) in zip(rest, doubts, strict=True):
            labels[i] = verdict_label(self._verdict(problems[i], read, doubt))
        return [label for label in labels if label is not None]
