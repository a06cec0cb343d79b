"""Checks of the import graph that import-linter's contracts leave open (run by ``make lint``).

- No cycle: no two modules, in any package, depend on each other through a chain of imports.
- Every module of a layered package stands in one of its contract's layers, so a new module
  cannot escape the layering by being left out of the list.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import grimp

PACKAGES = ("svc", "api", "dispatcher", "scheduler", "cli")


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    imported = sorted(graph.find_modules_directly_imported_by(child))
                    work.append((child, iter(imported)))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
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
    return found


def outside_layers(graph: grimp.ImportGraph, pyproject: Path) -> list[str]:
    """Modules of a package whose contract lists its layers module by module (the kernel, the
    API role) that no layer of that contract covers."""
    contracts = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]["contracts"]
    missing = []
    for contract in contracts:
        if contract["type"] != "layers" or contract.get("containers"):
            continue
        layered = [name.strip() for layer in contract["layers"] for name in _split(layer)]
        top = {name.split(".")[0] for name in layered}
        if len(top) != 1 or any("." not in name for name in layered):
            continue  # a contract between whole packages covers all their modules
        (package,) = top
        for module in sorted(graph.find_descendants(package)):
            if graph.find_descendants(module):
                continue  # a package's own __init__ holds no code of a layer
            if not any(module == name or module.startswith(name + ".") for name in layered):
                missing.append(f"{module} (in no layer of: {contract['name']})")
    return missing


def _split(layer: str) -> list[str]:
    return layer.replace("|", ":").split(":")


def main() -> int:
    graph = grimp.build_graph(*PACKAGES)
    found = cycles(graph)
    for component in found:
        print("import cycle: " + " <-> ".join(component))
    missing = outside_layers(graph, Path(__file__).resolve().parent.parent / "pyproject.toml")
    for line in missing:
        print("unlayered module: " + line)
    if not found and not missing:
        print(f"no import cycle among {len(graph.modules)} modules; every module layered")
    return 1 if found or missing else 0


if __name__ == "__main__":
    sys.exit(main())
