"""The package's shape: the CLI is a porch over the library, and no two modules import each other.

Read from the source with :mod:`ast` (every ``import``, including those inside functions), so
the rules hold for lazy imports too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import tomllib

PACKAGE = Path(__file__).resolve().parents[1] / "plansuite"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported(path: Path) -> Iterator[str]:
    """Every module name an ``import`` of ``path`` names (``from a import b`` gives a and a.b)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: {m for m in imported(path) if m in mods and m != name}
            for name, path in mods.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_only_the_cli_imports_hydra_or_the_cli():
    offenders = []
    for name, path in modules().items():
        if name == "plansuite.cli" or name.startswith("plansuite.cli."):
            continue
        for target in imported(path):
            if target.split(".")[0] == "hydra" or target == "plansuite.cli" \
                    or target.startswith("plansuite.cli."):
                offenders.append(f"{name} imports {target}")
    assert not offenders, "library code must not import Hydra or the CLI:\n" + "\n".join(offenders)


def runs_as_a_script(path: Path) -> bool:
    """Whether ``path`` has an ``if __name__ == "__main__":`` block (at any depth)."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
            sides = [node.test.left, *node.test.comparators]
            names = {side.id for side in sides if isinstance(side, ast.Name)}
            texts = {side.value for side in sides if isinstance(side, ast.Constant)}
            if "__name__" in names and "__main__" in texts:
                return True
    return False


def test_only_the_cli_runs_as_a_script():
    """Every command is a module of ``plansuite.cli`` (a console script of pyproject.toml)."""
    scripts = [name for name, path in modules().items()
               if runs_as_a_script(path) and not name.startswith("plansuite.cli.")]
    assert scripts == [], "move the command-line part into plansuite/cli/"


def test_every_console_script_is_a_main_of_the_cli():
    scripts = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"]["scripts"]
    mods = modules()
    for script, target in scripts.items():
        module, _, function = target.partition(":")
        assert module.startswith("plansuite.cli.") and module in mods, f"{script}: {target}"
        tree = ast.parse(mods[module].read_text())
        assert function in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}, target


def test_the_script_check_finds_a_main_block(tmp_path):
    for text, found in [("if __name__ == '__main__':\n    main()\n", True),
                        ("def f():\n    if '__main__' == __name__:\n        pass\n", True),
                        ("if __name__ == 'plansuite':\n    pass\n", False)]:
        (tmp_path / "m.py").write_text(text)
        assert runs_as_a_script(tmp_path / "m.py") is found


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_two_modules_share_a_file_name():
    seen: dict[str, list[str]] = {}
    for name, path in modules().items():
        if path.name != "__init__.py":
            seen.setdefault(path.name, []).append(name)
    assert {f: m for f, m in seen.items() if len(m) > 1} == {}


# The layers, lowest first: a module imports only from layers below its own (and its own package).
# Packages sharing a layer do not import each other (the foundation, layer 0, excepted). "" is the
# package's own ``__init__``.
LAYERS = [
    {"", "config_dir", "errors", "jsonl", "progress", "settings", "tracking"},
    {"pddl"},  # torch-free PDDL: parse, simulate, judge, plan
    {"domains"},  # built-in domains and state samplers over PDDL
    {"data"},  # datasets and recipes (torch-free)
    {"models"},  # LightningModules, DataModules, sampling a model
    {"planning"},  # planner loops over a model and the simulator
    {"report"},  # tables and pages over results
    {"nl2pddl"},  # natural language to PDDL (prints its tables with report.tables)
    {"training"},
    {"skills"},
    {"pipeline"},  # runs stages, each a CLI in a child process
    {"cli"},
]

# Inside ``nl2pddl``, the same rule over its sub-packages (``chat_server``, ``plansuite-serve``, on top).
NL2PDDL_LAYERS = [
    {""},
    {"judging"},  # is a problem right: equivalence, operational checks, the critic protocol
    {"data"},  # scenes, descriptions, corruptions, the dataset on disk
    {"decoding"},  # the generator protocol and chat backend, constrained decoding, mentions
    {"models", "loop"},  # the learned models (torch) | the repair loop and its runs
    {"chat_server"},
]


def layer_of(module: str, layers: list[set[str]] = LAYERS, package: str = "plansuite") -> tuple[int, str]:
    """(layer, part) of ``module`` inside ``package``: ``plansuite.data.load`` is in ``data``'s layer."""
    parts = module.split(".")
    depth = package.count(".") + 1
    part = parts[depth] if len(parts) > depth else ""
    for rank, members in enumerate(layers):
        if part in members:
            return rank, part
    raise AssertionError(f"{module}: {part!r} is in no layer of {package}'s in tests/test_architecture.py")


