"""The problem-generator interface of the repair loop, and an OpenAI-compatible HTTP backend.

Any object with this method is a backend::

    generate(description: str, domain_text: str, feedback: Feedback | None) -> str

It returns the text of a ``problem.pddl`` (surrounding prose is tolerated: the loop checks what
:func:`extract_problem` finds). ``feedback`` is ``None`` on the first attempt; afterwards it
carries the previous candidate, the diagnostics that rejected it and ``message``, a ready-made
instruction for a chat model. Backends must not raise on bad model output (the checks report
it); they raise :class:`BackendError` only when the backend itself fails (unreachable server).

Backends are a config group: ``backend=local`` (the default: a ``problem_generator`` export,
:class:`plansuite.nl2pddl.models.learned.LocalGenerator`, which answers feedback by resampling from the
earliest section the diagnostics point at, :func:`resample_from`) or ``backend=openai``. Plugging
a served LLM in is configuration only, e.g. a vLLM / llama.cpp / OpenAI endpoint::

    plansuite-nl2pddl task=repair backend=openai backend.base_url=http://localhost:8000/v1 backend.model=NAME

Any other class works with ``backend._target_=my.module.MyGenerator`` plus its arguments.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from plansuite.errors import ConfigError, PlansuiteError
from plansuite.pddl.checks import Diagnostic, check_atom
from plansuite.pddl.model import Domain

SYSTEM_PROMPT = ("You translate natural-language planning tasks into PDDL. Reply with exactly one "
                 "complete PDDL problem file for the given domain, and nothing else.")


class BackendError(PlansuiteError):
    """The generation backend failed (not the model's output: that is what the checks judge)."""


@dataclass(frozen=True)
class Feedback:
    previous: str  # the rejected candidate
    diagnostics: tuple[Diagnostic, ...]  # the actionable diagnostics
    message: str  # instruction for the next attempt, built from the diagnostics


class ProblemGenerator(Protocol):
    def generate(self, description: str, domain_text: str, feedback: Feedback | None) -> str:
        ...


PROBLEM_NAMES = ("model", "domain")  # who writes a generated problem's name: the model, or the decoder


def problem_name_setting(value: str, key: str) -> str:
    """``value`` when it is one of :data:`PROBLEM_NAMES`, else one line naming ``key``."""
    if value not in PROBLEM_NAMES:
        raise ConfigError(f"{key}={value!r}: choose {' or '.join(PROBLEM_NAMES)}")
    return value


def extract_problem(reply: str) -> str:
    """The ``(define (problem ...) ...)`` form inside a model reply (fences and prose dropped).

    >>> extract_problem("Sure!\\n```pddl\\n(define (problem p) (:domain d))\\n```\\nDone.")
    '(define (problem p) (:domain d))'
    >>> extract_problem("no pddl here")
    'no pddl here'
    """
    lowered = reply.lower()
    start = lowered.find("(define")
    if start < 0:
        return reply.strip()
    depth, in_comment = 0, False
    for i in range(start, len(reply)):
        ch = reply[i]
        if in_comment:
            in_comment = ch != "\n"
        elif ch == ";":
            in_comment = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return reply[start:i + 1]
    return reply[start:].strip()  # unbalanced: let the parser say where


SECTIONS = ("domain", "objects", "init", "goal", "metric")  # the order of a problem file's sections


def section_starts(text: str) -> dict[str, int]:
    """Offset of each ``(:section`` in ``text`` (first occurrence)."""
    out: dict[str, int] = {}
    for m in re.finditer(r"\(\s*:(domain|objects|init|goal|metric)\b", text, re.IGNORECASE):
        out.setdefault(m.group(1).lower(), m.start())
    return out


def section_end(text: str, starts: dict[str, int], at: int) -> int:
    """Where the section holding offset ``at`` ends: the next section's start, else the text's end.

    >>> text = "(define (problem p) (:init (a)) (:goal (b)))"
    >>> text[section_end(text, section_starts(text), text.index("(:init")):]
    '(:goal (b)))'
    """
    return min((start for start in starts.values() if start > at), default=len(text))


def _section_of(d: Diagnostic, text: str, starts: dict[str, int]) -> str | None:
    """The section a diagnostic points at: from its construct, else from its line."""
    construct = d.construct.strip().lower().lstrip("(:")
    for name in SECTIONS:
        if construct.startswith(name):
            return name
    if construct.startswith("object "):
        return "objects"
    if d.line:
        line_end = sum(len(line) + 1 for line in text.split("\n")[:d.line])
        before = [name for name, start in starts.items() if start < line_end]
        return max(before, key=starts.__getitem__) if before else None
    return None


def resample_from(text: str, diagnostics: tuple[Diagnostic, ...] | list[Diagnostic]) -> int:
    """Where a repair should start rewriting ``text``: the start of the earliest section that a
    diagnostic points at (whitespace before it dropped), or 0 (everything) when one of them
    points nowhere in particular (a plan VAL rejects, a parse error before any section).

    >>> text = "(define (problem p)\\n  (:objects a b)\\n  (:init (clear a))\\n  (:goal (and (on a b))))"
    >>> text[:resample_from(text, [Diagnostic("critic-goal", "c", "(:goal ...)", "")])]
    '(define (problem p)\\n  (:objects a b)\\n  (:init (clear a))'
    >>> cut = resample_from(text, [Diagnostic("arity", "c", "init (clear)", ""),
    ...                            Diagnostic("unsolvable", "c", "(:goal ...)", "")])
    >>> text[cut:cut + 10]
    '\\n  (:init '
    >>> resample_from(text, [Diagnostic("parse", "c", "token ')'", "", line=2)]) == text.index("\\n  (:obj")
    True
    >>> resample_from(text, [Diagnostic("plan-invalid", "c", "plan", "")])
    0

    A critic diagnostic that quotes what it doubts (construct ``"<section> <atom or name>"``,
    with its line, as :mod:`~plansuite.nl2pddl.models.likelihood_critic` writes) is finer: the rewrite
    starts at the doubted atom, keeping the facts before it.

    >>> text[:resample_from(text, [Diagnostic("critic-goal", "c", "goal (on a b)", "", line=4)])]
    '(define (problem p)\\n  (:objects a b)\\n  (:init (clear a))\\n  (:goal (and'
    """
    starts = section_starts(text)
    cut = len(text)
    for d in diagnostics:
        section = _section_of(d, text, starts)
        if section is None or section not in starts:
            return 0
        at = _quoted_at(d, text, starts[section]) if d.kind.startswith("critic") else None
        cut = min(cut, len(text[:starts[section] if at is None else at].rstrip()))
    return 0 if cut == len(text) else cut


def declaration(text: str, name: str) -> re.Match | None:
    """Where ``:objects`` declares ``name`` in ``text`` (the name as a whole word, with the
    blanks before it; ``None`` where it is not declared there).

    >>> text = "(define (problem p)\\n  (:objects a b)\\n  (:init (clear b)))"
    >>> m = declaration(text, "b")
    >>> text[:m.start()], m.group(0)
    ('(define (problem p)\\n  (:objects a', ' b')
    """
    start = section_starts(text).get("objects")
    if start is None:
        return None
    end = text.find(")", start)
    end = len(text) if end < 0 else end
    return re.compile(r"[ \t]*(?<![\w-])" + re.escape(name) + r"(?![\w-])", re.IGNORECASE).search(text, start, end)


def drop_declared(text: str, name: str) -> str | None:
    """``text`` with ``name`` taken out of its ``:objects`` (``None`` where it is not declared
    there): the patch for an object declared for nothing, which a generator sure of its object
    list keeps writing however often it is resampled.

    >>> drop_declared("(define (problem p)\\n  (:objects a b c - block)\\n  (:init (clear a)))", "b")
    '(define (problem p)\\n  (:objects a c - block)\\n  (:init (clear a)))'
    >>> drop_declared("(define (problem p) (:objects a) (:init (clear b)))", "b") is None
    True
    """
    m = declaration(text, name)
    return None if m is None else text[:m.start()] + text[m.end():]


SEEDS_PER_DIAGNOSTIC = 8  # forced facts tried per diagnostic (a binary relation: 2 orders x 2 sections)


def seeded_prefixes(text: str, diagnostics: Sequence[Diagnostic], domain: Domain, objects: dict[str, str],
                    accepts: Callable[[str], bool] = lambda prefix: True) -> list[str]:
    """Prefixes of ``text`` that end with a fact the diagnostics point to but ``text`` lacks, for
    the generator to go on from: the rewrites a resampled continuation does not find when the
    generator is sure of its mistake.

    - a critic diagnostic quoting a fact of two or more objects (``init (on b c)``): the fact with
      its arguments in each other order the domain's types allow (``(on c b)``: "c rests on b"
      copied backwards);
    - a ``relation`` diagnostic (objects a clause names together and no fact relates, from the
      mention check: ``relation e h``): each fact of the domain over exactly those objects, in
      ``:init`` and in ``:goal`` (the check does not know which the clause describes).

    A seed goes in the doubted fact's place, before each fact of its section that shares an
    object with it, and first in the section (:func:`_seed_places`), each kept prefix up to
    there; of the prefixes ``accepts`` (the decoder's constraint: the facts kept before a seed
    may contradict it), the first :data:`SEEDS_PER_DIAGNOSTIC` per diagnostic. The loop judges
    each completed rewrite like any other, so a wrong seed costs one check.

    >>> from plansuite.pddl.parse import parse_domain
    >>> dom = parse_domain("(define (domain d) (:predicates (on ?x ?y) (clear ?x)) "
    ...                    "(:action a :parameters (?x) :precondition (clear ?x) :effect (not (clear ?x))))")
    >>> text = "(define (problem p)\\n  (:objects b c)\\n  (:init\\n    (clear b)\\n    (on b c)\\n  )\\n  (:goal (and\\n    (clear c)\\n  ))\\n)"
    >>> for p in seeded_prefixes(text, [Diagnostic("critic-init", "c", "init (on b c)", "", 5)], dom, {"b": "object", "c": "object"}):
    ...     print(repr(p[p.index("(:init"):]))
    '(:init\\n    (clear b)\\n    (on c b)'
    '(:init\\n    (on c b)'
    >>> text = text.replace("(on b c)", "(clear c)")  # "b rests on c" left out
    >>> for p in seeded_prefixes(text, [Diagnostic("critic", "c", "relation b c", "")], dom,
    ...                          {"b": "object", "c": "object"}):
    ...     print(repr(p[p.rindex("(:"):]))
    '(:init\\n    (on b c)'
    '(:init\\n    (clear b)\\n    (on b c)'
    '(:goal (and\\n    (on b c)'
    '(:init\\n    (on c b)'
    '(:init\\n    (clear b)\\n    (on c b)'
    '(:goal (and\\n    (on c b)'
    """
    starts = section_starts(text)
    out: list[str] = []
    for d in diagnostics:
        section, _, quoted = d.construct.strip().partition(" ")
        if d.kind in ("critic-init", "critic-goal") and quoted.startswith("(") and d.line:
            name, *args = quoted.strip("() ").split()
            if len(set(args)) < 2:
                continue
            seeds = [f"({name} {' '.join(p)})" for p in sorted(set(itertools.permutations(args)))
                     if list(p) != args and _fits(domain, name, p, objects)]
            at = resample_from(text, [d])
            sections = [section]
        elif section == "relation" and quoted:
            names = quoted.split()
            seeds = [f"({name} {' '.join(p)})" for name in sorted(domain.predicates)
                     for p in sorted(set(itertools.permutations(names)))
                     if len(domain.predicates[name]) == len(names) and _fits(domain, name, p, objects)]
            at, sections = None, ["init", "goal"]
        else:
            continue
        found: list[str] = []
        for seed in seeds:
            for name in sections:
                for place in _seed_places(text, starts, name, atom_names(seed), at):
                    found.append(f"{text[:place]}\n{_indent_after(text, place)}{seed}")
        found = [p for p in dict.fromkeys(found) if p not in out and accepts(p)]
        out += found[:SEEDS_PER_DIAGNOSTIC]
    return out


def atom_names(atom: str) -> frozenset[str]:
    """The distinct arguments of an atom's text.

    >>> sorted(atom_names("(on b1 b2)")), sorted(atom_names("(arm-empty)"))
    (['b1', 'b2'], [])
    """
    return frozenset(atom.strip("() \n").lower().split()[1:])


def _seed_places(text: str, starts: dict[str, int], section: str, args: frozenset[str],
                 doubted: int | None) -> list[int]:
    """Where a seeded fact over ``args`` may go in ``section``, the likeliest first: the doubted
    fact's place, before each fact of the section sharing an object with it (the generator
    writes a description's facts in its order, and a wrong copy sits where the right fact
    belonged), then first in the section. Each place is the end of the line before it."""
    places = [doubted] if doubted else []
    if (opened := _section_opening(text, starts, section)) is None:
        return places
    at = opened
    for line in text[opened + 1:section_end(text, starts, opened)].split("\n"):
        if _atom_line(line) and atom_names(line) & args:
            places.append(at)
        at += len(line) + 1
    return list(dict.fromkeys([*places, opened]))


def _fits(domain: Domain, predicate: str, args: Sequence[str], objects: dict[str, str]) -> bool:
    """Is ``(predicate *args)`` a well-formed fact of a problem over ``objects``?"""
    return not check_atom(domain, (predicate, *args), {}, objects, "", "", None)


def _section_opening(text: str, starts: dict[str, int], section: str) -> int | None:
    """The end of the line opening ``section`` (``  (:init``, ``  (:goal (and``), where its first
    fact goes; ``None`` when the section is absent or its opening line holds facts too."""
    if section not in starts:
        return None
    end = text.find("\n", starts[section])
    if end < 0 or not re.fullmatch(r"\(\s*:(init|goal)(\s*\(\s*and)?\s*", text[starts[section]:end]):
        return None
    return end


def _indent_after(text: str, at: int) -> str:
    """The indentation of the line after offset ``at`` (four spaces where there is none)."""
    line = text[at:].lstrip("\n").split("\n", 1)[0]
    indent = line[:len(line) - len(line.lstrip())]
    return indent if indent and _atom_line(line) else "    "


def patch_line(previous: str, cut: int, continuation: str) -> str | None:
    """``previous`` with only the atom line right after ``cut`` rewritten: replaced by the first
    line of ``continuation`` (a resampled continuation from ``cut``, :func:`resample_from`), or
    dropped when the continuation closes the section there; every later line kept. ``None`` when
    the line after ``cut`` is no atom line, or the continuation starts with neither.

    A resampled continuation rewrites every fact after the doubted one, and a weak generator
    gets some of those wrong in turn; a patch keeps them, so one wrong fact is one edit.

    >>> text = "  (:init\\n    (on a b)\\n    (clear a)\\n  )"
    >>> cut = text.index("\\n    (on")
    >>> patch_line(text, cut, "\\n    (on a c)\\n    (on c b)\\n  )")
    '  (:init\\n    (on a c)\\n    (clear a)\\n  )'
    >>> patch_line(text, cut, "\\n  )")
    '  (:init\\n    (clear a)\\n  )'
    >>> patch_line(text, 0, "(define") is None
    True
    """
    rest, new = previous[cut:].split("\n"), continuation.split("\n")
    if len(rest) < 3 or len(new) < 2 or rest[0].strip() or new[0].strip() or not _atom_line(rest[1]):
        return None
    if _atom_line(new[1]):
        return previous[:cut] + "\n".join(["", new[1], *rest[2:]])
    if new[1].strip().startswith(")"):
        return previous[:cut] + "\n".join(["", *rest[2:]])
    return None


def _atom_line(line: str) -> bool:
    line = line.strip()
    return line.startswith("(") and line.endswith(")") and line.count("(") == 1 and not line.startswith("(:")


def _quoted_at(d: Diagnostic, text: str, section_start: int) -> int | None:
    """Offset of what a ``"<section> <quoted>"`` diagnostic quotes, on its line, in its section."""
    parts = d.construct.split(" ", 1)
    if len(parts) != 2 or not d.line or parts[1].endswith("...)"):
        return None
    lines = text.split("\n")
    if d.line > len(lines):
        return None
    line_start = sum(len(line) + 1 for line in lines[:d.line - 1])
    found = lines[d.line - 1].find(parts[1])
    if found < 0 or line_start + found <= section_start:
        return None
    return line_start + found


def chat_messages(description: str, domain_text: str, feedback: Feedback | None,
                  examples: Sequence[tuple[str, str]] = ()) -> list[dict]:
    """System prompt, ``examples`` (description, problem) as solved turns, the task, feedback."""
    def task(text: str) -> dict:
        return {"role": "user", "content": f"Domain:\n```pddl\n{domain_text.strip()}\n```\n\n"
                                           f"Task description:\n{text}\n\n"
                                           "Write the problem.pddl for this task."}

    messages = [{"role": "system", "content": SYSTEM_PROMPT}]
    for shot_description, shot_problem in examples:
        messages += [task(shot_description), {"role": "assistant", "content": shot_problem}]
    messages.append(task(description))
    if feedback is not None:
        messages += [{"role": "assistant", "content": feedback.previous},
                     {"role": "user", "content": feedback.message}]
    return messages


class ChatClient:
    """One OpenAI-compatible chat endpoint through the official ``openai`` SDK (the ``openai``
    extra), at any ``base_url``: the SDK retries connection errors, timeouts, HTTP 408, 409, 429
    and 5xx with exponential back-off (``retries`` times) and bounds each request by ``timeout_s``.
    The API key is read from the environment variable named by ``api_key_env`` (never stored in
    a config); no key means no ``Authorization`` header (typical for local servers). A failure of
    the endpoint is a :class:`BackendError`."""

    def __init__(self, base_url: str, model: str, api_key_env: str | None = "OPENAI_API_KEY",
                 temperature: float = 0.0, max_tokens: int = 1024, timeout_s: float = 120.0,
                 retries: int = 2):
        try:
            import openai
        except ImportError as exc:
            raise BackendError("backend=openai needs the openai package "
                               "(pip install 'plansuite[openai]')") from exc
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model, self.temperature, self.max_tokens = model, temperature, max_tokens
        api_key = os.environ.get(api_key_env) if api_key_env else None
        # The SDK insists on a key; without one, each request omits the header it would build.
        self.request_headers = None if api_key else {"Authorization": openai.Omit()}
        self.client = openai.OpenAI(api_key=api_key or "unused", base_url=base_url,
                                    timeout=timeout_s, max_retries=retries)
        self._errors = openai

    def complete(self, messages: list[dict]) -> str:
        """The reply's text (``choices[0].message.content``)."""
        errors = self._errors
        try:
            reply = self.client.chat.completions.create(
                model=self.model, messages=messages, temperature=self.temperature,
                max_tokens=self.max_tokens, extra_headers=self.request_headers)
        except errors.APIStatusError as exc:
            detail = (exc.response.text or "")[:200].strip()
            raise BackendError(f"{self.url}: HTTP {exc.status_code} {detail}") from exc
        except errors.APIConnectionError as exc:  # timeouts included
            cause = exc.__cause__ or exc
            raise BackendError(f"{self.url}: cannot reach the server ({cause})") from exc
        except errors.OpenAIError as exc:  # e.g. a reply that is not JSON
            raise BackendError(f"{self.url}: {type(exc).__name__}: {exc}") from exc
        try:
            content = reply.choices[0].message.content
        except (AttributeError, IndexError, TypeError) as exc:
            text = reply.model_dump_json() if hasattr(reply, "model_dump_json") else str(reply)
            raise BackendError(f"{self.url}: reply has no choices[0].message.content "
                               f"({text[:120]})") from exc
        return content or ""


class OpenAIChatGenerator:
    """A chat model at an OpenAI-compatible endpoint (:class:`ChatClient`) as a backend.

    ``few_shot`` > 0 puts that many solved pairs of the ``train`` split of ``examples_dir`` (a
    ``task=data`` folder) before each task, as user/assistant turns.
    """

    def __init__(self, base_url: str, model: str, api_key_env: str | None = "OPENAI_API_KEY",
                 temperature: float = 0.0, max_tokens: int = 1024, timeout_s: float = 120.0,
                 retries: int = 2, few_shot: int = 0, examples_dir: str | Path | None = None):
        self.examples = _few_shot(few_shot, examples_dir)
        self.chat = ChatClient(base_url, model, api_key_env, temperature, max_tokens, timeout_s, retries)

    def generate(self, description: str, domain_text: str, feedback: Feedback | None) -> str:
        return extract_problem(self.chat.complete(chat_messages(description, domain_text, feedback,
                                                                self.examples)))


def _few_shot(count: int, data_dir: str | Path | None) -> list[tuple[str, str]]:
    """The first ``count`` training pairs of a ``task=data`` folder as (description, problem)."""
    if count <= 0:
        return []
    if not data_dir:
        raise ConfigError(f"backend.few_shot={count}: needs backend.examples_dir (a task=data folder)")
    from plansuite.nl2pddl.data.dataset import load_pairs  # the dataset module pulls in much more

    pairs = load_pairs(data_dir, "train")
    if len(pairs) < count:
        raise ConfigError(f"backend.few_shot={count}: {data_dir} has {len(pairs)} training pairs")
    return [(p.description, p.problem) for p in pairs[:count]]
