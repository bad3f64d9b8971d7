"""plansuite: planning with language models over PDDL domains (Lightning + Hydra)."""

__version__ = "0.1.0"
