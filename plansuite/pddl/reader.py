"""The text front end every PDDL file passes before the ``pddl`` parser sees it.

PDDL is case-insensitive, but ``pddl`` 0.5.1 rejects upper-case keywords and keeps names as
written, so ``(ON-TABLE B1)`` and ``(on-table b1)`` would be different atoms. :func:`prepare`
therefore lower-cases the text **once**, here, for every entry point (data, eval, equivalence,
NL→PDDL): all names the suite reads and writes are lower case, as Fast Downward and VAL print
them; the original files are what FD and VAL are given.

It also reads the file as s-expressions without recursion, which lets it reject what the
library would crash on or silently mis-read, with one located line each:

* files over a size limit (:func:`max_bytes`) and nesting deeper than :data:`MAX_DEPTH`
  (the library and our formatting of its objects recurse);
* unbalanced parentheses;
* in domains: duplicate predicates or actions (the library keeps one predicate, chosen by
  hash order), an action parameter named twice (the library keeps one), and ``:derived`` (the
  library drops it without the requirement);
* an action without ``:precondition`` or ``:effect`` (valid PDDL, a crash in the library) or with
  an empty ``()`` body (read as ``(or)``): the text given to the library gets ``(and)`` instead.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from plansuite.errors import PDDLError

MAX_DEPTH = 64  # real domains nest < 15 levels; the library recurses once per level (several frames)
DEFAULT_MAX_BYTES = 2 * 1024 * 1024  # ~50x the largest paper instance; grounding would not finish
_TOKEN = re.compile(r"[()]|;[^\n]*|[^\s();]+")
_UPPER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def max_bytes() -> int:
    """The size limit for one PDDL text: ``$PLANSUITE_MAX_PDDL_BYTES`` or 2 MiB."""
    raw = os.environ.get("PLANSUITE_MAX_PDDL_BYTES", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else DEFAULT_MAX_BYTES


def _size_problem(size: int) -> str:
    return (f"{size:,} bytes, over the {max_bytes():,}-byte limit for a PDDL file (set "
            "PLANSUITE_MAX_PDDL_BYTES to raise it)")


def read_text(path: str | Path, what: str) -> str:
    """The text of a PDDL file (without a UTF-8 byte-order mark); missing, unreadable, too large
    or not UTF-8 is a PDDLError.

    ``kind`` tells callers why: ``io`` (cannot be read), ``size`` or ``encoding`` (read, but its
    content cannot be PDDL), so a tool that accepts any generated text can say "does not parse".
    """
    path = Path(path)
    if not path.is_file():
        problem = "a directory, not a file" if path.is_dir() else "file not found"
        raise PDDLError(str(path), what, problem, kind="io")
    try:
        size = path.stat().st_size
        if size > max_bytes():
            raise PDDLError(str(path), what, _size_problem(size), kind="size")
        data = path.read_bytes()
    except OSError as exc:
        raise PDDLError(str(path), what, f"unreadable ({exc.__class__.__name__})", kind="io") from exc
    try:
        return data.decode("utf-8-sig")  # a leading byte-order mark is dropped
    except UnicodeDecodeError as exc:
        raise PDDLError(str(path), what, f"unreadable: not UTF-8 text (byte {data[exc.start]:#04x} "
                        f"at offset {exc.start})", kind="encoding") from exc


def lower_ascii(text: str) -> str:
    """Lower-case A-Z only: line and column numbers stay those of the original text.

    >>> lower_ascii("(DEFINE (Problem B2) ;Ä\\n")
    '(define (problem b2) ;Ä\\n'
    """
    return text.translate(_UPPER)


class Node(list):
    """One parenthesised list: its items (tokens are ``str``) and where it starts and ends."""

    def __init__(self, start: int):
        super().__init__()
        self.start, self.end = start, start
        self.offsets: list[int] = []  # where each item starts

    def head(self) -> str | None:
        return self[0] if self and isinstance(self[0], str) else None


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def scan(text: str, source: str, what: str) -> Node | None:
    """The top-level forms of ``text`` (comments dropped), read iteratively; ``None`` when the
    parentheses do not balance (the library then names the line and column of the syntax error).

    >>> root = scan("(define (domain d)) ; end", "d.pddl", "domain")
    >>> root[0].head(), root[0][1]
    ('define', ['domain', 'd'])
    >>> scan("(a (b)", "f.pddl", "domain") is None
    True
    >>> scan("(" * 100, "f.pddl", "domain")
    Traceback (most recent call last):
    ...
    plansuite.errors.PDDLError: f.pddl:1: domain: nesting deeper than 64 levels
    """
    if len(text) > max_bytes():
        raise PDDLError(source, what, _size_problem(len(text.encode("utf-8", "replace"))),
                        kind="size")
    root = Node(0)
    stack = [root]
    for m in _TOKEN.finditer(text):
        token = m.group()
        if token == "(":
            if len(stack) > MAX_DEPTH:
                raise PDDLError(f"{source}:{line_of(text, m.start())}", what,
                                f"nesting deeper than {MAX_DEPTH} levels", kind="parse")
            node = Node(m.start())
            stack[-1].append(node)
            stack[-1].offsets.append(m.start())
            stack.append(node)
        elif token == ")":
            if len(stack) == 1:
                return None
            stack.pop().end = m.end()
        elif token[0] != ";":
            stack[-1].append(token)
            stack[-1].offsets.append(m.start())
    if len(stack) > 1:
        return None
    root.end = len(text)
    return root


@dataclass(frozen=True)
class Prepared:
    """What the ``pddl`` parser reads, plus what the library would lose."""

    text: str  # lower-cased, with empty action bodies made explicit
    functions: frozenset[str] = frozenset()  # names declared in a domain's (:functions ...)


def _sections(root: Node | None, kind: str) -> list[Node]:
    """The sections of ``(define (KIND name) ...)``, or [] when the file is not shaped so
    (the library then reports the syntax error)."""
    if root is None or len(root) != 1 or not isinstance(root[0], Node) or root[0].head() != "define":
        return []
    define = root[0]
    if len(define) < 2 or not isinstance(define[1], Node) or define[1].head() != kind:
        return []
    return [s for s in define[2:] if isinstance(s, Node)]


def prepare_problem(text: str, source: str) -> Prepared:
    text = lower_ascii(text)
    scan(text, source, "problem")
    return Prepared(text)


def prepare_domain(text: str, source: str) -> Prepared:
    text = lower_ascii(text)
    sections = _sections(scan(text, source, "domain"), "domain")
    functions: set[str] = set()
    seen: dict[tuple[str, str], int] = {}  # (what, name) -> offset of its declaration
    inserts: list[tuple[int, str]] = []  # (offset, text), applied back to front

    def once(what: str, name: str, offset: int) -> None:
        if (what, name) in seen:  # first in file order: the same error whatever the hash seed
            raise PDDLError(f"{source}:{line_of(text, offset)}", f"{what} {name}",
                            f"declared twice (first at line {line_of(text, seen[what, name])})",
                            kind="duplicate")
        seen[what, name] = offset

    for section in sections:
        head = section.head()
        if head == ":derived":
            raise PDDLError(f"{source}:{line_of(text, section.start)}", "(:derived ...)",
                            "derived predicates are not supported (STRIPS, typing, negative "
                            "preconditions and equality only)", kind="unsupported")
        if head == ":predicates":
            for pred in section[1:]:
                if isinstance(pred, Node) and pred.head():
                    once("predicate", pred.head(), pred.start)
        elif head == ":functions":
            functions.update(f.head() for f in section[1:] if isinstance(f, Node) and f.head())
        elif head == ":action" and len(section) > 1 and isinstance(section[1], str):
            once("action", section[1], section.start)
            _check_parameters(section, text, source)
            inserts += _action_body_fixes(section)
    for offset, insert in sorted(inserts, reverse=True):  # back to front: offsets stay valid
        text = text[:offset] + insert + text[offset:]
    return Prepared(text, frozenset(functions))


def _check_parameters(action: Node, text: str, source: str) -> None:
    """Refuse a parameter named twice (the library keeps one of them, silently).

    >>> domain = "(define (domain d) (:action a :parameters (?ob ?ob) :effect (and)))"
    >>> _check_parameters(scan(domain, "d.pddl", "domain")[0][2], domain, "d.pddl")
    Traceback (most recent call last):
    ...
    plansuite.errors.PDDLError: d.pddl:1: action a: parameter ?ob declared twice
    """
    i = next((n for n, item in enumerate(action) if item == ":parameters"), None)
    params = action[i + 1] if i is not None and i + 1 < len(action) else None
    if not isinstance(params, Node):
        return
    names = [p for p in params if isinstance(p, str) and p.startswith("?")]
    repeated = next((p for n, p in enumerate(names) if p in names[:n]), None)
    if repeated is not None:
        raise PDDLError(f"{source}:{line_of(text, params.start)}", f"action {action[1]}",
                        f"parameter {repeated} declared twice", kind="duplicate")


def _action_body_fixes(action: Node) -> list[tuple[int, str]]:
    """Insertions giving ``action`` an explicit ``(and)`` precondition and effect where it has
    none or an empty ``()``: the library crashes on the first and reads the second as ``(or)``.
    Nothing is inserted across lines, so no line number moves."""
    keys = {item: i for i, item in enumerate(action) if isinstance(item, str) and item[0] == ":"}
    fixes = []
    for key in (":precondition", ":effect"):
        i = keys.get(key)
        if i is not None and i + 1 < len(action) and isinstance(action[i + 1], Node) \
                and not action[i + 1]:
            fixes.append((action[i + 1].start + 1, "and"))
    missing = [key for key in (":precondition", ":effect") if key not in keys]
    if missing == [":precondition"]:  # the grammar wants it before :effect
        fixes.append((action.offsets[keys[":effect"]], ":precondition (and) "))
    elif missing:
        fixes.append((action.end - 1, "".join(f" {key} (and)" for key in missing)))
    return fixes
