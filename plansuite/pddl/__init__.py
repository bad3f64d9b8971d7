"""Symbolic PDDL core: parsing, semantic checks, grounding/simulation, text codec, plans, VAL, FD.

Pure Python; imports no torch.
"""

from plansuite.pddl.model import Atom, Domain, Problem, Schema, atom_text, problem_to_pddl
from plansuite.pddl.parse import load_domain, load_problem, parse_domain, parse_problem
from plansuite.pddl.simulator import GroundTask, Inapplicable, PlanCheck, TaskCache

__all__ = [
    "Atom", "Domain", "GroundTask", "Inapplicable", "PlanCheck", "Problem", "Schema", "TaskCache",
    "atom_text", "load_domain", "load_problem", "parse_domain", "parse_problem", "problem_to_pddl",
]
