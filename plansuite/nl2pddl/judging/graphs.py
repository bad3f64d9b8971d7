"""Problems as labelled graphs, and object bijections found by graph isomorphism (networkx).

Nodes are objects (labelled by type), atoms (labelled by section and predicate) and numeric
fluents (labelled by function and value); an edge joins an atom to each object it mentions and
carries the argument positions. Numeric expressions (goal comparisons, the metric) are trees: a
root labelled by their section (``goal-numeric``, ``metric:minimize``), a node per operation,
number and function term, edges to operands carrying their position (0 for the operands of
``+``, ``*`` and ``=``, whose order does not matter), and function terms linked to their
objects like atoms. The trees come canonical (:mod:`plansuite.pddl.expressions`), so
``(> a b)`` is ``(< b a)`` before the graph is built. Names that are not problem objects (domain constants, or
undeclared names in a bad candidate) become nodes labelled by their name, so they never map to
anything but themselves. Two problems correspond under a renaming of objects exactly when their
graphs are isomorphic, and the isomorphism restricted to object nodes is the renaming.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import networkx as nx
from networkx.algorithms.isomorphism import GraphMatcher

from plansuite.pddl.expressions import ARITHMETIC, COMPARISONS, Expr, is_number
from plansuite.pddl.model import Atom, parse_atom_text

Mapping_ = dict[str, str]
UNORDERED = frozenset({"+", "*", "="})


def problem_graph(objects: Mapping[str, str], sections: Mapping[str, Iterable[Atom]],
                  fluents: Mapping[str, float] | None = None,
                  expressions: Mapping[str, Iterable[Expr]] | None = None) -> nx.Graph:
    """Graph of ``objects`` plus the atoms of each named section (e.g. ``init``, ``goal``) and
    the canonical expressions of each named expression section.

    >>> g = problem_graph({"a": "c", "b": "c"}, {}, None,
    ...                   {"goal-numeric": [("<=", ("+", ("v", "a"), "1"), ("v", "b"))]})
    >>> sorted(d["label"] for _, d in g.nodes(data=True))
    ['fn:v', 'fn:v', 'goal-numeric', 'num:1', 'object:c', 'object:c', 'op:+', 'op:<=']
    """
    g = nx.Graph()
    for obj, typ in objects.items():
        g.add_node(("obj", obj), label=f"object:{typ}")

    def link(node, args: tuple[str, ...]) -> None:
        for position, arg in enumerate(args, start=1):
            target = ("obj", arg) if arg in objects else ("name", arg)
            if target not in g:
                g.add_node(target, label=f"name:{arg}")
            if g.has_edge(node, target):
                g.edges[node, target]["args"] += (position,)
            else:
                g.add_edge(node, target, args=(position,))

    for section, atoms in sections.items():
        for atom in atoms:
            node = ("atom", section, atom)
            g.add_node(node, label=f"{section}:{atom[0]}")
            link(node, atom[1:])
    for term, value in (fluents or {}).items():
        atom = parse_atom_text(term) or (term,)
        node = ("fluent", atom)
        g.add_node(node, label=f"fluent:{atom[0]}={value!r}")
        link(node, atom[1:])

    def tree(node, expr: Expr, parent, position: int) -> None:
        if isinstance(expr, str):
            label = f"num:{expr}" if is_number(expr) else f"name:{expr}"
        elif expr[0] in ARITHMETIC or expr[0] in COMPARISONS:
            label = f"op:{expr[0]}"
            for i, operand in enumerate(expr[1:], start=1):
                tree((*node, i), operand, node, 0 if expr[0] in UNORDERED else i)
        else:
            label = f"fn:{expr[0]}"
            link(node, expr[1:])
        g.add_node(node, label=label)
        g.add_edge(parent, node, args=(position,))

    for section, exprs in (expressions or {}).items():
        for i, expr in enumerate(exprs):
            root = ("expr", section, i)
            g.add_node(root, label=section)
            tree((*root, 0), expr, root, 0)
    return g


def _hash(g: nx.Graph) -> str:
    return nx.weisfeiler_lehman_graph_hash(g, node_attr="label", edge_attr="args_text")


def _with_edge_text(g: nx.Graph) -> nx.Graph:
    for _, _, data in g.edges(data=True):
        data["args_text"] = ",".join(map(str, data["args"]))
    return g


def graph_key(g: nx.Graph) -> str:
    """Weisfeiler-Lehman hash: equal for isomorphic graphs (and rarely for others)."""
    return _hash(_with_edge_text(g))


def find_mapping(reference: nx.Graph, candidate: nx.Graph) -> Mapping_ | None:
    """A renaming candidate object → reference object under which the graphs are equal."""
    if (reference.number_of_nodes() != candidate.number_of_nodes()
            or reference.number_of_edges() != candidate.number_of_edges()
            or graph_key(reference) != graph_key(candidate)):
        return None
    matcher = GraphMatcher(candidate, reference,
                           node_match=lambda a, b: a["label"] == b["label"],
                           edge_match=lambda a, b: a["args"] == b["args"])
    iso = next(matcher.isomorphisms_iter(), None)
    return None if iso is None else {c[1]: r[1] for c, r in iso.items() if c[0] == "obj"}
