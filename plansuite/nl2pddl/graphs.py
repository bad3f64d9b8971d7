"""Problems as labelled graphs, and object bijections found by graph isomorphism (networkx).

Nodes are objects (labelled by type), atoms (labelled by section and predicate) and numeric
fluents (labelled by function and value); an edge joins an atom to each object it mentions and
carries the argument positions. Names that are not problem objects (domain constants, or
undeclared names in a bad candidate) become nodes labelled by their name, so they never map to
anything but themselves. Two problems correspond under a renaming of objects exactly when their
graphs are isomorphic, and the isomorphism restricted to object nodes is the renaming.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import networkx as nx
from networkx.algorithms.isomorphism import GraphMatcher

from plansuite.pddl.model import Atom, parse_atom_text

Mapping_ = dict[str, str]
MAX_CANDIDATE_MAPPINGS = 1000  # isomorphisms tried when an extra condition (the metric) must hold


def problem_graph(objects: Mapping[str, str], sections: Mapping[str, Iterable[Atom]],
                  fluents: Mapping[str, float] | None = None) -> nx.Graph:
    """Graph of ``objects`` plus the atoms of each named section (e.g. ``init``, ``goal``)."""
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


def find_mapping(reference: nx.Graph, candidate: nx.Graph,
                 accept: Callable[[Mapping_], bool] | None = None) -> Mapping_ | None:
    """A renaming candidate object → reference object under which the graphs are equal.

    ``accept`` adds a condition the graphs cannot express (the metric); isomorphisms are tried
    until one passes (at most :data:`MAX_CANDIDATE_MAPPINGS`).
    """
    if (reference.number_of_nodes() != candidate.number_of_nodes()
            or reference.number_of_edges() != candidate.number_of_edges()
            or graph_key(reference) != graph_key(candidate)):
        return None
    matcher = GraphMatcher(candidate, reference,
                           node_match=lambda a, b: a["label"] == b["label"],
                           edge_match=lambda a, b: a["args"] == b["args"])
    for tried, iso in enumerate(matcher.isomorphisms_iter()):
        mapping = {c[1]: r[1] for c, r in iso.items() if c[0] == "obj"}
        if accept is None or accept(mapping):
            return mapping
        if tried + 1 >= MAX_CANDIDATE_MAPPINGS:
            break
    return None
