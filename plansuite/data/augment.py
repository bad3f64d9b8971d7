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
from dataclasses import replace

from plansuite.data.load import TransitionRecord
from plansuite.errors import ConfigError

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
    """``(on a b)`` under ``{a: c, b: a}`` is ``(on c a)``; names not mapped stay (constants)."""
    head, *args = text[1:-1].split()
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
    mapping = draw_mapping(objects, pool, rng)
    out: list[str] = []
    block: list[str] = []
    for line in [*lines, ""]:
        if line.startswith("("):
            block.append(_rename_text(line, mapping))
            continue
        out.extend(sorted(block))
        block = []
        out.append(line)
    return "\n".join(out[:-1])


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


__all__ = ["AUGMENTS", "check_augment", "draw_mapping", "name_pool", "rename_text_blocks",
           "rename_transition"]
