"""The built-in model kinds' config dataclasses as Hydra structured configs.

Each kind's dataclass (beside its LightningModule: :data:`plansuite.training.MODEL_KINDS`) is the
one home of its keys, types and defaults. It is stored as ``model/base_<kind>`` in Hydra's
ConfigStore, and ``conf/model/<kind>.yaml`` extends it (``defaults: [base_<kind>, ...]``) with
presets only (the backbone; the paper's settings in ``*_paper.yaml``). So a misspelt key or a
value of the wrong type (``model.epoch=3``, ``model.batch_size=abc``) fails while Hydra composes
the config, with Hydra's own message, which :mod:`plansuite.cli.hydra_diagnosis` prints as one
``error:`` line.
"""

from __future__ import annotations

from hydra.core.config_store import ConfigStore

from plansuite.training import MODEL_KINDS, kind_def


def schema_name(kind: str) -> str:
    """The ConfigStore name of a kind's dataclass (Hydra's ``base_`` convention for schemas).

    >>> schema_name("verifier")
    'base_verifier'
    """
    return f"base_{kind}"


def register() -> None:
    """Store every built-in kind's config as ``model/base_<kind>`` (idempotent)."""
    store = ConfigStore.instance()
    for kind in MODEL_KINDS:
        store.store(group="model", name=schema_name(kind), node=kind_def(kind).config,
                    provider="plansuite")
