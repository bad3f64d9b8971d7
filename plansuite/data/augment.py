"""Object renaming: the symmetry of a PDDL transition under a type-preserving bijection of names.

With the ``atom`` tokenizer every ground atom and action is one token, so what the generator
learns about ``(on b7 b8)`` it does not learn about ``(on b1 b2)``: tokens naming the objects of
large problems only (``b7``, ``b8`` appear in 7-8 block states alone) are rare, and the generator
fails on exactly those problems. Renaming the objects of each training transition at random,
injectively within their types and into the dataset's pool of names, is a symmetry of any PDDL
domain whose objects are not constants: the renamed transition is as true as the original. With
``model.augment=rename`` every training example is renamed afresh each time it is drawn, so all
names become equally frequent; validation and test data are never renamed. The verifier's texts
(:func:`rename_text_blocks`) are renamed the same way: a verifier that learns which atom makes
``(unstack b3 b2)`` applicable for every pair of names, not for the pairs its data happened to hold.

>>> import random
>>> from plansuite.data.load import TransitionRecord
>>> r = TransitionRecord(0, 0, {"a": "object", "b": "object"}, ("(on a b)",),
...                      ("(clear a)", "(on-table a)"), "(pickup a)", ("(holding a)",))
>>> out = rename_transition(r, {"object": ["a", "b", "c"]}, random.Random(1))
>>> sorted(out.objects) != sorted(r.objects) or out == r
True
>>> out.action.split()[0], len(out.state)
('(pickup', 2)
"""

from __future__ import annotations

import random
import re
from dataclasses import replace

from plansuite.data.load import TransitionRecord
from plansuite.errors import ConfigError
from plansuite.pddl.model import Domain, parse_atom_text

AUGMENTS = ("none", "rename")  # model.augment


def check_augment(value: str) -> str:
    if value not in AUGMENTS:
        raise ConfigError(f"model.augment={value!r}: choose from {', '.join(AUGMENTS)}")
    return value


def name_pool(objects: dict[str, str]) -> dict[str, list[str]]:
    """Object names by type (sorted), the names renaming may use.

    >>> name_pool({"b2": "object", "b1": "object", "left": "gripper"})
    {'gripper': ['left'], 'object': ['b1', 'b2']}
    """
    pool: dict[str, list[str]] = {}
    for name, typ in sorted(objects.items()):
        pool.setdefault(typ, []).append(name)
    return dict(sorted(pool.items()))


def _rename_text(text: str, mapping: dict[str, str]) -> str:
    """``(on a b)`` under ``{a: c, b: a}`` is ``(on c a)``; names not mapped stay (constants).
    A line that is not one atom (model output may be anything) comes back unchanged.

    >>> _rename_text("(on a b)", {"a": "c", "b": "a"}), _rename_text("(on a", {"a": "c"})
    ('(on c a)', '(on a')
    """
    inner = text.strip()
    if len(inner) < 3 or inner[0] != "(" or inner[-1] != ")" or not inner[1:-1].split():
        return text
    head, *args = inner[1:-1].split()
    return "(" + " ".join([head, *(mapping.get(a, a) for a in args)]) + ")"


def draw_mapping(objects: dict[str, str], pool: dict[str, list[str]],
                 rng: random.Random) -> dict[str, str]:
    """A random type-preserving injection of ``objects`` (name -> type) into ``pool``'s names;
    a type whose pool is too small keeps its names."""
    by_type: dict[str, list[str]] = {}
    for name, typ in sorted(objects.items()):
        by_type.setdefault(typ, []).append(name)
    mapping: dict[str, str] = {}
    for typ, names in by_type.items():
        targets = pool.get(typ, [])
        if len(targets) < len(names):
            targets = names  # the pool lacks this type's names: leave them as they are
        mapping.update(zip(names, rng.sample(targets, len(names)), strict=True))
    return mapping


def rename_text_blocks(text: str, types: dict[str, str], pool: dict[str, list[str]],
                       rng: random.Random) -> str:
    r"""A codec text (marker lines and atom lines) with its objects renamed, atoms re-sorted
    within each block; ``types`` gives each name's type (names it lacks are constants).

    >>> text = "STATE:\n(clear b2)\n(on b2 b1)\nACTION:\n(unstack b2 b1)"
    >>> out = rename_text_blocks(text, {"b1": "object", "b2": "object"},
    ...                          {"object": ["b1", "b2", "b3"]}, random.Random(0))
    >>> out.splitlines()[0], out.splitlines()[3], out.count("(")
    ('STATE:', 'ACTION:', 3)
    """
    lines = text.split("\n")
    objects = {a: types[a] for line in lines if line.startswith("(")
               for a in line[1:-1].split()[1:] if a in types}
    return rename_codec_text(text, draw_mapping(objects, pool, rng))


def rename_codec_text(text: str, mapping: dict[str, str]) -> str:
    r"""A codec text with the objects of its atom lines renamed by ``mapping`` (names it lacks
    stay), atoms re-sorted within each block; lines that are not atoms are kept as they are.

    >>> print(rename_codec_text("ACTION:\n(pickup b)\nNEXT STATE:\n(holding b)\n(on b a)\nEND",
    ...                         {"a": "b", "b": "a"}))
    ACTION:
    (pickup a)
    NEXT STATE:
    (holding a)
    (on a b)
    END
    """
    out: list[str] = []
    block: list[str] = []
    for line in [*text.split("\n"), ""]:
        if line.lstrip().startswith("("):
            block.append(_rename_text(line, mapping))
            continue
        out.extend(sorted(block))
        block = []
        out.append(line)
    return "\n".join(out[:-1])


