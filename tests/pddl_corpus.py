"""A deterministic corpus of PDDL as people write it: valid-but-unusual variants of good files
(case, comments, whitespace, reordering) and malformed files of every kind the suite must refuse
with one line. Used by the robustness tests; no plansuite code builds it.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    name: str
    data: bytes
    construct: str = ""  # for malformed files: a fragment the error line must contain


# ---- valid variants ---------------------------------------------------------------------------
def _tokens(text: str) -> list[str]:
    return re.findall(r"\(|\)|;[^\n]*|[^\s();]+|\s+", text)


def upper(text: str, rng: random.Random) -> str:
    return text.upper()


def mixed_case(text: str, rng: random.Random) -> str:
    """Every letter upper or lower at random: ``b2`` in one place, ``B2`` in the next."""
    return "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in text)


def commented(text: str, rng: random.Random) -> str:
    """Comments (holding parentheses, upper case and UTF-8) after random tokens, on own lines."""
    notes = ["; a comment", ";; (not (on a b)) ) (", "; ÄÖÜ – ünïcode", ";(:GOAL (AND))", ";"]
    out = ["; leading comment\n"]
    for tok in _tokens(text):
        out.append(tok)
        if tok == ")" and rng.random() < 0.3:
            out.append(f" {rng.choice(notes)}\n")
    return "".join(out) + "\n; trailing comment without newline"


def reformatted(text: str, rng: random.Random) -> str:
    """Whitespace changed everywhere it may be: tabs, CRLF, blank lines, none after '('."""
    out = []
    for tok in _tokens(text):
        if tok.isspace():
            out.append(rng.choice([" ", "\t", "\r\n", "\n\n   ", "  \t "]))
        elif tok.startswith(";"):  # a comment ends at the line break, whatever follows
            out.append(tok + "\n")
        else:
            out.append(tok)
            if tok == "(" and rng.random() < 0.3:
                out.append(rng.choice(["", " ", "\n"]))
            if tok == ")" and rng.random() < 0.3:
                out.append(rng.choice(["\n", "\r\n\t"]))
    return "".join(out)


def _shuffle_lines_between(text: str, start: str, rng: random.Random) -> str:
    """Shuffle the one-atom lines of the canonical block that begins with ``start``."""
    lines = text.split("\n")
    try:
        i = next(n for n, ln in enumerate(lines) if ln.strip().startswith(start))
    except StopIteration:
        return text
    j = i + 1
    while j < len(lines) and lines[j].startswith("    ("):
        j += 1
    block = lines[i + 1:j]
    rng.shuffle(block)
    return "\n".join(lines[:i + 1] + block + lines[j:])


def reordered_problem(text: str, rng: random.Random) -> str:
    """:init facts, goal conjuncts and objects in another order (canonical problem text)."""
    text = _shuffle_lines_between(text, "(:init", rng)
    text = _shuffle_lines_between(text, "(:goal", rng)
    m = re.search(r"\(:objects ([^)]*)\)", text)
    if m and " - " not in m.group(1):
        objects = m.group(1).split()
        rng.shuffle(objects)
        text = text[:m.start(1)] + " ".join(objects) + text[m.end(1):]
    return text


def reordered_domain(text: str, rng: random.Random) -> str:
    """Actions in another order (each ``(:action`` block moved whole)."""
    head, *actions = re.split(r"(?=\(:action )", text)
    actions[-1] = actions[-1].rstrip()
    tail = ""
    while actions[-1].endswith(")") and actions[-1].count("(") < actions[-1].count(")"):
        actions[-1], tail = actions[-1][:-1], ")" + tail
    rng.shuffle(actions)
    return head + "".join(a.rstrip() + "\n  " for a in actions) + tail + "\n"


VALID_PROBLEM_VARIANTS = {"upper": upper, "mixed": mixed_case, "comments": commented,
                          "whitespace": reformatted, "reordered": reordered_problem}
VALID_DOMAIN_VARIANTS = {"upper": upper, "mixed": mixed_case, "comments": commented,
                         "whitespace": reformatted, "reordered": reordered_domain}


def valid_variants(text: str, seed: int, variants: dict) -> list[Case]:
    rng = random.Random(seed)
    cases = [Case(name, fn(text, rng).encode()) for name, fn in variants.items()]
    everything = variants["reordered"](text, rng)  # first: it reads the canonical layout
    for name in ("comments", "whitespace", "mixed"):
        everything = variants[name](everything, rng)
    return [*cases, Case("all", everything.encode())]


# ---- malformed problems -----------------------------------------------------------------------
def malformed_problems(text: str, seed: int) -> list[Case]:
    """Broken copies of a valid blocksworld problem (canonical text), each with what its error
    line must name."""
    rng = random.Random(seed)
    objects = re.search(r"\(:objects ([^)]*)\)", text).group(1).split()
    obj = rng.choice(objects)
    cut = rng.randrange(10, len(text) - 2)
    deep = 3000 + rng.randrange(8000)
    token = "x" * (40_000 + rng.randrange(10_000))
    init = "  (:init\n"
    cases = [
        ("undeclared-object", text.replace(init, init + "    (clear zz9)\n"), "(clear zz9)"),
        ("undeclared-object-case", text.replace(init, init + f"    (CLEAR {obj.upper()}Q)\n"),
         f"(clear {obj}q)"),
        ("undeclared-predicate", text.replace(init, init + f"    (shiny {obj})\n"), f"(shiny {obj})"),
        ("arity", text.replace(init, init + f"    (on {obj})\n"), f"(on {obj})"),
        ("arity-nullary", text.replace(init, init + f"    (arm-empty {obj})\n"), "arm-empty"),
        ("domain-name", text.replace("(:domain blocksworld-4ops)", "(:domain gripper)"),
         "(:domain gripper)"),
        ("truncated", text[:cut], "problem"),
        ("extra-paren", text + ")", "problem"),
        ("unclosed", text.replace("(:init", "(:init (", 1), "problem"),
        ("deep-nesting", text.replace("(:goal (and", "(:goal (and " + "(not " * deep
                                      + "(clear a)" + ")" * deep, 1), "problem"),
        ("long-token", text.replace(init, init + f"    (clear {token})\n"), "init"),
        ("undeclared-function", text.replace(init, init + f"    (= (weight {obj}) 3)\n"),
         "(weight"),
        ("duplicate-object", text.replace("(:objects ", f"(:objects {obj} ", 1), "problem"),
        ("negative-goal", text.replace("(:goal (and", f"(:goal (and (not (clear {obj}))", 1),
         "goal"),
        ("disjunction", text.replace("(:goal (and", f"(:goal (and (or (clear {obj}) (arm-empty))",
                                     1), "requirement"),
        ("empty", "", "problem"),
        ("only-comment", "; nothing here\n", "problem"),
        ("not-pddl", "hello world, this is not PDDL\n", "problem"),
        ("domain-instead", "(define (domain x) (:predicates (p)))", "problem"),
        ("keyword-typo", text.replace("(:init", "(:inti", 1), "problem"),
        ("number-as-object", text.replace(init, init + "    (clear 42)\n"), "problem"),
        ("variable-in-init", text.replace(init, init + "    (clear ?x)\n"), "problem"),
        ("derived-in-problem", text.replace(init, "  (:derived (clear a) (arm-empty))\n" + init),
         "problem"),
    ]
    out = [Case(name, body.encode(), construct) for name, body, construct in cases]
    out.append(Case("not-utf8", text.encode()[:40] + b"\xff\xfe\x80" + text.encode()[40:],
                    "UTF-8"))
    out.append(Case("binary", bytes(rng.randrange(256) for _ in range(200)), "problem"))
    return out


# ---- malformed domains ------------------------------------------------------------------------
def malformed_domains(text: str, seed: int) -> list[Case]:
    """Broken copies of the built-in blocksworld domain text."""
    rng = random.Random(seed)
    preds = "(:predicates (clear ?x)"
    deep = 3000 + rng.randrange(8000)
    cut = rng.randrange(10, len(text) - 2)
    action = "(:action pickup"
    cases = [
        ("duplicate-predicate", text.replace(preds, preds + " (clear ?x ?y)"), "predicate clear"),
        ("duplicate-predicate-same", text.replace(preds, preds + " (clear ?y)"), "predicate clear"),
        ("duplicate-predicate-case", text.replace(preds, preds + " (CLEAR ?x ?y)"),
         "predicate clear"),
        ("duplicate-action", text.replace(action, "(:action PICKUP :parameters (?x) :precondition "
                                          "(clear ?x) :effect (holding ?x))\n  " + action),
         "action pickup"),
        ("derived", text.replace(action, "(:derived (clear ?x) (arm-empty))\n  " + action),
         "(:derived"),
        ("deep-nesting", text.replace(":precondition (holding ?ob)", ":precondition "
                                      + "(not " * deep + "(holding ?ob)" + ")" * deep), "domain"),
        ("undeclared-predicate", text.replace(":precondition (holding ?ob)",
                                              ":precondition (hold ?ob)"), "(hold ?ob)"),
        ("arity", text.replace(":precondition (holding ?ob)", ":precondition (holding ?ob ?ob)"),
         "holding"),
        ("undeclared-variable", text.replace(":precondition (holding ?ob)",
                                             ":precondition (holding ?zz)"), "?zz"),
        ("truncated", text[:cut], "domain"),
        ("extra-paren", text + ")", "domain"),
        ("conditional-effect", text.replace("(:requirements :strips)",
                                            "(:requirements :strips :conditional-effects)"),
         "requirement :conditional-effects"),
        ("typed-without-typing", text.replace("(?ob ?underob)", "(?ob ?underob - block)", 1),
         "domain"),
        ("long-token", text.replace(":precondition (holding ?ob)", ":precondition ("
                                    + "y" * 45_000 + " ?ob)"), "is not declared"),
        ("empty", "", "domain"),
        ("problem-instead", "(define (problem p) (:domain d) (:init) (:goal (and)))", "domain"),
        ("keyword-typo", text.replace(":effect", ":efect", 1), "domain"),
        ("disjunctive-precondition", text.replace(":precondition (holding ?ob)",
                                                  ":precondition (or (holding ?ob) (arm-empty))"),
         "domain"),
    ]
    out = [Case(name, body.encode(), construct) for name, body, construct in cases]
    out.append(Case("not-utf8", b"\xff" + text.encode(), "UTF-8"))
    return out
