"""``python -m plansuite.report.notebook NOTEBOOK OUT`` (``make notebook``): execute a notebook
with nbclient (the ``notebook`` extra) and write the executed copy, outputs included, to OUT.
The committed notebook stays without outputs; its parameters come from the environment
(``PLANSUITE_RESULTS``, ``PLANSUITE_FIGURES`` for ``notebooks/analysis.ipynb``)."""

from __future__ import annotations

import argparse
from pathlib import Path


def execute(notebook: Path, out: Path, timeout_s: int = 600) -> Path:
    """Run every cell with the notebook's folder as working directory; a failing cell raises
    (nbclient's CellExecutionError names it) and writes nothing."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(notebook, as_version=4)
    NotebookClient(nb, timeout=timeout_s, kernel_name="python3",
                   resources={"metadata": {"path": str(notebook.resolve().parent)}}).execute()
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m plansuite.report.notebook", description=__doc__)
    parser.add_argument("notebook", type=Path)
    parser.add_argument("out", type=Path, help="where the executed copy goes")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = parser.parse_args(argv)
    print(f"[notebook] wrote {execute(args.notebook, args.out, args.timeout)}")


if __name__ == "__main__":
    main()