def rename_atoms(texts: tuple[str, ...], mapping: dict[str, str]) -> tuple[str, ...]:
    """Atom or action texts renamed by ``mapping``, in their order.

    >>> rename_atoms(("(on a b)", "(clear a)"), {"a": "b1", "b": "b2"})
    ('(on b1 b2)', '(clear b1)')
    """
    return tuple(_rename_text(t, mapping) for t in texts)


def natural_key(name: str) -> tuple:
    """Sort key that orders the digits in names as numbers: ``b2`` before ``b10``.

    >>> sorted(["b10", "b2", "a", "b1"], key=natural_key)
    ['a', 'b1', 'b2', 'b10']
    """
    parts = re.split(r"(\d+)", name)  # text at even positions, digits at odd ones
    return (*(int(p) if i % 2 else p for i, p in enumerate(parts)), name)


def model_names(objects: dict[str, str]) -> dict[str, list[str]]:
    """Object names by type in natural order: what an export records as the names it knows.

    >>> model_names({"b10": "object", "b2": "object", "left": "gripper"})
    {'gripper': ['left'], 'object': ['b2', 'b10']}
    """
    return {typ: sorted(names, key=natural_key) for typ, names in name_pool(objects).items()}


def boundary_mapping(objects: dict[str, str], names: dict[str, list[str]],
                     instance: str) -> dict[str, str]:
    """A deterministic, type-preserving renaming of an instance's ``objects`` (name -> type) into
    a model's ``names`` (by type), as a permutation of all the names involved so that it can be
    inverted on any model output; ``{}`` (the identity) when the model knows every name.

    A type whose names the model all knows keeps them; otherwise its objects, in natural order,
    take the model's first names of that type. The extension maps the model's names that the
    instance does not use onto names that are not the instance's objects, so a model output
    naming them maps back to an unknown object (judged invalid), never to another object.

    >>> boundary_mapping({"b1": "object", "b2": "object"}, {"object": ["b1", "b2", "b3"]}, "p")
    {}
    >>> m = boundary_mapping({"a": "object", "b3": "object"}, {"object": ["b1", "b2", "b3"]}, "p")
    >>> back = {v: k for k, v in m.items()}
    >>> m["a"], m["b3"], back["b1"], back["b2"], back["b3"]
    ('b1', 'b2', 'a', 'b3', 'b2')
    >>> boundary_mapping({"a": "object", "b": "object"}, {"object": ["b1"]}, "p01")
    Traceback (most recent call last):
    ...
    plansuite.errors.ConfigError: instance p01: 2 objects of type 'object', but the model knows 1 name of that type (b1); use a model trained on more objects
    """
    by_type = name_pool(objects)
    forward: dict[str, str] = {}
    for typ, mine in by_type.items():
        theirs = names.get(typ, [])
        if set(mine) <= set(theirs):
            continue
        if len(mine) > len(theirs):
            known = ", ".join(theirs[:3]) + (", ..." if len(theirs) > 3 else "")
            raise ConfigError(f"instance {instance}: {len(mine)} objects of type '{typ}', but the "
                              f"model knows {len(theirs)} name{'s' * (len(theirs) != 1)} of that "
                              f"type ({known or 'none'}); use a model trained on more objects")
        forward.update(zip(sorted(mine, key=natural_key), theirs, strict=False))
    if not forward:
        return {}
    forward.update({o: o for o in objects if o not in forward})
    free_sources = sorted(set(forward.values()) - set(forward), key=natural_key)
    free_targets = sorted(set(forward) - set(forward.values()), key=natural_key)
    forward.update(zip(free_sources, free_targets, strict=True))
    return {a: b for a, b in forward.items() if a != b}


def vocabulary_names(texts: list[str], domain: Domain) -> dict[str, list[str]]:
    """Object names by type read from atom and action texts (an atom tokenizer's vocabulary):
    each name gets the most specific type its argument positions declare.

    >>> from plansuite.domains import load_builtin
    >>> vocabulary_names(["(on b2 b10)", "(pickup b1)", "GOAL:"], load_builtin("blocksworld"))
    {'object': ['b1', 'b2', 'b10']}
    """
    signatures = {**domain.predicates,
                  **{s.name: tuple(t for _, t in s.parameters) for s in domain.actions}}
    found: dict[str, str] = {}
    for text in texts:
        atom = parse_atom_text(text)
        if atom is None or atom[0] not in signatures or len(atom) - 1 != len(signatures[atom[0]]):
            continue
        for name, typ in zip(atom[1:], signatures[atom[0]], strict=True):
            if name in domain.constants:
                continue
            if name not in found or (typ != found[name] and domain.is_subtype(typ, found[name])):
                found[name] = typ
    return model_names(found)


def rename_transition(record: TransitionRecord, pool: dict[str, list[str]],
                      rng: random.Random) -> TransitionRecord:
    """``record`` with its objects renamed by a random type-preserving injection into ``pool``;
    states stay sorted, as the text format requires."""
    mapping = draw_mapping(record.objects, pool, rng)

    def atoms(texts: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted(_rename_text(t, mapping) for t in texts))

    return replace(record, objects={mapping[n]: t for n, t in record.objects.items()},
                   goal=atoms(record.goal), state=atoms(record.state),
                   action=_rename_text(record.action, mapping), next_state=atoms(record.next_state))


__all__ = ["AUGMENTS", "boundary_mapping", "check_augment", "draw_mapping", "model_names",
           "name_pool", "natural_key", "rename_atoms", "rename_codec_text", "rename_text_blocks",
           "rename_transition", "vocabulary_names"]
