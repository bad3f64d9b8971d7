"""Constrained decoding of problem files: the local generator can only write PDDL that parses and
agrees with the domain.

:class:`ProblemGrammar` is a character-level automaton over the text of a STRIPS problem in the
shape the datasets use::

    (define (problem NAME) (:domain DOMAIN) (:objects NAME* [- TYPE] ...)
      (:init ATOM*) (:goal (and ATOM*)))

Words are checked against what may come next: ``DOMAIN`` is the domain's name, ``TYPE`` a type
the domain declares (only when it uses ``:typing``), an object in ``:objects`` a new name (not a
constant, keyword or earlier object), a predicate one the domain declares *and* whose argument
types the declared objects can fill, each argument an object or constant of the parameter's
type, and an atom closes exactly after its arity. So ``undeclared-object``, ``undeclared-predicate``,
``arity``, ``type``, ``undeclared-type``, ``domain-name`` and ``duplicate`` diagnostics cannot occur,
and every accepted text parses. With ``distinct_atoms`` (the default) an atom cannot be written twice
in ``:init`` or in the goal: a repeated fact never adds meaning, and a small generator's typical
content error is to repeat a ``(clear ...)`` instead of writing the fact it left out, so the
decoder makes it choose another one. With ``valid_states`` (the default where the domain has a
state model, :func:`~plansuite.nl2pddl.judging.worlds.world_for`: Blocksworld, Gripper) an atom is
allowed only if some valid state holds it together with the section's atoms so far: no block
both on the table and in the hand, no two blocks on one, no ball in two rooms. A small
generator's commonest abstract-scene error is such a state (a goal that "cannot hold in any
valid state"); the decoder makes it write a fact that fits instead. A predicate or argument is
allowed only while some completion of the atom is still new (and fits), so the decoder never
writes itself into a dead end. Started with the description (``start(description)``), and where
that description names every declared object (an explicit one, fact by fact), an atom relating two
or more objects is allowed only if one clause of the description names them together
(:meth:`ProblemGrammar._stated`): a generator that copies a long description sometimes writes
``(on d b)`` for "c rests on b", a fact no clause states. Whitespace runs are limited (``MAX_WS``), and inside an atom to
one space (a generator unsure of an argument otherwise "writes" newlines: ``(at-robby`` then eight
of them), names to ``MAX_NAME`` characters, and text is lower case (the datasets' convention; PDDL is case-insensitive anyway).

:class:`ConstrainedProblemDecoding` applies the automaton to a tokenizer: per decoding step and
row it masks the logits of every token whose text would leave the automaton (a walk over a trie of
the vocabulary's token texts, cached per automaton state). It also keeps the text finishable
within the token budget: once the steps left are no more than the characters of the shortest
completion (:meth:`ProblemGrammar.completion`) plus one, only tokens along that completion are
allowed (single-character tokens always exist in a byte-level BPE, so this always succeeds), and
in the accepting state only the stop tokens are. Before that, within ``MAX_JUMP`` steps of it,
a token is allowed only if the completion after it still fits the steps left. Stop tokens are banned before that, so a row
cannot end half-written. It works with any tokenizer whose token texts are known; tokens that
contain anything outside ASCII letters, digits, ``-_:()`` and whitespace are never allowed.

PDDL 2.1 domains (numeric fluents, durative actions) are not covered: :class:`ProblemGrammar`
raises :class:`~plansuite.errors.ConfigError` for them.

>>> from plansuite.domains import load_builtin
>>> g = ProblemGrammar(load_builtin("blocksworld"))
>>> head = "(define (problem p) (:domain blocksworld-4ops) (:objects a b) (:init (on a "
>>> g.feed(g.start(), head + "b)") is not None, g.feed(g.start(), head + "c)"), g.feed(g.start(), head + "b b)")
(True, None, None)
>>> g.completion(g.feed(g.start(), head))  # (on a a): no valid state holds it
'b))(:goal(and)))'
>>> g.feed(g.start(), head + "b) (on a b)") is None  # no fact twice (distinct_atoms=True)
True

Started with an explicit description, a fact must relate objects some clause names together:

>>> s = g.start("Blocks a, b and c. Block a sits on block b; c is on the table.")
>>> three = "(define (problem p) (:domain blocksworld-4ops) (:objects a b c) (:init (on a "
>>> g.feed(s, three + "b)") is not None, g.feed(s, three + "c)"), g.feed(g.start(), three + "c)") is not None
(True, None, True)
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import torch

from plansuite.errors import ConfigError
from plansuite.nl2pddl.decoding.mentions import clauses
from plansuite.nl2pddl.judging.worlds import World, find_state, world_for
from plansuite.pddl.model import ROOT_TYPE, Atom, Domain

NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")
WORD_CHARS = NAME_CHARS | {":"}  # keywords (":objects") are words too
WHITESPACE = frozenset(" \t\n")
PARENS = frozenset("()")
MAX_NAME = 40  # characters of a free name (problem or object)
MAX_WS = 12  # consecutive whitespace characters ("\n    " indents are 5)
# How much one token can lengthen the shortest completion (finishing a name, the arguments and
# ")" of an atom it opens): near the end of the budget, tokens are checked one by one.
MAX_JUMP = 2 * MAX_NAME + 48
RESERVED = frozenset({"define", "problem", "domain", "and", "not", "or", "either", "forall",
                      "exists", "when", "imply", "object"})

# The problem file as a script of expected lexemes; the markers are sections with their own rules.
NAME, DOMAIN, OBJECTS, INIT, GOAL, END = "<name>", "<domain>", "<objects>", "<init>", "<goal>", "<end>"
SCRIPT = ("(", "define", "(", "problem", NAME, ")", "(", ":domain", DOMAIN, ")", "(", ":objects",
          OBJECTS, "(", ":init", INIT, "(", ":goal", "(", "and", GOAL, ")", ")", END)


@dataclass(frozen=True)
class ParseState:
    """Where the lexeme-level parse is: a position in ``SCRIPT`` and what a section has so far."""

    pos: int = 0
    sub: str = ""  # OBJECTS: "" | "type" (after "-"); INIT/GOAL: "" | "pred" (after "(") | "args"
    objects: tuple[tuple[str, str], ...] = ()  # declared (name, type), in order
    pending: tuple[str, ...] = ()  # OBJECTS: names waiting for their "- TYPE"
    pred: str = ""
    args: tuple[str, ...] = ()
    atoms: frozenset[tuple[str, ...]] = frozenset()  # INIT/GOAL: atoms written in this section
    # the description's clauses as sets of words (start(description)): None, no stated relations
    together: tuple[frozenset[str], ...] | None = None


@dataclass(frozen=True)
class State:
    """Character-level state: the parse, the word being written, the current whitespace run."""

    parse: ParseState
    word: str = ""
    ws: int = 0


def _is_free_name(word: str) -> bool:
    return (0 < len(word) <= MAX_NAME and word[0].isalpha() and word.isascii()
            and set(word) <= NAME_CHARS)


class ProblemGrammar:
    """The automaton for problems of one STRIPS domain (see the module docstring)."""

    def __init__(self, domain: Domain, distinct_atoms: bool = True, valid_states: bool | str = "auto"):
        if valid_states not in (True, False, "auto"):
            raise ConfigError(f"valid_states={valid_states}: choose true, false or auto")
        if domain.level != "classical" or domain.functions:
            raise ConfigError(f"{domain.source}: constrained decoding covers STRIPS domains only "
                              f"('{domain.name}' is {domain.level} or has functions; "
                              "set backend.constrained=false)")
        self.domain, self.distinct_atoms = domain, distinct_atoms
        self.world: World | None = world_for(domain) if valid_states else None
        if valid_states is True and self.world is None:
            raise ConfigError(f"{domain.source}: valid_states=true needs a domain with a state model "
                              "(Blocksworld or Gripper); use auto or false")
        self.typed = ":typing" in domain.requirements
        self.types = sorted({*domain.types, ROOT_TYPE}) if self.typed else []
        self.constants = dict(domain.constants)
        # Cached per parse state; parse states are few (one per section position and object list).
        self._words = lru_cache(maxsize=65536)(self._words_uncached)
        self._usable = lru_cache(maxsize=4096)(self._usable_uncached)
        self._rest = lru_cache(maxsize=65536)(self._rest_uncached)
        self._fitting_atoms = lru_cache(maxsize=65536)(self._fitting_atoms_uncached)

    # ---- lexeme level ----------------------------------------------------------------------
    def start(self, description: str | None = None) -> State:
        """The state before any text; with ``description``, atoms keep to its stated relations
        (see :meth:`_stated`)."""
        if description is None:
            return State(ParseState())
        return State(ParseState(together=tuple(frozenset(re.findall(r"[\w-]+", c.lower()))
                                               for c in clauses(description))))

    def _copying(self, ps: ParseState) -> bool:
        """Do stated relations apply: a description given that names every declared object (as an
        explicit description does, fact by fact; an abstract one names few or none)."""
        if ps.together is None or not ps.objects:
            return False
        words = frozenset().union(*ps.together)
        return all(o in words for o, _ in ps.objects)

    def _stated(self, ps: ParseState, atom: Atom) -> bool:
        """An atom relating two or more declared objects only where one clause of the description
        names them together: the fact-by-fact text states every fact in a clause of its own, so
        ``(on d b)`` where no clause names d and b is a copy error, never a fact the text states
        (the check :mod:`~plansuite.nl2pddl.decoding.mentions` makes of a finished candidate)."""
        args = set(atom[1:]) - set(self.constants)
        return len(args) < 2 or any(args <= words for words in ps.together or ())

    def _usable_uncached(self, objects: tuple[tuple[str, str], ...]) -> dict[str, tuple[tuple[str, ...], ...]]:
        """Predicate -> the objects each argument may be, for predicates every argument can fill."""
        known = sorted({**self.constants, **dict(objects)}.items(), key=lambda kv: (len(kv[0]), kv[0]))
        out = {}
        for pred, types in self.domain.predicates.items():
            choices = tuple(tuple(o for o, t in known if self.domain.is_subtype(t, want)) for want in types)
            if all(choices):
                out[pred] = choices
        return out

    def _is_open(self, ps: ParseState, prefix: tuple[str, ...]) -> bool:
        """Can an atom starting with ``prefix`` (predicate, first arguments) still be new?

        Its completions number the product of the remaining arguments' choices; it is closed
        when the section already holds that many atoms with this prefix.
        """
        copying = self._copying(ps)
        if self.world is not None:
            return any(atom[:len(prefix)] == prefix and (not copying or self._stated(ps, atom))
                       for atom in self._fitting_atoms(ps.objects, ps.atoms))
        if copying:
            rest = self._usable(ps.objects)[prefix[0]][len(prefix) - 1:]
            return any(self._stated(ps, atom) and not (self.distinct_atoms and atom in ps.atoms)
                       for atom in ((*prefix, *more) for more in itertools.product(*rest)))
        if not self.distinct_atoms:
            return True
        completions = 1
        for choices in self._usable(ps.objects)[prefix[0]][len(prefix) - 1:]:
            completions *= len(choices)
        taken = sum(atom[:len(prefix)] == prefix for atom in ps.atoms)
        return taken < completions

    def _fitting_atoms_uncached(self, objects: tuple[tuple[str, str], ...],
                                atoms: frozenset[tuple[str, ...]]) -> frozenset[Atom]:
        """The atoms the grammar allows that some valid state holds together with ``atoms``
        (new ones only, with ``distinct_atoms``)."""
        assert self.world is not None
        world_objects = {o: t for o, t in objects if o not in self.constants}
        out = set()
        for pred, choices in self._usable(objects).items():
            for args in itertools.product(*choices):
                atom = (pred, *args)
                if atom in atoms and self.distinct_atoms:
                    continue
                if atom in atoms or find_state(self.world, world_objects, atoms | {atom}, ()) is not None:
                    out.add(atom)
        return frozenset(out)

    def _open_preds(self, ps: ParseState) -> list[str]:
        return [p for p in self._usable(ps.objects) if self._is_open(ps, (p,))]

    def _taken(self, ps: ParseState) -> set[str]:
        return {o for o, _ in ps.objects} | set(ps.pending) | set(self.constants) | RESERVED

    def lex(self, ps: ParseState, lexeme: str) -> ParseState | None:
        """The parse after ``lexeme`` (a word, ``(`` or ``)``), or ``None`` if it may not come next."""
        item = SCRIPT[ps.pos]
        step = replace(ps, pos=ps.pos + 1)
        if item == NAME:
            return step if _is_free_name(lexeme) else None
        if item == DOMAIN:
            return step if lexeme == self.domain.name.lower() else None
        if item == OBJECTS:
            return self._lex_objects(ps, step, lexeme)
        if item in (INIT, GOAL):
            return self._lex_atoms(ps, step, lexeme)
        return step if lexeme == item else None  # a literal; END takes nothing

    def _lex_objects(self, ps: ParseState, step: ParseState, lexeme: str) -> ParseState | None:
        if ps.sub == "type":
            if lexeme not in self.types:
                return None
            return replace(ps, sub="", objects=ps.objects + tuple((o, lexeme) for o in ps.pending),
                           pending=())
        if lexeme == ")":
            return replace(step, objects=ps.objects + tuple((o, ROOT_TYPE) for o in ps.pending),
                           pending=())
        if lexeme == "-":
            return replace(ps, sub="type") if self.typed and ps.pending else None
        if _is_free_name(lexeme) and lexeme not in self._taken(ps):
            return replace(ps, pending=ps.pending + (lexeme,))
        return None

    def _lex_atoms(self, ps: ParseState, step: ParseState, lexeme: str) -> ParseState | None:
        usable = self._usable(ps.objects)
        if ps.sub == "":
            if lexeme == ")":
                return replace(step, atoms=frozenset())
            return replace(ps, sub="pred") if lexeme == "(" and self._open_preds(ps) else None
        if ps.sub == "pred":
            if lexeme in usable and self._is_open(ps, (lexeme,)):
                return replace(ps, sub="args", pred=lexeme, args=())
            return None
        choices = usable[ps.pred]
        if len(ps.args) == len(choices):
            if lexeme != ")":
                return None
            atom = (ps.pred, *ps.args)
            return replace(ps, sub="", pred="", args=(), atoms=ps.atoms | {atom})
        if lexeme in choices[len(ps.args)] and self._is_open(ps, (ps.pred, *ps.args, lexeme)):
            return replace(ps, args=ps.args + (lexeme,))
        return None

    def _words_uncached(self, ps: ParseState) -> tuple[frozenset[str], bool]:
        """(every prefix of the fixed words allowed next, whether a free new name is allowed)."""
        item = SCRIPT[ps.pos]
        fixed: Iterable[str] = ()
        free = False
        if item == NAME:
            free = True
        elif item == DOMAIN:
            fixed = [self.domain.name.lower()]
        elif item == OBJECTS:
            if ps.sub == "type":
                fixed = self.types
            else:
                free, fixed = True, ["-"] if self.typed and ps.pending else []
        elif item in (INIT, GOAL):
            if ps.sub == "pred":
                fixed = self._open_preds(ps)
            elif ps.sub == "args":
                choices = self._usable(ps.objects)[ps.pred]
                fixed = ([o for o in choices[len(ps.args)] if self._is_open(ps, (ps.pred, *ps.args, o))]
                         if len(ps.args) < len(choices) else [])
        elif item != END and item not in PARENS:
            fixed = [item]
        return frozenset(w[:i] for w in fixed for i in range(1, len(w) + 1)), free

    # ---- character level --------------------------------------------------------------------
    def step(self, state: State, ch: str) -> State | None:
        """The state after one more character, or ``None`` if the text can no longer be valid."""
        ps = state.parse
        if ch in WORD_CHARS:
            word = state.word + ch
            prefixes, free = self._words(ps)
            if word in prefixes or (free and _is_free_name(word)):
                return State(ps, word)
            return None
        if state.word:
            ps = self.lex(ps, state.word)
            if ps is None:
                return None
        if SCRIPT[ps.pos] == END:
            return None  # nothing after the closing parenthesis: the decoder stops there
        if ch in WHITESPACE:
            run = 1 if state.word else state.ws + 1
            if SCRIPT[ps.pos] in (INIT, GOAL) and ps.sub:  # inside an atom: one space between words
                return State(ps, "", run) if ch == " " and run == 1 else None
            return State(ps, "", run) if run <= MAX_WS else None
        if ch in PARENS:
            after = self.lex(ps, ch)
            return State(after) if after is not None else None
        return None

    def feed(self, state: State | None, text: str) -> State | None:
        for ch in text:
            if state is None:
                return None
            state = self.step(state, ch)
        return state

    def accepts(self, state: State | None) -> bool:
        return state is not None and not state.word and SCRIPT[state.parse.pos] == END

    # ---- the shortest way out ---------------------------------------------------------------
    def _cheapest(self, ps: ParseState) -> str:
        """The lexeme that leads most directly to the end of the file."""
        item = SCRIPT[ps.pos]
        if item == NAME:
            return "p"
        if item == DOMAIN:
            return self.domain.name.lower()
        if item == OBJECTS:
            return min(self.types, key=len) if ps.sub == "type" else ")"
        if item in (INIT, GOAL):
            usable = self._usable(ps.objects)
            if ps.sub == "pred":  # "(" was only allowed because some predicate is open
                return min(self._open_preds(ps), key=lambda p: (len(usable[p]), len(p), p))
            if ps.sub == "args" and len(ps.args) < len(usable[ps.pred]):
                return next(o for o in usable[ps.pred][len(ps.args)]
                            if self._is_open(ps, (ps.pred, *ps.args, o)))
            return ")"
        return item

    def _finish_word(self, ps: ParseState, word: str) -> str:
        """The shortest suffix that makes ``word`` a complete allowed lexeme."""
        prefixes, free = self._words(ps)
        if word in prefixes:  # a prefix of fixed words: prefixes are all ASCII, try short suffixes
            done = [w for w in prefixes if w.startswith(word) and self.lex(ps, w) is not None]
            if done:
                return min(done, key=len)[len(word):]
        if free:
            for suffix in ("", *(f"{i}" for i in range(10)), *(f"x{i}" for i in range(100))):
                if len(word + suffix) <= MAX_NAME and self.lex(ps, word + suffix) is not None:
                    return suffix
        raise AssertionError(f"no way to finish {word!r} at {ps}")  # unreachable: step() checked

    def completion(self, state: State) -> str:
        """The shortest text (by this construction) that takes ``state`` to the accepting state."""
        if not state.word:
            return self._rest(state.parse, False)
        suffix = self._finish_word(state.parse, state.word)
        return suffix + self._rest(self.lex(state.parse, state.word + suffix), True)

    def _rest_uncached(self, ps: ParseState, after_word: bool) -> str:
        """:meth:`completion` from a parse state (``after_word``: a word was the last lexeme)."""
        out = []
        while SCRIPT[ps.pos] != END:
            lexeme = self._cheapest(ps)
            is_word = lexeme not in PARENS
            if is_word and after_word:
                out.append(" ")
            out.append(lexeme)
            after_word = is_word
            ps = self.lex(ps, lexeme)
        return "".join(out)


class _Node:
    __slots__ = ("children", "ids")

    def __init__(self):
        self.children: dict[str, _Node] = {}
        self.ids: list[int] = []


class ConstrainedProblemDecoding:
    """Per-row logits masks for :func:`plansuite.models.inference.sample_ids` from a
    :class:`ProblemGrammar` (see the module docstring).

    ``token_texts[i]`` is the text of token id ``i``; ``prefixes[row]`` is problem text already
    written before the row's first new token (a repair's kept prefix; ``""`` for a fresh start).
    """

    def __init__(self, grammar: ProblemGrammar, token_texts: Sequence[str], stop_ids: Iterable[int],
                 prefixes: Sequence[str], description: str | None = None):
        self.grammar, self.token_texts = grammar, list(token_texts)
        self.stop_ids = sorted(set(stop_ids))
        self.vocab = len(self.token_texts)
        self.root = _Node()
        allowed_chars = WORD_CHARS | WHITESPACE | PARENS
        for i, text in enumerate(self.token_texts):
            if not text or not set(text) <= allowed_chars or i in self.stop_ids:
                continue  # never part of a problem text (specials, non-ASCII, punctuation)
            node = self.root
            for ch in text:
                node = node.children.setdefault(ch, _Node())
            node.ids.append(i)
        self.rows: dict[int, tuple[int, State | None]] = {}
        self.prefix_states = [grammar.feed(grammar.start(description), p) for p in prefixes]
        for row, state in enumerate(self.prefix_states):
            if state is None:
                raise ConfigError(f"constrained decoding: the kept prefix of row {row} is not a "
                                  f"valid start of a problem ({prefixes[row][:60]!r}...)")
        self._masks: dict[State, torch.Tensor] = {}
        self._after: dict[State, tuple[torch.Tensor, torch.Tensor]] = {}

    def state(self, row: int, ids: Sequence[int]) -> State | None:
        """The automaton after the row's prefix and ``ids`` (incremental: ids only grow)."""
        fed, state = self.rows.get(row, (0, self.prefix_states[row]))
        for t in ids[fed:]:
            state = self.grammar.feed(state, self.token_texts[t])
        self.rows[row] = (len(ids), state)
        return state

    def _allowed(self, state: State) -> torch.Tensor:
        mask = self._masks.get(state)
        if mask is None:
            ids: list[int] = []
            stack = [(self.root, state)]
            while stack:
                node, st = stack.pop()
                for ch, child in node.children.items():
                    nxt = self.grammar.step(st, ch)
                    if nxt is not None:
                        ids.extend(child.ids)
                        stack.append((child, nxt))
            mask = self._mask(ids)
            if len(self._masks) > 100_000:
                self._masks.clear()
                self._after.clear()
            self._masks[state] = mask
        return mask

    def _fitting(self, state: State, steps_after: int) -> torch.Tensor:
        """Allowed tokens after which the shortest completion still fits ``steps_after`` steps
        (one character per step at worst, plus the stop token)."""
        lengths = self._after.get(state)
        if lengths is None:  # per state: token -> length of the shortest completion after it
            ids = self._allowed(state).nonzero().squeeze(1)
            after = [len(self.grammar.completion(self.grammar.feed(state, self.token_texts[i])))
                     for i in ids.tolist()]
            lengths = self._after[state] = (ids, torch.tensor(after, dtype=torch.long))
        ids, after = lengths
        mask = torch.zeros(self.vocab, dtype=torch.bool)
        mask[ids[after + 1 <= steps_after]] = True
        return mask

    def _mask(self, ids: Iterable[int]) -> torch.Tensor:
        mask = torch.zeros(self.vocab, dtype=torch.bool)
        mask[list(ids)] = True
        return mask

    def _along(self, text: str) -> torch.Tensor:
        """Tokens whose text is a non-empty prefix of ``text``."""
        ids, node = [], self.root
        for ch in text:
            node = node.children.get(ch)
            if node is None:
                break
            ids += node.ids
        return self._mask(ids)

    def __call__(self, rows: Sequence[int], new: Sequence[Sequence[int]], logits: torch.Tensor,
                 steps_left: int) -> torch.Tensor:
        """Mask ``logits`` (one line per live row, ``rows[i]`` its prompt index) in place."""
        for i, row in enumerate(rows):
            state = self.state(row, new[row])
            if state is None or self.grammar.accepts(state):  # None: a stop token was fed
                mask = self._mask(self.stop_ids)
            else:
                finish = len(self.grammar.completion(state))
                if steps_left <= finish + 1:
                    mask = self._along(self.grammar.completion(state))
                elif steps_left <= finish + 1 + MAX_JUMP:
                    mask = self._fitting(state, steps_left - 1)
                else:
                    mask = self._allowed(state)
            keep = torch.zeros(logits.shape[-1], dtype=torch.bool)  # ids past the tokenizer: never
            keep[:self.vocab] = mask[:logits.shape[-1]]
            logits[i, ~keep.to(logits.device)] = float("-inf")
        return logits
