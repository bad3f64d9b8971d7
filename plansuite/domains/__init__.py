"""Built-in domains (PDDL files shipped with the package) and their initial-state samplers.

A sampler is any object with ``sample(rng) -> (objects, init_atoms)``; configs under
``conf/domain/`` choose one with ``_target_`` (:func:`state_sampler`). Any other STRIPS domain works with a domain file
and :class:`~plansuite.domains.folder.FolderStates` over a folder of problem files.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from plansuite.errors import ConfigError, PlansuiteError
from plansuite.pddl.model import Atom, Domain

BUILTIN_DIR = Path(__file__).parent
BUILTIN = ("blocksworld", "gripper", "logistics", "fuel-delivery", "timed-delivery")  # the last two: PDDL 2.1


class StateSampler(Protocol):
    def sample(self, rng: random.Random) -> tuple[dict[str, str], frozenset[Atom]]:
        """Objects (name -> type) and the true atoms of one initial state."""
        ...


def builtin_path(name: str) -> Path:
    if name not in BUILTIN:
        raise ConfigError(f"domain '{name}': unknown built-in domain (choose from {', '.join(BUILTIN)},"
                          " or give domain.file=PATH)")
    return BUILTIN_DIR / f"{name}.pddl"


def domain_file(name: str, file: str | None = None) -> Path:
    """The PDDL file of a configured domain: ``file`` if given, else the built-in one."""
    return Path(file) if file else builtin_path(name)


@functools.cache
def load_builtin(name: str) -> Domain:
    from plansuite.pddl.parse import load_domain

    return load_domain(builtin_path(name))


def state_sampler(states: Mapping[str, Any], domain: Domain,
                  key: str = "domain.states") -> StateSampler:
    """A config's ``domain.states`` (``_target_`` class and its keywords) as a sampler.

    A sampler that takes a ``domain`` keyword (one reading problem files) gets the parsed
    domain. A bad setting is one ConfigError naming ``key`` (the config key the settings came
    from), not a traceback.
    """
    settings = dict(states)
    target = str(settings.pop("_target_", ""))
    try:
        module, _, name = target.rpartition(".")
        sampler_class = getattr(importlib.import_module(module), name)
        if "domain" in inspect.signature(sampler_class).parameters:
            settings["domain"] = domain
        return sampler_class(**settings)
    except PlansuiteError:
        raise
    except Exception as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"{key} ({target}): {detail}") from exc
