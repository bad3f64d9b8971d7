"""PDDL 2.1 domains (numeric fluents, ``:durative-action``) read from the reader's s-expressions.

``pddl`` 0.5.1 parses numeric domains but not durative actions, so both levels are read here from
the tree :func:`plansuite.pddl.reader.scan` builds (already case-folded, size- and depth-bounded):
one reader, one set of located diagnostics for both. What is read:

* ``:functions`` with typed parameters (an optional ``- number`` result type is accepted);
* conditions: conjunctions of literals, ``(= ?x ?y)``, comparisons ``< <= > >= =`` of numeric
  expressions (``+ - * /``, numbers, function terms, ``?duration`` in durations);
* effects: add/delete, ``increase decrease assign scale-up scale-down``;
* durative actions: ``:duration (= ?duration expr)``, conditions under ``at start / at end /
  over all`` and effects under ``at start / at end``.

Disjunctions, quantifiers, conditional effects and duration inequalities are refused with one
located line each. The suite never simulates these actions: planners (ENHSP, TAMER) and VAL read
the files; the parsed :class:`~plansuite.pddl.model.Action21` serve checks and tests.
"""

from __future__ import annotations

from plansuite.errors import PDDLError
from plansuite.pddl.checks import (
    ASSIGNMENTS,
    Diagnostic,
    check_atom,
    check_domain,
    check_function_term,
    raise_first,
)
from plansuite.pddl.expressions import ARITHMETIC, COMMUTATIVE, is_comparison, is_number
from plansuite.pddl.model import ROOT_TYPE, Action21, Domain
from plansuite.pddl.reader import Node, line_of, lower_ascii, scan

NUMERIC_REQUIREMENTS = frozenset({":numeric-fluents", ":fluents"})
TEMPORAL_REQUIREMENTS = frozenset({":durative-actions"})
SUPPORTED = frozenset({":strips", ":typing", ":negative-preconditions", ":equality",
                       ":action-costs"}) | NUMERIC_REQUIREMENTS | TEMPORAL_REQUIREMENTS
TIMES = {("at", "start"): "at start", ("at", "end"): "at end", ("over", "all"): "over all"}
def text_of(node: Node | str) -> str:
    """Canonical single-spaced text of a form."""
    if isinstance(node, str):
        return node
    return "(" + " ".join(text_of(item) for item in node) + ")"


def needs_pddl21(text: str, source: str = "<domain>") -> bool:
    """Whether a domain text declares numeric/temporal requirements, a numeric function other
    than ``total-cost`` or a durative action (then :func:`parse_domain21` reads it, not the
    STRIPS path, and names what is missing, e.g. the requirement).

    >>> needs_pddl21("(define (domain d) (:requirements :typing) (:functions (value ?c)))")
    True
    >>> needs_pddl21("(define (domain d) (:requirements :action-costs) (:functions (total-cost)))")
    False
    """
    root = scan(lower_ascii(text), source, "domain")  # scan errors name the file
    for section in _sections(root):
        if section.head() == ":durative-action":
            return True
        if section.head() == ":requirements" and \
                set(section[1:]) & (NUMERIC_REQUIREMENTS | TEMPORAL_REQUIREMENTS):
            return True
        if section.head() == ":functions" and any(
                isinstance(f, Node) and f.head() not in (None, "total-cost") for f in section[1:]):
            return True
    return False


def _sections(root: Node | None) -> list[Node]:
    if root is None or len(root) != 1 or not isinstance(root[0], Node) or root[0].head() != "define":
        return []
    return [s for s in root[0][1:] if isinstance(s, Node)]


def _timing(node: Node) -> str | None:
    """``at start`` / ``at end`` / ``over all`` when ``node`` is ``(at start X)`` etc."""
    if len(node) == 3 and isinstance(node[0], str) and isinstance(node[1], str):
        return TIMES.get((node[0], node[1]))
    return None


def typed_list(items: list, source: str, where: str) -> list[tuple[str, str]]:
    """``a b - t c`` -> ``[(a, t), (b, t), (c, object)]``; ``either`` is refused."""
    out: list[tuple[str, str]] = []
    pending: list[str] = []
    i = 0
    while i < len(items):
        item = items[i]
        if item == "-":
            if i + 1 >= len(items) or not isinstance(items[i + 1], str):
                raise PDDLError(source, where, "'-' must be followed by a type name "
                                "('either' types are not supported)", kind="unsupported")
            out += [(name, items[i + 1]) for name in pending]
            pending, i = [], i + 2
            continue
        if not isinstance(item, str):
            raise PDDLError(source, where, f"expected a name, got {text_of(item)}", kind="parse")
        pending.append(item)
        i += 1
    return out + [(name, ROOT_TYPE) for name in pending]


