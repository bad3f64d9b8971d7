"""Which objects a description mentions together: a check of copied facts that reads the text itself.

A description that names every object of a candidate problem (an *explicit* one: "block c rests
on block b, block b is on the table, ...") states each fact of the problem in a clause that
names the fact's objects. So a fact relating two or more objects that no clause names together
-- ``(on d b)`` where the text only ever says "c rests on b" and "d sits on a" -- was not copied
from the text, whatever the generator believes. The reverse holds too: a clause naming exactly
the objects of some fact the domain could state (two blocks, "block e rests on block h") needs a
fact relating exactly those objects, and a candidate that has none (``(on-table e)`` instead)
left that clause out. And whatever the description, an object that no fact of the candidate
mentions and the text never names was declared for nothing (a fourth ball for a two-ball scene):
it is checked first, since it also hides the candidate from the checks above (the text no longer
names every object).

The check knows nothing of the domain's predicates or of the description's wording: only the
candidate's object names, found as whole words, and clauses cut at punctuation and "and". It
is the likelihood critic's first look (:class:`~plansuite.nl2pddl.models.likelihood_critic.LikelihoodCritic`,
``critic.mentions``), because the generator's own likelihood misses exactly these copy errors: a
generator that wrote ``(on d b)`` finds it likely. It says nothing (``None``) when the
description does not name every object of the candidate (an *abstract* description: "two towers
of four blocks"), where no clause has to name a fact's objects. Names that are also English
words ("a" in "a state in which") are found where they are not meant, so they count for a fact
(a clause may name them) but not against one (a clause relating "a" and "c" may just say "a
state in which block c ...").

>>> facts = [("init", "(on c b)", 5), ("init", "(on d b)", 6)]
>>> text = "Blocks a, b, c and d. Block c rests on block b, block d sits on block a."
>>> unsupported_facts(text, ["a", "b", "c", "d"], facts)
[('init', '(on d b)', 6)]
>>> unstated_relations(text, ["a", "b", "c", "d"], facts)
[]
>>> unstated_relations("Block e rests on block h; a is on b.", ["a", "b", "e", "h"],
...                    [("init", "(on-table e)", 5), ("init", "(on a b)", 6)])
[('e', 'h')]
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from plansuite.nl2pddl.data.describe import named
from plansuite.nl2pddl.decoding.generators import (
    atom_names,
    declaration,
    section_end,
    section_starts,
)
from plansuite.nl2pddl.judging.critic import CriticVerdict

# Object names that are also words a description uses as words: found where no object is meant.
ENGLISH_WORDS = frozenset({"a", "an", "the", "i", "in", "on", "at", "is", "it", "to", "of", "and",
                           "or", "as", "be", "by", "no", "not", "each", "every", "all", "one", "two"})
Fact = tuple[str, str, int]  # (section, atom text, line of the problem text)
KIND_OF_SECTION = {"init": "init", "goal": "goal"}


def clauses(description: str) -> list[str]:
    """``description`` cut at punctuation and at the word "and" (a fact's clause never holds either).

    >>> clauses("Initially, a is on b and c is clear; the arm is empty.")
    ['Initially', ' a is on b ', ' c is clear', ' the arm is empty']
    """
    return [c for c in re.split(r"[.;,:()]|\band\b", description) if c.strip()]


def names_every_object(description: str, objects: Iterable[str]) -> bool:
    """Does ``description`` name each of ``objects`` (the condition for the checks below)?"""
    objects = list(objects)
    return bool(objects) and named(description, objects) == frozenset(objects)


def unsupported_facts(description: str, objects: Iterable[str], facts: list[Fact]) -> list[Fact]:
    """The ``facts`` (in order) relating two or more objects that no clause names together."""
    together = [named(c, objects) for c in clauses(description)]
    return [f for f in facts
            if len(args := atom_names(f[1])) >= 2 and not any(args <= names for names in together)]


def unstated_relations(description: str, objects: Iterable[str], facts: list[Fact]) -> list[tuple[str, ...]]:
    """The sets of objects (sorted) that a clause names together, two or more but no more than a
    fact of ``facts`` relates, that no fact relates exactly (names that are English words left
    out of the clauses)."""
    related = {atom_names(f[1]) for f in facts}
    widest = max((len(a) for a in related), default=0)
    meant = [n for n in objects if n.lower() not in ENGLISH_WORDS]
    out: list[tuple[str, ...]] = []
    for clause in clauses(description):
        names = named(clause, meant)
        if 2 <= len(names) <= widest and names not in related and tuple(sorted(names)) not in out:
            out.append(tuple(sorted(names)))
    return out


def idle_objects(description: str, objects: Iterable[str], facts: list[Fact]) -> list[str]:
    """The declared ``objects`` (in order) that no fact mentions and the description never names:
    declared for nothing, like a fourth ball in the ``:objects`` of a two-ball description.

    >>> facts = [("init", "(at blue hall)", 5), ("init", "(at red hall)", 6)]
    >>> idle_objects("Two balls, blue and red, in the hall.", ["blue", "green", "red", "hall"], facts)
    ['green']
    """
    used = frozenset().union(*(atom_names(f[1]) for f in facts))
    spoken = named(description, objects)
    return [o for o in objects if o not in used and o not in spoken]


def declared_at(problem_text: str, name: str) -> int | None:
    """The line of ``problem_text`` where ``:objects`` declares ``name`` (``None`` if it does not)."""
    m = declaration(problem_text, name)
    return None if m is None else problem_text.count("\n", 0, m.end()) + 1


def problem_facts(problem_text: str) -> list[Fact]:
    """The atoms written in ``:init`` and ``:goal`` of a problem text, with their section and line.

    >>> problem_facts("(define (problem p)\\n (:init\\n  (on a b))\\n (:goal (and (clear a))))")
    [('init', '(on a b)', 3), ('goal', '(clear a)', 4)]
    """
    starts = section_starts(problem_text)
    out: list[Fact] = []
    for at, name in sorted((at, name) for name, at in starts.items()):
        if name not in KIND_OF_SECTION:
            continue
        end = section_end(problem_text, starts, at)
        for m in re.finditer(r"\(\s*(?!:|and\b)[^()\s][^()]*\)", problem_text[at + 1:end]):
            where = at + 1 + m.start()
            out.append((name, " ".join(m.group(0).split()), problem_text.count("\n", 0, where) + 1))
    return out


def mention_verdict(description: str, problem_text: str, objects: Iterable[str]) -> CriticVerdict | None:
    """A rejection naming the first object declared for nothing (any description), else, where
    the description names every object, the first fact no clause supports or the first clause no
    fact states; ``None`` when the check finds nothing.

    An idle object is checked first and for abstract descriptions too: a problem's objects are
    there to be related, and an extra one hides the others from the checks below (the text no
    longer names every object), as it did for a Gripper generator declaring four balls for two.
    """
    objects = [o.lower() for o in objects]
    facts = problem_facts(problem_text)
    if idle := idle_objects(description, objects, facts):
        return CriticVerdict(False, "object", 0.0,
                             f"{idle[0]} is declared, but no fact mentions it and the description never names it",
                             idle[0], declared_at(problem_text, idle[0]))
    if not names_every_object(description, objects):
        return None
    if bad := unsupported_facts(description, objects, facts):
        section, atom, line = bad[0]
        return CriticVerdict(False, KIND_OF_SECTION[section], 0.0,
                             f"{atom} in :{section} relates objects no clause of the description "
                             "names together", atom, line)
    if missing := unstated_relations(description, objects, facts):
        return CriticVerdict(False, None, 0.0,
                             f"the description relates {' and '.join(missing[0])} in one clause, "
                             "and no fact of the problem relates exactly them", related=missing[0])
    return None
