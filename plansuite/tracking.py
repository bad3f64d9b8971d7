"""Experiment tracking with W&B: offline by default, so nothing needs an account or a network.

Every entrypoint calls :func:`ensure_offline_default` before touching wandb: without an API key
(``WANDB_API_KEY`` or a ``~/.netrc`` entry) and without an explicit ``WANDB_MODE``, runs are
written offline under ``<dir>/wandb/offline-run-*`` and can be uploaded later with ``wandb sync``.
Offline runs write no ``wandb-summary.json``; callers keep their own results file, and
:func:`read_offline_run` reads back what a run logged (tags, group, config, summary).
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

_BLOCK = 32768  # the .wandb file is a LevelDB-style log of protobuf records in 32 KiB blocks
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


def has_api_key() -> bool:
    if os.environ.get("WANDB_API_KEY"):
        return True
    netrc = Path.home() / ".netrc"
    return netrc.is_file() and "api.wandb.ai" in netrc.read_text(errors="ignore")


def ensure_offline_default() -> str:
    """Set ``WANDB_MODE=offline`` unless a mode is set or an API key exists; return the mode."""
    if not os.environ.get("WANDB_MODE"):
        os.environ["WANDB_MODE"] = "online" if has_api_key() else "offline"
    os.environ.setdefault("WANDB_SILENT", "true")
    return os.environ["WANDB_MODE"]


def without_anonymous(logger):
    """Lightning's ``WandbLogger`` passes ``anonymous=None`` to ``wandb.init``, which W&B (0.19+)
    answers on every run with "The anonymous setting has no effect": leave the key out (its
    value, None, is W&B's default)."""
    init = getattr(logger, "_wandb_init", None)
    if isinstance(init, dict) and init.get("anonymous") is None:
        init.pop("anonymous", None)
    return logger


def run_tags(**fields) -> list[str]:
    """Dashboard tags as ``key:value`` strings, skipping empty values.

    >>> run_tags(planner="generator_verifier", k=25, verifier_init=None)
    ['planner:generator_verifier', 'k:25']
    """
    return [f"{k}:{v}" for k, v in fields.items() if v is not None and v != ""]


def run_group(experiment: str, planner: str, verifier_init: str | None, k: int,
              temperature: float) -> str:
    """The W&B group of an evaluation: everything that defines it except the seed, so the
    dashboard averages seeds within a group and compares groups.

    >>> run_group("paper_table2", "generator_verifier", "base", 25, 1.0)
    'paper_table2/generator_verifier-base-k25-t1.0'
    """
    return f"{experiment}/{planner}-{verifier_init or 'none'}-k{k}-t{temperature}"


def offline_notice(run) -> str | None:
    """For an offline run (a ``wandb.Run``): where it was written and how to upload it; None
    for an online or disabled one."""
    if not getattr(run, "offline", False):
        return None
    sync_dir = Path(run.settings.sync_dir)
    return f"[wandb] offline run written to {sync_dir}; upload it with: wandb sync {sync_dir}"


def _value(item):
    """An item's value: JSON text, or (history items of recent wandb) one typed field."""
    if item.value_json:
        return json.loads(item.value_json)
    typed = item.WhichOneof("value") if "value" in item.DESCRIPTOR.oneofs_by_name else None
    if typed in ("json",):
        return json.loads(item.json)
    return None if typed in (None, "none") else getattr(item, typed)


def _items(updates) -> dict:
    """``{key: value}`` of a config/summary/history update list (``nested_key`` joined by /)."""
    return {i.key or "/".join(i.nested_key): _value(i) for i in updates}


def _records(data: bytes) -> list[bytes]:
    """The record payloads of a ``.wandb`` log (7-byte file header, then per record: crc32,
    length, type, payload; a record never starts in a block's last 6 bytes)."""
    if data[:4] != b":W&B":
        raise ValueError("not a W&B run file")
    records, pos, pending = [], 7, b""
    while pos + 7 <= len(data):
        if _BLOCK - pos % _BLOCK < 7:  # block trailer padding
            pos += _BLOCK - pos % _BLOCK
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        if kind == 0:  # zero padding up to the next block
            pos += _BLOCK - pos % _BLOCK
            continue
        if pos + 7 + length > len(data):
            break  # the writer is still on this record (a run read while W&B's service flushes it)
        payload, pos = data[pos + 7:pos + 7 + length], pos + 7 + length
        if kind == _FULL:
            records.append(payload)
        elif kind == _FIRST:
            pending = payload
        elif kind == _MIDDLE:
            pending += payload
        elif kind == _LAST:
            records.append(pending + payload)
    return records


def read_offline_run(run_dir: str | Path) -> dict:
    """What an offline run (``wandb/offline-run-*``) logged: ``tags``, ``group``, ``job_type``,
    ``name``, ``config`` (the run's initial config and every later update, such as Lightning's
    hyper-parameters) and ``summary`` (dicts of JSON values), ``history`` (every ``log`` call's
    row, in order: what a killed run got to), ``finished`` (the run was closed with
    ``finish()``, i.e. its exit record is there) and its ``exit_code`` (non-zero: it failed)."""
    from wandb.proto import wandb_internal_pb2

    files = sorted(Path(run_dir).glob("run-*.wandb"))
    if not files:
        raise FileNotFoundError(f"{run_dir}: no run-*.wandb file")
    out: dict = {"tags": [], "group": None, "job_type": None, "name": None, "config": {},
                 "summary": {}, "history": [], "finished": False, "exit_code": None}
    for payload in _records(files[0].read_bytes()):
        record = wandb_internal_pb2.Record()
        record.ParseFromString(payload)
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run = record.run
            out.update(tags=list(run.tags), group=run.run_group, job_type=run.job_type,
                       name=run.display_name)
            out["config"].update(_items(run.config.update))
        elif kind == "config":  # wandb.config.update(...) after init
            out["config"].update(_items(record.config.update))
        elif kind == "summary":
            out["summary"].update(_items(record.summary.update))
        elif kind == "history":
            out["history"].append(_items(record.history.item))
        elif kind == "exit":
            out["finished"], out["exit_code"] = True, record.exit.exit_code
    return out