class Reader:
    """Walks one domain's actions (or, given a problem's objects, its goal comparisons), collecting
    a diagnostic for every problem it sees."""

    def __init__(self, domain: Domain, text: str, source: str | None = None,
                 objects: dict[str, str] | None = None):
        self.domain, self.text, self.src = domain, text, source or domain.source
        self.objects = domain.constants if objects is None else objects  # names terms may use
        # n-ary + and * (PDDL 3.1): read in problems' goal comparisons, which the suite
        # compares; refused in domains, whose actions VAL and ENHSP must read (both refuse them)
        self.nary = objects is not None
        self.out: list[Diagnostic] = []
        self.uses_numeric = self.uses_durative = False

    def line(self, node) -> int | None:
        return line_of(self.text, node.start) if isinstance(node, Node) else None

    def add(self, kind: str, construct: str, message: str, node=None) -> None:
        self.out.append(Diagnostic(kind, self.src, construct, message, self.line(node)))

    # ---- conditions ---------------------------------------------------------------------------
    def condition(self, node, where: str, params: dict, durative: bool, when: str = "") -> list:
        if not isinstance(node, Node) or not node.head():
            if isinstance(node, Node) and not node:
                return []  # () is the empty conjunction
            self.add("parse", where, f"expected a condition, got {text_of(node)}", node)
            return []
        head = node.head()
        if head == "and":
            return [c for item in node[1:] for c in self.condition(item, where, params, durative, when)]
        timing = _timing(node)
        if timing is not None:
            if not durative or when:
                self.add("parse", f"{where} {text_of(node)}", "a time specifier belongs directly "
                         "in a durative action's :condition or :effect", node)
                return []
            return self.condition(node[2], where, params, durative, timing)
        if durative and not when:
            self.add("parse", f"{where} {text_of(node)}", "a durative action's condition needs "
                     "'at start', 'at end' or 'over all'", node)
            return []
        if head in ("or", "imply", "forall", "exists"):
            self.add("unsupported", f"{where} {text_of(node)}",
                     f"'{head}' is not supported (conjunctions of literals and comparisons only)", node)
            return []
        if head == "not" and len(node) == 2 and isinstance(node[1], Node):
            self.literal(node[1], where, params)
        elif is_comparison(node) and len(node) == 3:
            self.uses_numeric = True
            for operand in node[1:]:
                self.expression(operand, f"{where} {text_of(node)}", params)
        else:
            self.literal(node, where, params)
        return [(when, text_of(node))]

    def literal(self, node: Node, where: str, params: dict) -> None:
        head = node.head()
        construct = f"{where} {text_of(node)}"
        if head == "=" and len(node) == 3:  # (= ?x ?y): object equality
            if ":equality" not in self.domain.requirements:
                self.add("requirement", construct, "equality used without :equality", node)
            for term in node[1:]:
                if isinstance(term, str) and term.startswith("?") and term not in params:
                    self.add("undeclared-variable", construct, f"variable {term} is not a parameter", node)
            return
        if head is None or any(not isinstance(x, str) for x in node):
            self.add("parse", construct, "expected an atom (predicate and names)", node)
            return
        if head in self.domain.function_types:
            self.add("undeclared-predicate", construct,
                     f"'{head}' is a function, used here as a predicate", node)
            return
        self.out += check_atom(self.domain, tuple(node), params, self.domain.constants,
                                    self.src, construct, self.line(node))

    # ---- numeric expressions ------------------------------------------------------------------
    def expression(self, node, where: str, params: dict, duration_ok: bool = False) -> None:
        if isinstance(node, str):
            if is_number(node) or (node == "?duration" and duration_ok):
                return
            if node.startswith("?"):
                if node not in params:
                    self.add("undeclared-variable", where, f"variable {node} is not a parameter")
                else:
                    self.add("type", where, f"{node} is an object, not a number")
                return
            self.add("undeclared-function", where, f"'{node}' is not a number or a function "
                     f"term (write ({node}) for a 0-ary function)")
            return
        head = node.head()
        if head in ARITHMETIC and (len(node) == 3 or (head == "-" and len(node) == 2)
                                   or (head in COMMUTATIVE and self.nary and len(node) > 3)):
            for operand in node[1:]:
                self.expression(operand, where, params, duration_ok)
        elif head in ARITHMETIC:
            many = " or more" if head in COMMUTATIVE and self.nary else ""
            self.add("arity", where, f"'{head}' takes two{many} operands, got {len(node) - 1}", node)
        else:
            self.function_term(node, where, params)

    def function_term(self, node, where: str, params: dict) -> None:
        if not isinstance(node, Node) or not node.head() or any(not isinstance(x, str) for x in node):
            self.add("parse", where, f"expected a function term, got {text_of(node)}", node)
            return
        if node.head() in self.domain.predicates:
            self.add("undeclared-function", where,
                     f"'{node.head()}' is a predicate, used here as a function", node)
            return
        self.out += check_function_term(self.domain, tuple(node), params, self.objects,
                                        self.src, where, self.line(node))

    # ---- effects ------------------------------------------------------------------------------
    def effect(self, node, where: str, params: dict, durative: bool, when: str = "") -> list:
        if not isinstance(node, Node) or not node.head():
            if isinstance(node, Node) and not node:
                return []
            self.add("parse", where, f"expected an effect, got {text_of(node)}", node)
            return []
        head = node.head()
        if head == "and":
            return [e for item in node[1:] for e in self.effect(item, where, params, durative, when)]
        timing = _timing(node)
        if timing is not None:
            if not durative or when or timing == "over all":
                self.add("parse", f"{where} {text_of(node)}", "a time specifier belongs directly "
                         "in a durative action's :effect", node)
                return []
            return self.effect(node[2], where, params, durative, timing)
        construct = f"{where} {text_of(node)}"
        if durative and not when:
            self.add("parse", construct, "a durative action's effect needs 'at start' or 'at end'", node)
            return []
        if head in ("when", "forall"):
            self.add("unsupported", construct, f"'{head}' effects are not supported", node)
            return []
        if head in ASSIGNMENTS:
            self.uses_numeric = True
            if len(node) != 3:
                self.add("arity", construct, f"'{head}' takes a function term and a value", node)
                return []
            self.function_term(node[1], construct, params)
            self.expression(node[2], construct, params)
        elif head == "not" and len(node) == 2 and isinstance(node[1], Node):
            self.literal(node[1], where, params)
        else:
            self.literal(node, where, params)
        return [(when, text_of(node))]

    # ---- actions ------------------------------------------------------------------------------
    def action(self, section: Node) -> Action21 | None:
        durative = section.head() == ":durative-action"
        if len(section) < 2 or not isinstance(section[1], str):
            raise PDDLError(f"{self.src}:{self.line(section)}", section.head(), "action without a name",
                            kind="parse")
        name = section[1]
        where = f"action {name}"
        keys: dict[str, object] = {}
        items = section[2:]
        for i in range(0, len(items), 2):
            key = items[i]
            if not isinstance(key, str) or not key.startswith(":") or i + 1 >= len(items):
                raise PDDLError(f"{self.src}:{self.line(section)}", where,
                                f"syntax error near {text_of(key)!r}", kind="parse")
            keys[key] = items[i + 1]
        allowed = {":parameters", ":duration", ":condition", ":effect"} if durative \
            else {":parameters", ":precondition", ":effect"}
        for key in keys:
            if key not in allowed:
                raise PDDLError(f"{self.src}:{self.line(section)}", where, f"unexpected {key} in "
                                f"{'a durative action' if durative else 'an action'}", kind="parse")
        raw_params = keys.get(":parameters", Node(0))
        if not isinstance(raw_params, Node):
            raise PDDLError(self.src, where, ":parameters must be a list", kind="parse")
        names = [var for var, _ in typed_list(list(raw_params), self.src, f"{where} :parameters")]
        params = dict(typed_list(list(raw_params), self.src, f"{where} :parameters"))
        for var in sorted({v for v in names if names.count(v) > 1}):
            self.add("duplicate", f"{where} :parameters", f"parameter {var} declared twice", raw_params)
        for var, typ in params.items():
            if not var.startswith("?"):
                self.add("parse", f"{where} :parameters", f"parameter '{var}' must start with '?'")
            if typ != ROOT_TYPE and typ not in self.domain.types:
                self.add("undeclared-type", f"{where} parameter {var}", f"type '{typ}' not declared "
                         "in :types", raw_params)
        duration = None
        if durative:
            self.uses_durative = True
            duration = self.duration(keys.get(":duration"), where, params, section)
        conditions = self.condition(keys.get(":condition" if durative else ":precondition", Node(0)),
                                    f"{where} {'condition' if durative else 'precondition'}",
                                    params, durative)
        effects = self.effect(keys.get(":effect", Node(0)), f"{where} effect", params, durative)
        return Action21(name, tuple(params.items()), duration, tuple(conditions), tuple(effects))

    def duration(self, node, where: str, params: dict, section: Node) -> str:
        construct = f"{where} :duration"
        if node is None:
            self.add("parse", construct, "a durative action needs :duration (= ?duration ...)", section)
            return ""
        if not (isinstance(node, Node) and node.head() == "=" and len(node) == 3
                and node[1] == "?duration"):
            self.add("unsupported", f"{construct} {text_of(node)}", "only (= ?duration <expression>) "
                     "is supported (no duration inequalities)", node)
            return text_of(node)
        self.expression(node[2], f"{construct} {text_of(node)}", params)
        return text_of(node)


