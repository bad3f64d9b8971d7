"""The per-instance journal: the unit of resuming and of merging shards.

Each shard appends one complete JSON line per finished instance to its own file
(``<out_dir>/journal/shard-<rank>.jsonl``), flushed and fsynced, so a kill loses at most the
instances in flight. Reading takes the union over all shard files, first record per instance id
wins, and skips a torn last line; so re-running with the same ``out_dir`` (with any number of
shards) continues with no lost and no duplicated instance. ``run.json`` holds the settings that
decide outcomes: resuming into an ``out_dir`` of a different run is refused.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import IO

from plansuite.errors import ConfigError
from plansuite.jsonl import write_atomic


def lock_shard(out_dir: str | Path, rank: int = 0, world: int = 1) -> IO[str]:
    """Hold ``<out_dir>/journal/shard-<rank>.lock`` until the returned file is closed.

    A second evaluation of the same shard into the same ``out_dir`` would plan everything again
    and interleave its journal lines with ours: it is refused, naming the holder; so is one
    whose ``world`` differs from a shard still running there (the two rank splits overlap, and
    some instances would be planned twice). The lock is an ``flock``, which the kernel drops
    when its process dies, so a killed run never blocks its resume (with any world size).
    """
    folder = Path(out_dir) / "journal"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"shard-{rank}.lock"
    handle = path.open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise ConfigError(f"{out_dir}: another evaluation of shard {rank} is running here "
                          f"({holder}); wait for it to finish, or choose another out_dir") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()} on {socket.gethostname()} since "
                 f"{time.strftime('%Y-%m-%d %H:%M:%S')}, shard.world={world}\n")
    handle.flush()  # before looking at the others: of two starting at once, one sees the other
    try:
        _check_live_worlds(folder, path, world)
    except ConfigError:
        handle.close()
        raise
    return handle


def _check_live_worlds(folder: Path, own: Path, world: int) -> None:
    """Refuse when another shard is running into this ``out_dir`` with another world size."""
    for other in sorted(folder.glob("shard-*.lock")):
        if other == own:
            continue
        with other.open("r") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:  # held: a live evaluation
                holder = f.read().strip()
                if ", shard.world=" in holder and not holder.endswith(f", shard.world={world}"):
                    raise ConfigError(
                        f"{folder.parent}: {other.stem} of an evaluation with another world size "
                        f"is running here ({holder}); shard.world={world} now would plan some "
                        "instances twice: use the same shard.world, or wait for it") from None


class Journal:
    def __init__(self, out_dir: str | Path, rank: int = 0):
        self.dir = Path(out_dir) / "journal"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / f"shard-{rank}.jsonl"
        self._repair()

    def _repair(self) -> None:
        """Drop a torn last line (killed mid-write) from this shard's own file."""
        if not self.path.is_file():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            with self.path.open("r+b") as f:
                f.truncate(data.rfind(b"\n") + 1)

    def check_run(self, fingerprint: dict) -> None:
        """Record the run's settings, or refuse if ``out_dir`` holds a different run."""
        path = self.dir / "run.json"
        fingerprint = json.loads(json.dumps(fingerprint))  # normalise tuples, keys
        if path.is_file():
            old = json.loads(path.read_text())
            for key in sorted(set(old) | set(fingerprint)):
                if old.get(key) != fingerprint.get(key):
                    raise ConfigError(
                        f"{self.dir.parent}: holds results of a different run ({key}: "
                        f"{old.get(key)!r} there, {fingerprint.get(key)!r} now); use another "
                        "out_dir or delete it")
            return
        write_atomic(path, json.dumps(fingerprint, indent=2, sort_keys=True))

    def records(self) -> dict[str, dict]:
        """Finished instances of every shard, by id (first record wins)."""
        out: dict[str, dict] = {}
        for shard in sorted(self.dir.glob("shard-*.jsonl")):
            for line in shard.read_text().splitlines(keepends=True):
                if not line.endswith("\n"):
                    break  # another shard's line still being written
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                out.setdefault(record["id"], record)
        return out

    def append(self, record: dict) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def log_session(self, info: dict) -> None:
        with (self.dir / "sessions.jsonl").open("a") as f:
            f.write(json.dumps(info, sort_keys=True) + "\n")

    def sessions(self) -> list[dict]:
        path = self.dir / "sessions.jsonl"
        if not path.is_file():
            return []
        return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]