def upward_imports(graph: dict[str, set[str]], layers: list[set[str]] = LAYERS,
                   package: str = "plansuite") -> list[str]:
    """Every import, among ``package``'s modules, of a module from a higher layer, or from another
    part of its own layer."""
    def inside(module: str) -> bool:
        return module == package or module.startswith(package + ".")

    out = []
    for name, targets in sorted(graph.items()):
        if not inside(name):
            continue
        rank, part = layer_of(name, layers, package)
        for target in sorted(filter(inside, targets)):
            t_rank, t_part = layer_of(target, layers, package)
            if t_rank > rank or (t_rank == rank and t_part != part and rank > 0):
                out.append(f"{name} imports {target}")
    return out


def test_no_module_imports_from_a_higher_layer():
    assert upward_imports(import_graph()) == []


def test_the_layer_check_finds_the_back_edges_it_forbids():
    back_edges = {"plansuite.planning.budget": {"plansuite.report.tables"},
                  "plansuite.data.verifier_recipes": {"plansuite.models.sampling"},
                  "plansuite.domains.folder": {"plansuite.data.load"},
                  "plansuite.report.paper": {"plansuite.nl2pddl.loop.paired_runs"},
                  "plansuite.data.load": {"plansuite.pddl.parse", "plansuite.errors"}}
    assert upward_imports(back_edges) == [
        "plansuite.data.verifier_recipes imports plansuite.models.sampling",
        "plansuite.domains.folder imports plansuite.data.load",
        "plansuite.planning.budget imports plansuite.report.tables",
        "plansuite.report.paper imports plansuite.nl2pddl.loop.paired_runs"]


def test_nl2pddl_sub_packages_import_only_downward():
    assert upward_imports(import_graph(), NL2PDDL_LAYERS, "plansuite.nl2pddl") == []


def test_every_nl2pddl_module_is_in_a_sub_package():
    loose = [name for name in modules() if name.count(".") == 2
             and name.startswith("plansuite.nl2pddl.") and modules()[name].name != "__init__.py"]
    assert loose == ["plansuite.nl2pddl.chat_server"]


def test_the_nl2pddl_layer_check_finds_the_back_edges_it_forbids():
    back_edges = {"plansuite.nl2pddl.judging.equivalence": {"plansuite.nl2pddl.data.scenes"},
                  "plansuite.nl2pddl.models.learned": {"plansuite.nl2pddl.loop.repair"},
                  "plansuite.nl2pddl.loop.generate": {"plansuite.nl2pddl.data.dataset",
                                                      "plansuite.nl2pddl.chat_server"}}
    assert upward_imports(back_edges, NL2PDDL_LAYERS, "plansuite.nl2pddl") == [
        "plansuite.nl2pddl.judging.equivalence imports plansuite.nl2pddl.data.scenes",
        "plansuite.nl2pddl.loop.generate imports plansuite.nl2pddl.chat_server",
        "plansuite.nl2pddl.models.learned imports plansuite.nl2pddl.loop.repair"]


def test_the_trainer_knows_model_kinds_only_through_their_plug_ins():
    """``plansuite.training`` finds a kind by ``model.kind`` (its module's ``KIND``), so neither
    NL -> PDDL nor any kind's LightningModule is one of its imports."""
    kinds = {"plansuite.models.generator", "plansuite.models.verifier"}
    bad = sorted(t for t in import_graph()["plansuite.training"]
                 if t.startswith("plansuite.nl2pddl") or t in kinds)
    assert bad == []