def parse_domain21(text: str, source: str = "<domain>", *, check: bool = True) -> Domain:
    """A numeric or temporal domain; with ``check``, the first diagnostic is raised."""
    domain, diagnostics = read_domain21(text, source)
    if check:
        raise_first(diagnostics)
    return domain


def read_domain21(text: str, source: str = "<domain>") -> tuple[Domain, list[Diagnostic]]:
    """The domain and every diagnostic about it (syntax errors raise :class:`PDDLError`)."""
    text = lower_ascii(text)
    root = scan(text, source, "domain")
    if root is None:
        raise PDDLError(source, "domain", "unbalanced parentheses", kind="parse")
    sections = _sections(root)
    define = root[0] if root and isinstance(root[0], Node) else None
    if define is None or len(define) < 2 or not isinstance(define[1], Node) \
            or define[1].head() != "domain" or len(define[1]) != 2:
        raise PDDLError(source, "domain", "expected (define (domain NAME) ...)", kind="parse")
    fields: dict = {"requirements": frozenset(), "types": {}, "constants": {}, "predicates": {},
                    "function_types": {}}
    actions: list[Node] = []
    for section in sections[1:]:
        head = section.head()
        where = f"({head} ...)"
        if head == ":requirements":
            fields["requirements"] = frozenset(x for x in section[1:] if isinstance(x, str))
        elif head == ":types":
            types = dict(typed_list(list(section[1:]), source, where))
            for parent in set(types.values()) - set(types) - {ROOT_TYPE}:
                types[parent] = ROOT_TYPE
            types.pop(ROOT_TYPE, None)
            fields["types"] = types
        elif head == ":constants":
            fields["constants"] = dict(typed_list(list(section[1:]), source, where))
        elif head in (":predicates", ":functions"):
            key = "predicates" if head == ":predicates" else "function_types"
            for item in section[1:]:
                if isinstance(item, str):  # "- number" after a function: the only result type
                    continue
                if not item.head():
                    raise PDDLError(f"{source}:{line_of(text, item.start)}", where,
                                    f"expected (NAME ?arg ...), got {text_of(item)}", kind="parse")
                args = typed_list(list(item[1:]), source, f"{head[1:-1]} {item.head()}")
                fields[key][item.head()] = tuple(t for _, t in args)
        elif head in (":action", ":durative-action"):
            actions.append(section)
        else:
            raise PDDLError(f"{source}:{line_of(text, section.start)}", where,
                            "unknown or unsupported domain section", kind="unsupported")
    domain = Domain(name=define[1][1], actions=(), source=source,
                    functions=frozenset(fields["function_types"]), **fields)
    reader = Reader(domain, text)
    reader.out += check_domain(domain, text)  # types, constants and :typing, as for STRIPS
    for req in sorted(domain.requirements - SUPPORTED):
        reader.add("unsupported", f"requirement {req}", "not supported (STRIPS, typing, negative "
                   "preconditions, equality, numeric fluents and durative actions only)")
    parsed = tuple(a for a in map(reader.action, actions) if a is not None)
    if (reader.uses_numeric or domain.function_types) and \
            not domain.requirements & NUMERIC_REQUIREMENTS:
        reader.add("requirement", "(:requirements ...)",
                   "numeric fluents used without :numeric-fluents (or :fluents)")
    if reader.uses_durative and not domain.requirements & TEMPORAL_REQUIREMENTS:
        reader.add("requirement", "(:requirements ...)", "durative actions without :durative-actions")
    for name in sorted(set(domain.function_types) & (set(domain.predicates) | {a.name for a in parsed})):
        # VAL (and the planners' parsers) cannot read a name that is both: "Syntax error"
        reader.add("duplicate", f"function {name}", "also the name of a predicate or action")
    names: dict[str, Action21] = {}
    for action, section in zip(parsed, actions, strict=True):
        if action.name in names:  # the planners would silently keep one of them
            raise PDDLError(f"{source}:{line_of(text, section.start)}", f"action {action.name}",
                            "declared twice", kind="duplicate")
        names[action.name] = action
    domain = Domain(**{**domain.__dict__, "actions21": tuple(sorted(parsed, key=lambda a: a.name))})
    return domain, reader.out
