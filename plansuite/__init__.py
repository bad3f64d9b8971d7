"""plansuite: planning with language models over PDDL domains (Lightning + Hydra)."""

from pathlib import Path

__version__ = "0.1.0"

# the repository's Hydra configs (conf/); read by the CLIs and the pipeline runner
CONF_DIR = str(Path(__file__).resolve().parents[1] / "conf")
