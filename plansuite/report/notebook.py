"""Execute a notebook with nbclient (the ``notebook`` extra) and write the executed copy, outputs
included, to OUT (``plansuite-notebook NOTEBOOK OUT``, ``make notebook``: :mod:`plansuite.cli.run_notebook`).
The committed notebook stays without outputs; its parameters come from the environment
(``PLANSUITE_RESULTS``, ``PLANSUITE_FIGURES`` for ``notebooks/analysis.ipynb``)."""

from __future__ import annotations

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
