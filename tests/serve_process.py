"""``plansuite-serve`` as a subprocess for the tests that talk to it over loopback."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path


def serve_command() -> list[str]:
    """The installed ``plansuite-serve`` beside this interpreter, else its module."""
    exe = shutil.which("plansuite-serve", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "plansuite.cli.serve"]


@contextlib.contextmanager
def served(*args: str, **env: str) -> Iterator[str]:
    """Run ``plansuite-serve *args`` (``env`` added to this process's) and yield its base URL; on exit
    the server is stopped, killed if SIGTERM has not ended it within 30 s."""
    # stderr to a file: a pipe nobody reads would block the server once it filled
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([*serve_command(), *args], stdout=subprocess.PIPE, stderr=err, text=True,
                                env={**os.environ, "PLANSUITE_DEBUG": "", "HF_HUB_OFFLINE": "1",
                                     "OMP_NUM_THREADS": "1", **env})
        try:
            line = proc.stdout.readline()
            if not line.startswith("serving "):
                proc.kill()
                proc.wait()
                err.seek(0)
                raise AssertionError(f"no server: {line!r} {err.read()}")
            yield line.rsplit(" at ", 1)[1].strip()
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()
