"""``plansuite-equiv REFERENCE GENERATED --domain DOMAIN``: is a generated problem the reference?

Prints JSON: ``parse`` (did GENERATED parse), ``structural`` and ``semantic`` (true / false /
null when undecidable, e.g. semantic for a domain without a model), ``mapping`` (generated object
→ reference object, or null) and ``reasons``. Exits 0 whatever the verdict; exits 1 with one
line only when the input cannot be read: a missing file, a bad domain, or a reference that is not
a valid problem of the domain (the generated file may be anything). A domain file with numeric
fluents is read as PDDL 2.1, and goals may compare numeric expressions
(``(<= (+ (value c0) 1) (value c1))``), compared in canonical form under the same renaming.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from plansuite.cli import friendly_errors
from plansuite.domains import BUILTIN, load_builtin
from plansuite.nl2pddl.judging.equivalence import compare_file
from plansuite.pddl.numeric_goals import load_problem21
from plansuite.pddl.parse import load_domain


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="plansuite-equiv", description=__doc__.split("\n\n")[0])
    p.add_argument("reference", help="reference problem.pddl")
    p.add_argument("generated", help="generated problem.pddl to judge")
    p.add_argument("--domain", required=True,
                   help=f"built-in domain name ({', '.join(BUILTIN)}) or a domain file")
    return p


@friendly_errors
def run(args: argparse.Namespace) -> dict:
    domain = load_builtin(args.domain) if args.domain in BUILTIN and not Path(args.domain).is_file() \
        else load_domain(args.domain)
    reference = load_problem21(args.reference, domain)
    result = compare_file(reference, args.generated, domain).as_dict()
    print(json.dumps(result, indent=2, sort_keys=True))
    return result


def main(argv: list[str] | None = None) -> None:
    run(parser().parse_args(argv))


if __name__ == "__main__":
    main()
