"""JSON-lines files: read them, append to them so a kill loses at most the line being written,
and replace whole files atomically. Every JSONL file of the suite goes through here."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path


def iter_jsonl(path: str | Path) -> Iterator[dict]:
    """The objects of a JSONL file, blank lines skipped."""
    with open(path) as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step (a temp file renamed over it)."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a full disk leaves the old file, not a torn temp file
        raise


def complete_lines(path: Path) -> list[str]:
    """The lines of a JSONL file written by :func:`append_lines`, without a torn last line."""
    if not path.is_file():
        return []
    lines = path.read_text().splitlines(keepends=True)
    return lines if not lines or lines[-1].endswith("\n") else lines[:-1]


def append_lines(path: Path, lines: Sequence[str]) -> None:
    """Append lines to a JSONL file and fsync; a torn last line (a kill) is dropped first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = path.read_text() if path.is_file() else ""
    if text and not text.endswith("\n"):
        write_atomic(path, text[:text.rfind("\n") + 1])
    with path.open("a") as f:
        f.write("".join(line + "\n" for line in lines))
        f.flush()
        os.fsync(f.fileno())
