"""Export directories: ``save_pretrained`` model + tokenizer + ``plansuite.json`` (+ the domain).

An export loads with ``AutoModelForCausalLM`` / ``AutoModelForSequenceClassification`` and
``AutoTokenizer`` directly; ``plansuite.json`` says what it is::

    {"format": 1, "kind": "generator" | "verifier" | "problem_generator" | "critic",
     "domain": "blocksworld-4ops",
     "tokenizer": "atom" | "bpe", "threshold": 0.5 (verifier), "input_kind": "state_action" |
     "state_action_next" | "state_action_diff" (verifier), "max_new_tokens": 64 (generator), "metrics": {...},
     "labels": ["match", ...] (critic), "config": {the resolved training config}}

``problem_generator`` (NL→PDDL, description -> problem) and ``critic`` (description/problem
mismatch classifier) are the :mod:`plansuite.nl2pddl` models; see :mod:`plansuite.nl2pddl.learned`.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from transformers import PreTrainedModel, PreTrainedTokenizerBase

from plansuite.errors import ConfigError

META_FILE = "plansuite.json"
FORMAT = 1
KINDS = ("generator", "verifier", "problem_generator", "critic")
CAUSAL_KINDS = ("generator", "problem_generator")  # the rest are sequence classifiers


def save_export(path: str | Path, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                meta: dict, domain_file: str | Path | None = None) -> Path:
    """Write the export atomically (a temp dir renamed into place) and return its path."""
    path = Path(path)
    if meta.get("kind") not in KINDS:
        raise ValueError(f"meta.kind must be one of {KINDS}")
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
