"""plansuite: planning with language models over PDDL domains (Lightning + Hydra)."""

from plansuite.config_dir import config_dir

__version__ = "0.1.0"

# the Hydra configs (the checkout's conf/, or a wheel's copy); read by the CLIs and the pipeline
CONF_DIR = str(config_dir())
