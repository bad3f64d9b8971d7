"""Numeric expressions and comparisons (PDDL 2.1 goals and metrics) in a canonical form.

An expression is a number (its canonical text, ``"1"``, ``"2.5"``, ``"-1"``), a function term
``("value", "c0")`` or an operation ``("+", e1, e2, ...)``; a comparison is ``("<=", e1, e2)``.
:func:`canonical` makes equal what only differs in writing:

* ``+`` and ``*`` are flattened (``(+ a (+ b c))`` is ``(+ a b c)``) and their operands sorted by
  their canonical text; their number operands are folded into one (exactly, with fractions), and
  a neutral ``0`` / ``1`` is dropped; an operation on numbers only becomes its value;
* unary minus ``(- x)`` is ``(* -1 x)``;
* ``>`` and ``>=`` become ``<`` and ``<=`` with their operands swapped; ``=`` sorts its two.

Object names are kept, so two problems compare equal under a renaming when their renamed
canonical forms are equal (:func:`rename`); :mod:`plansuite.nl2pddl.judging.graphs` puts the same trees
into the problem graph so the renaming is found jointly with the rest of the problem.

:func:`expr_text` writes ``+`` and ``*`` as nested binary operations: VAL and ENHSP read neither
n-ary operations nor (ENHSP) unary minus, so canonical text is text every tool reads.

>>> expr_text(canonical(parse_expr("(>= (value c1) (+ 1 (value c0)))")))
'(<= (+ (value c0) 1) (value c1))'
>>> expr_text(canonical(parse_expr("(* 2 (- (f a)) 3 (+ 1 (g)))")))
'(* (* (+ (g) 1) (f a)) -6)'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction

Expr = str | tuple  # a number's text, or (operator or function name, *operands or arguments)

COMPARISONS = frozenset({"<", "<=", ">", ">=", "="})
ARITHMETIC = frozenset({"+", "-", "*", "/"})
COMMUTATIVE = frozenset({"+", "*"})
FLIPPED = {">": "<", ">=": "<="}
NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}  # (not (< a b)) is (>= a b)
_NUMBER = re.compile(r"-?\d+(\.\d+)?")  # as VAL and the planners read numbers
_TOKEN = re.compile(r"\(|\)|[^\s()]+")


def is_number(token: object) -> bool:
    """
    >>> is_number("-2.5"), is_number("c0"), is_number(("f",))
    (True, False, False)
    """
    return isinstance(token, str) and bool(_NUMBER.fullmatch(token))


def number_text(value: Fraction | float) -> str:
    """A PDDL number: integers without a decimal point, as people and IPC files write them.

    >>> number_text(3.0), number_text(2.5), number_text(-1.0), number_text(Fraction(-5, 2))
    ('3', '2.5', '-1', '-2.5')
    """
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def parse_expr(text: str) -> Expr:
    """The tree of one s-expression text (lower-cased); unbalanced text is a ``ValueError``.

    >>> parse_expr("(+ (Value c0) 1)")
    ('+', ('value', 'c0'), '1')
    """
    tokens = _TOKEN.findall(text.lower())
    stack: list[list] = [[]]
    for token in tokens:
        if token == "(":
            stack.append([])
        elif token == ")":
            if len(stack) == 1:
                raise ValueError(f"unbalanced parentheses in {text!r}")
            done = tuple(stack.pop())
            stack[-1].append(done)
        else:
            stack[-1].append(token)
    if len(stack) != 1 or len(stack[0]) != 1:
        raise ValueError(f"expected one expression in {text!r}")
    return stack[0][0]


def from_tree(node) -> Expr:
    """An expression from nested lists of tokens (the reader's nodes), numbers normalised.

    >>> from_tree(["+", ["value", "c0"], "1.50"])
    ('+', ('value', 'c0'), '1.5')
    """
    if isinstance(node, str):
        return number_text(Fraction(node)) if is_number(node) else node
    return tuple(from_tree(item) for item in node)


def expr_text(expr: Expr) -> str:
    """PDDL text; ``+`` and ``*`` with more than two operands nest to the left.

    >>> expr_text(("+", ("f", "a"), "1", ("g",)))
    '(+ (+ (f a) 1) (g))'
    """
    if isinstance(expr, str):
        return expr
    head, *rest = expr
    if head in COMMUTATIVE and len(rest) > 2:
        return expr_text((head, (head, *rest[:-1]), rest[-1]))
    return "(" + " ".join([head, *map(expr_text, rest)]) + ")"


def rename(expr: Expr, mapping: Mapping[str, str]) -> Expr:
    """Function arguments renamed by ``mapping`` (then :func:`canonical` re-sorts operands).

    >>> rename(("<=", ("value", "c0"), ("value", "c1")), {"c0": "x"})
    ('<=', ('value', 'x'), ('value', 'c1'))
    """
    if isinstance(expr, str):
        return expr
    head, *rest = expr
    if head in COMPARISONS or head in ARITHMETIC:
        return (head, *(rename(e, mapping) for e in rest))
    return (head, *(mapping.get(a, a) for a in rest))


def canonical(expr: Expr) -> Expr:
    """The canonical form (module docstring) of an expression or comparison.

    >>> canonical(("<", ("f", "b"), ("+", "0", ("f", "a")))) == canonical((">", ("f", "a"), ("f", "b")))
    True
    >>> canonical(("-", ("/", "3", "4")))
    '-0.75'
    """
    if isinstance(expr, str):
        return number_text(Fraction(expr)) if is_number(expr) else expr
    head, *rest = expr
    if head in COMPARISONS:
        left, right = (canonical(e) for e in rest)
        if head in FLIPPED:
            return FLIPPED[head], right, left
        return (head, *sorted((left, right), key=expr_text)) if head == "=" else (head, left, right)
    if head not in ARITHMETIC:
        return expr  # a function term
    operands = [canonical(e) for e in rest]
    if head == "-" and len(operands) == 1:
        return canonical(("*", "-1", operands[0]))
    if head in COMMUTATIVE:
        return _commutative(head, operands)
    left, right = operands
    if is_number(left) and is_number(right) and not (head == "/" and Fraction(right) == 0):
        a, b = Fraction(left), Fraction(right)
        return number_text(a - b if head == "-" else a / b)
    return head, left, right


def _commutative(head: str, operands: list[Expr]) -> Expr:
    flat: list[Expr] = []
    for e in operands:
        flat += list(e[1:]) if isinstance(e, tuple) and e[0] == head else [e]
    neutral = Fraction(0 if head == "+" else 1)
    value = neutral
    for e in flat:
        if is_number(e):
            value = value + Fraction(e) if head == "+" else value * Fraction(e)
    rest = sorted((e for e in flat if not is_number(e)), key=expr_text)
    if value != neutral or not rest:
        rest.append(number_text(value))
    return rest[0] if len(rest) == 1 else (head, *rest)


def shape(expr: Expr, objects: Mapping[str, str]) -> Expr:
    """``expr`` with each object replaced by its type: what no renaming of objects changes.

    >>> expr_text(shape(("<=", ("value", "c0"), "1"), {"c0": "counter"}))
    '(<= (value <counter>) 1)'
    """
    return canonical(rename(expr, {o: f"<{t}>" for o, t in objects.items()}))


def is_comparison(node) -> bool:
    """Whether a tree (tokens and lists) is a numeric comparison, not object equality
    ``(= ?x ?y)`` / ``(= a b)``.

    >>> is_comparison(["<=", ["f", "a"], "1"]), is_comparison(["=", "a", "b"])
    (True, False)
    """
    return (not isinstance(node, str) and len(node) > 0 and node[0] in COMPARISONS
            and not (node[0] == "=" and len(node) == 3
                     and all(isinstance(x, str) and not is_number(x) for x in node[1:])))
