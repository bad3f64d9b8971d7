"""Paper-scale dataset generation: ``plansuite-data dataset=paper workers=2`` wall time (target <= 30 s).

Runs the real CLI in a subprocess (Python and Hydra start-up included) into a temp dir, which is
deleted afterwards. CPU seconds are reported too: on a shared machine the wall time depends on
what else runs (the runner records the load average).
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_WALL_S = 30.0


def main() -> dict:
    cli = str(Path(sys.executable).with_name("plansuite-data"))
    with tempfile.TemporaryDirectory(prefix="plansuite-bench-data-") as tmp:
        out = Path(tmp) / "paper"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run([cli, "dataset=paper", "domain=blocksworld", "workers=2", "seed=0",
                               f"out_dir={out}"], capture_output=True, text=True, cwd=tmp)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            raise RuntimeError(f"plansuite-data failed: {proc.stderr.strip()[-500:]}")
        manifest = json.loads((out / "manifest.json").read_text())
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        shutil.rmtree(out)
    train = manifest["counts"]["train"]
    return {
        "wall_s": round(wall, 2),
        "target_wall_s": TARGET_WALL_S,
        "meets_target": wall <= TARGET_WALL_S,
        "cpu_s_all_processes": round((after.ru_utime - before.ru_utime)
                                     + (after.ru_stime - before.ru_stime), 2),
        "builder_timings_s": manifest["timings_s"],
        "train_trajectories": train["trajectories"],
        "train_transitions": train["transitions"],
        "val_trajectories": manifest["counts"]["val"]["trajectories"],
        "test_instances": manifest["counts"]["test"]["instances"],
        "label_noise_train": manifest["label_noise"]["random_negatives_applicable_rate"]["train"],
        "test_pairs_resampled_for_leakage": manifest["leakage"]["test_pairs_found_in_train"],
        "dataset_mb": round(size / 2**20, 1),
    }
