"""No import cycle between the project's modules, and small package loops: each package can be read from the bottom up.

Imports are read with ast from the source, so a lazy import inside a function counts as much as one at
the top of a module: hiding a cycle inside a function does not remove it.
"""

import ast
from pathlib import Path

from tests.support.packages import PACKAGES

ROOT = Path(__file__).resolve().parent.parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    return {
        module_name(path): path
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts
    }


def imported_names(path: Path, module: str) -> set[str]:
    """Every dotted name an import statement in this file names, absolute or relative."""
    names = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The project module an imported name lives in: the longest dotted prefix that is a module."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    graph = {}
    for module, path in modules.items():
        targets = {resolve(name, modules) for name in imported_names(path, module)}
        # A package's __init__ is loaded on the way to its modules; an edge to an ancestor is not a cycle of ideas.
        graph[module] = {t for t in targets if t and t != module and not module.startswith(t + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_sees_lazy_imports_inside_functions():
    graph = import_graph()
    assert "training.node.worker_presence" in graph["training.apps"]  # imported inside AppConfig.ready()


def test_no_module_imports_itself_back_through_others():
    assert cycles(import_graph()) == []


# Modules that wire the packages together (URL tables, websocket routes, settings, admin registrations, Celery
# discovery, app configs, entry points) import from everywhere by design; the package picture leaves them out.
COMPOSITION_ROOTS = {
    "urls",
    "app_urls",
    "api_urls",
    "routing",
    "settings",
    "asgi",
    "celery",
    "celery_settings",
    "admin",
    "tasks",
    "apps",
    "__main__",
}
LARGEST_PACKAGE_LOOP = 4


def is_composition_root(module: str) -> bool:
    parts = module.split(".")
    return parts[-1] in COMPOSITION_ROOTS or "management" in parts or "demo" in parts


def package_graph() -> dict[str, set[str]]:
    """Each package (a folder) → the packages its modules import, composition roots set aside; an import of
    an enclosing package (its __init__ runs on the way in) is not counted."""
    modules = project_modules()

    def package(module: str) -> str:
        return module if modules[module].name == "__init__.py" else module.rpartition(".")[0]

    graph: dict[str, set[str]] = {}
    for module, targets in import_graph().items():
        if is_composition_root(module):
            continue
        source = package(module)
        found = graph.setdefault(source, set())
        for target in targets:
            if not is_composition_root(target) and not source.startswith(package(target) + "."):
                found.add(package(target))
        found.discard(source)
    return graph


def test_the_inventory_imports_nothing_above_it():
    above = {"monitoring", "training", "reservations", "accounts"}
    reached = {
        target for source, targets in package_graph().items() if source.startswith("inventory") for target in targets
    }
    assert not {target for target in reached if target.split(".")[0] in above}


def test_no_package_loop_runs_through_the_inventory():
    assert not [loop for loop in cycles(package_graph()) if any(p.startswith("inventory") for p in loop)]


def test_no_package_loop_is_larger_than_four_packages():
    loops = cycles(package_graph())
    assert all(len(loop) <= LARGEST_PACKAGE_LOOP for loop in loops), [loop for loop in loops if len(loop) > 4]


if __name__ == "__main__":
    for component in cycles(import_graph()):
        print("modules:", " <-> ".join(component))
    for loop in sorted(cycles(package_graph()), key=len, reverse=True):
        print(f"packages ({len(loop)}):", " <-> ".join(loop))
