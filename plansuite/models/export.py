"""Export directories: ``save_pretrained`` model + tokenizer + ``plansuite.json`` (+ the domain).

An export loads with ``AutoModelForCausalLM`` / ``AutoModelForSequenceClassification`` and
``AutoTokenizer`` directly; ``plansuite.json`` says what it is::

    {"format": 1, "kind": "generator" | "verifier" | "problem_generator" | "critic",
     "domain": "blocksworld-4ops",
     "tokenizer": "atom" | "bpe", "threshold": 0.5 (verifier), "input_kind": "state_action" |
     "state_action_next" | "state_action_diff" (verifier), "max_new_tokens": 64 (generator), "metrics": {...},
     "labels": ["match", ...] (critic), "config": {the resolved training config},
     "object_names": {type: [names in natural order]} (generator, verifier: the dataset's objects,
     which a planner renames each instance's objects into; :class:`plansuite.planning.adapters.ModelNames`)}

``problem_generator`` (NL→PDDL, description -> problem) and ``critic`` (description/problem
mismatch classifier) are the :mod:`plansuite.nl2pddl` models; see :mod:`plansuite.nl2pddl.models.learned`.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from plansuite.errors import ConfigError
from plansuite.pddl.model import Domain, structure_difference

if TYPE_CHECKING:  # annotations only: reading an export's metadata needs no torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

META_FILE = "plansuite.json"
FORMAT = 1
KINDS = ("generator", "verifier", "problem_generator", "critic")
CAUSAL_KINDS = ("generator", "problem_generator")  # the rest are sequence classifiers


def save_export(path: str | Path, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                meta: dict, domain_file: str | Path | None = None) -> Path:
    """Write the export atomically (a temp dir renamed into place) and return its path."""
    path = Path(path)
    if not isinstance(meta.get("kind"), str) or not meta["kind"]:  # KINDS, or a plug-in kind's name
        raise ValueError(f"meta.kind must name the model kind (one of {KINDS}, or a plug-in's)")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        if domain_file is not None:
            shutil.copyfile(domain_file, tmp / "domain.pddl")
        (tmp / META_FILE).write_text(json.dumps({"format": FORMAT, **meta}, indent=2,
                                                sort_keys=True, default=str) + "\n")
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def read_meta(path: str | Path, kind: str) -> dict:
    """``plansuite.json`` of an export of ``kind``; one clear ConfigError otherwise."""
    path = Path(path)
    if not path.is_dir():
        raise ConfigError(f"{path}: export directory not found (train one with plansuite-train)")
    meta_file = path / META_FILE
    if not meta_file.is_file():
        raise ConfigError(f"{path}: not a plansuite export (no {META_FILE})")
    try:
        meta = json.loads(meta_file.read_text())
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{meta_file}: unreadable ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(meta, dict):
        raise ConfigError(f"{meta_file}: not an export description (a JSON object expected, found "
                          f"{type(meta).__name__})")
    if meta.get("format") != FORMAT:
        raise ConfigError(f"{meta_file}: export format {meta.get('format')!r}, expected {FORMAT}")
    if meta.get("kind") != kind:
        raise ConfigError(f"{path}: a {meta.get('kind')} export, expected a {kind} export")
    return meta


def check_export_domain(path: str | Path, kind: str, domain: Domain, key: str) -> dict:
    """The metadata of an export of ``kind`` (:func:`read_meta`); one line, naming the config
    ``key`` that gave it, if it was trained on another domain: its actions would be judged
    against this domain's simulator and every plan read as garbage, with no error.

    Domains are compared by structure (:func:`plansuite.pddl.model.structure_difference`) with
    the ``domain.pddl`` the export carries; an export without one is compared by the domain name
    in its metadata, in lower case as the PDDL reader writes names.
    """
    meta = read_meta(path, kind)
    own = Path(path) / "domain.pddl"
    if own.is_file():
        from plansuite.pddl.parse import load_domain

        difference = structure_difference(load_domain(own), domain, ("the export's", "this one"))
        if difference:
            raise ConfigError(f"{key}={path}: trained on another domain than {domain.source} "
                              f"({difference})")
        return meta
    trained = meta.get("domain")
    if isinstance(trained, str) and trained.lower() != domain.name.lower():
        raise ConfigError(f"{key}={path}: trained on domain '{trained}', but the domain here is "
                          f"'{domain.name}' ({domain.source})")
    return meta


def _check_model_config(path: Path) -> None:
    """``config.json`` must be a JSON object (transformers fails on anything else with a
    TypeError about ``**``, or blames the tokenizer)."""
    config = path / "config.json"
    try:
        value = json.loads(config.read_text()) if config.is_file() else {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{config}: unreadable model config ({exc.__class__.__name__})") from exc
    if not isinstance(value, dict):
        raise ConfigError(f"{config}: not a model config (a JSON object expected, found "
                          f"{type(value).__name__})")


def load_export(path: str | Path, kind: str, device: str = "cpu"):
    """(model in eval mode, tokenizer, meta) of an export of ``kind``."""
    from plansuite.models.backbone import check_vocab
    from plansuite.models.tokenizer import load_pretrained_tokenizer

    meta = read_meta(path, kind)
    _check_model_config(Path(path))
    tokenizer = load_pretrained_tokenizer(path)
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification

    auto = AutoModelForCausalLM if kind in CAUSAL_KINDS else AutoModelForSequenceClassification
    try:
        model = auto.from_pretrained(str(path))
    except Exception as exc:  # torn or foreign weights raise safetensors' and torch's own types
        detail = (str(exc).strip().splitlines() or [""])[0][:160]
        raise ConfigError(f"{path}: model weights unreadable ({type(exc).__name__}: {detail})") from exc
    check_vocab(model, tokenizer, path)
    try:
        model = model.to(device)
    except (RuntimeError, AssertionError) as exc:
        raise ConfigError(f"device '{device}': unavailable ({str(exc).splitlines()[0][:120]})") from exc
    return model.eval(), tokenizer, meta
