"""Plain mappings (a resolved config group, a manifest's ``config``) into typed dataclasses.

The typed specs built from config groups (``model`` -> the model kind's config dataclass,
``planner`` -> the loop's spec class, ``dataset`` -> ``DatasetSpec``) go through
:func:`from_mapping`, so an unknown key or a bad nested group is the same one-line
:class:`~plansuite.errors.ConfigError` everywhere, naming the config key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from plansuite.errors import ConfigError

T = TypeVar("T")


def check_keys(cls: type, values: Mapping, prefix: str) -> None:
    """One ConfigError naming the first key ``cls`` has no field for.

    >>> @dataclasses.dataclass
    ... class Point:
    ...     x: int = 0
    >>> check_keys(Point, {"x": 1, "y": 2}, "point")
    Traceback (most recent call last):
    plansuite.errors.ConfigError: point.y: unknown setting (known: x)
    """
    known = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ConfigError(f"{prefix}.{unknown[0]}: unknown setting (known: {', '.join(sorted(known))})")


def from_mapping(cls: type[T], values: Mapping[str, Any] | None, prefix: str) -> T:
    """``cls(**values)``, nested dataclass fields built from nested mappings, unknown keys refused.

    >>> @dataclasses.dataclass
    ... class Inner:
    ...     lr: float = 0.1
    >>> @dataclasses.dataclass
    ... class Outer:
    ...     name: str = "a"
    ...     inner: Inner = dataclasses.field(default_factory=Inner)
    >>> from_mapping(Outer, {"inner": {"lr": 0.5}}, "model")
    Outer(name='a', inner=Inner(lr=0.5))
    >>> from_mapping(Outer, {"inner": {"lr": 0.5, "mu": 1}}, "model")
    Traceback (most recent call last):
    plansuite.errors.ConfigError: model.inner.mu: unknown setting (known: lr)
    """
    values = dict(values or {})
    check_keys(cls, values, prefix)
    for f in dataclasses.fields(cls):
        if f.name in values:
            check_type(f"{prefix}.{f.name}", str(f.type), values[f.name])
        nested = _nested_class(f)
        if nested is not None and isinstance(values.get(f.name), Mapping):
            values[f.name] = from_mapping(nested, values[f.name], f"{prefix}.{f.name}")
    try:
        return cls(**values)
    except TypeError as exc:  # e.g. a required field missing
        raise ConfigError(f"{prefix}: {exc}") from None


def check_type(key: str, annotation: str, value) -> None:
    """A number or yes/no setting given something else is one line here, not a TypeError deep
    inside (or, for a yes/no one, a string that is truthy whatever it says).

    >>> check_type("planner.k", "int", "abc")
    Traceback (most recent call last):
    plansuite.errors.ConfigError: planner.k='abc': must be an integer
    >>> check_type("planner.budget", "int | None", None)
    >>> check_type("compile", "bool", "no")
    Traceback (most recent call last):
    plansuite.errors.ConfigError: compile='no': choose true or false
    """
    if value is None and "None" in annotation:
        return
    if annotation.strip() == "bool" and not isinstance(value, bool):
        raise ConfigError(f"{key}={value!r}: choose true or false")
    base = annotation.split("|")[0].strip()
    numbers = {"int": (int,), "float": (int, float)}.get(base)
    if numbers and (isinstance(value, bool) or not isinstance(value, numbers)):
        kind = "an integer" if base == "int" else "a number"
        raise ConfigError(f"{key}={value!r}: must be {kind}"
                          + (" (or null)" if "None" in annotation else ""))


def _nested_class(f: dataclasses.Field) -> type | None:
    """The dataclass a field holds, known from its default (nested settings have one)."""
    if f.default_factory is dataclasses.MISSING:
        return None
    default = f.default_factory()
    return type(default) if dataclasses.is_dataclass(default) else None


def override_key(override: str) -> str:
    """The key a Hydra command-line override sets (``+`` / ``++`` / ``~`` and the value dropped).

    >>> [override_key(o) for o in ("planner.k=8", "+tuning.data=D", "~logger", "seed=1,2")]
    ['planner.k', 'tuning.data', 'logger', 'seed']
    """
    return override.split("=", 1)[0].lstrip("+~")


def flatten(d: Mapping, prefix: str = "") -> dict[str, Any]:
    """``{"model": {"optim": {"lr": 1}}}`` -> ``{"model.optim.lr": 1}``.

    >>> flatten({"model": {"optim": {"lr": 1}}, "seed": 0})
    {'model.optim.lr': 1, 'seed': 0}
    """
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def settings_changes(old: Mapping, new: Mapping, defaults: Mapping | None = None, shown: int = 4) -> str:
    """The keys a resumed run would change, as one phrase (empty when none): what a run was made
    with (``old``) against what it is resumed with (``new``). A key only one side holds, at its
    value in ``defaults`` (a setting added to the code since, or removed from it), is no change.

    >>> settings_changes({"a": {"x": 1}, "b": 2}, {"a": {"x": 3}, "b": 2, "c": 0}, {"c": 0})
    'a.x: 1 -> 3'
    >>> settings_changes({"a": 1, "gone": 0}, {"a": 1}, {"gone": 0})
    ''
    """
    old, new, defaults = flatten(old), flatten(new), flatten(defaults or {})
    held = {**old, **new}
    changed = [k for k in sorted(held) if old.get(k) != new.get(k)
               and not ((k not in old or k not in new) and k in defaults and held[k] == defaults[k])]
    what = "; ".join(f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in changed[:shown])
    return what + (f" (+{len(changed) - shown} more)" if len(changed) > shown else "")
