"""The import layers of libs/ and services/ (docs/architecture.md, "Layers"): which package
may import which, read from the table in that doc, so the doc and the code cannot drift
apart; the packages an auditor re-runs import no I/O; and no import circle anywhere.

An import here is what runs when a module is imported: every `import` and `from … import`
in it, at the top or inside a function, except those under `if TYPE_CHECKING:` (never run)
and under `if __name__ == "__main__":` (run only when the file is the program, as
`__main__`, not as the module others import). `from package import name` imports the
submodule `package.name` when there is one, else `package`. A package's own `__init__`,
which Python runs before any of its submodules, is not counted as imported by them (the
usual `__init__` that imports its submodules would otherwise be a circle).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROOTS = {"boulevard": REPO / "libs" / "boulevard", "services": REPO / "services"}
DOC = REPO / "docs" / "architecture.md"
TOPS = ("boulevard", "services")  # the top packages: empty, anyone may import them

# What an auditor re-runs (and the standalone auditor ships): no network, processes,
# threads, event loop or logging, nor the platform's packages that do I/O (the layer table
# keeps those out). tests/unit/test_purity.py is stricter for games, fairness, accounting.
NO_IO = ("games", "fairness", "accounting", "audit", "contract")
IO_MODULES = (
    "asyncio", "socket", "ssl", "subprocess", "threading", "multiprocessing", "selectors",
    "shutil", "urllib", "http", "nats", "grpc", "structlog", "logging",
)  # fmt: skip


def module_files(roots: Mapping[str, Path]) -> dict[str, Path]:
    """Every module under the roots by its dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for top, root in roots.items():
        for path in sorted(root.rglob("*.py")):
            parts = [top, *path.relative_to(root).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _not_run(node: ast.AST) -> bool:
    """An `if TYPE_CHECKING:` or `if __name__ == "__main__":` block."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    if isinstance(test, ast.Attribute):
        return test.attr == "TYPE_CHECKING"
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
    )


def imports_of(source: str, modules: Mapping[str, object]) -> set[str]:
    """The dotted names a module's source imports when it runs (see the module docstring):
    names in `modules` resolved to the submodule where there is one."""
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if _not_run(child):
                continue
            if isinstance(child, ast.Import):
                names.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                for alias in child.names:
                    sub = f"{child.module}.{alias.name}"
                    names.add(sub if sub in modules else child.module)
            visit(child)

    visit(ast.parse(source))
    return names


def import_graph(files: Mapping[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of `files` it imports."""
    return {
        module: {n for n in imports_of(path.read_text(), files) if n in files and n != module}
        for module, path in files.items()
    }


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The import circles: each set of two or more modules that import one another,
    directly or through each other (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def package_of(module: str) -> str:
    """The layer a module belongs to: `boulevard.<package>` or `services.<service>`."""
    return ".".join(module.split(".")[:2])


def layer_table(doc: str) -> dict[str, set[str]]:
    """The doc's layer table: each package (a row's first cell) -> the packages it may
    import (its second cell; `services.*` stands for every service)."""
    section = doc.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    allowed: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("`"):
            continue
        for package in re.findall(r"`([\w.*]+)`", cells[0]):
            allowed[package] = set(re.findall(r"`([\w.*]+)`", cells[1]))
    return allowed


def row_of(table: Mapping[str, set[str]], package: str) -> set[str] | None:
    """A package's row: its own, or `services.*` for a service; None: not in the table."""
    if package in table:
        return table[package]
    return table.get("services.*") if package.startswith("services.") else None


def may_import(table: Mapping[str, set[str]], source: str, target: str) -> bool:
    if target in (source, *TOPS):  # itself; the empty top packages
        return True
    row = row_of(table, source)
    if row is None:
        return False
    return target in row or (target.startswith("services.") and "services.*" in row)


def violations(graph: Mapping[str, set[str]], table: Mapping[str, set[str]]) -> list[str]:
    """Every import the table does not allow, and every package the table does not name."""
    out = []
    for module, targets in sorted(graph.items()):
        source = package_of(module)
        if row_of(table, source) is None:
            out.append(f"{source} is not in the layer table of docs/architecture.md")
            continue
        out.extend(
            f"{module} imports {target} ({source} may not import {package_of(target)})"
            for target in sorted(targets)
            if not may_import(table, source, package_of(target))
        )
    return sorted(set(out))


# -- the repository -------------------------------------------------------------------------

FILES = module_files(ROOTS)
GRAPH = import_graph(FILES)
TABLE = layer_table(DOC.read_text())


def test_no_import_circle_in_libs_or_services() -> None:
    assert circles(GRAPH) == []


def test_every_import_is_one_the_layer_table_allows() -> None:
    assert violations(GRAPH, TABLE) == []


def test_no_service_reaches_the_sdk() -> None:
    """Not even through another package: boulevard.client is what apps import."""
    reached = {m for m in GRAPH if m.startswith("services.")}
    todo = list(reached)
    while todo:
        for target in GRAPH[todo.pop()]:
            if target not in reached:
                reached.add(target)
                todo.append(target)
    sdk = sorted(m for m in reached if package_of(m) in ("boulevard.client", "boulevard.cli"))
    assert sdk == []


@pytest.mark.parametrize("package", NO_IO)
def test_what_an_auditor_reruns_imports_no_io(package: str) -> None:
    offenders = sorted(
        f"{module}: {name}"
        for module, path in FILES.items()
        if package_of(module) == f"boulevard.{package}"
        for name in imports_of(path.read_text(), FILES)
        if name.split(".")[0] in IO_MODULES
    )
    assert offenders == []


# -- the checks themselves, on a made-up tree -----------------------------------------------


def _tree(tmp_path: Path, files: Mapping[str, str]) -> dict[str, set[str]]:
    for name, source in files.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return import_graph(module_files({"pkg": tmp_path / "pkg"}))


def test_a_circle_is_found_even_through_a_function(tmp_path: Path) -> None:
    graph = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from pkg.b import f\n",
            "b.py": "def f():\n    from pkg import c\n",
            "c.py": "import pkg.a\n",
            "d.py": "import pkg.a\n",
        },
    )
    assert circles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_type_checking_and_main_blocks_and_own_package_are_not_circles(tmp_path: Path) -> None:
    graph = _tree(
        tmp_path,
        {
            "__init__.py": "from pkg import a\n",
            "a.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from pkg.b import B\n",
            "b.py": "import pkg.a\nif __name__ == '__main__':\n    import pkg.b\n",
        },
    )
    assert graph == {"pkg": {"pkg.a"}, "pkg.a": set(), "pkg.b": {"pkg.a"}}
    assert circles(graph) == []


def test_the_table_refuses_what_it_does_not_list() -> None:
    table = layer_table(
        "# x\n\n## Layers\n\n| package | may import |\n|---|---|\n"
        "| `boulevard.games`, `boulevard.api` | — |\n"
        "| `boulevard.contract` | `boulevard.games`, `boulevard.api` |\n"
        "| `services.*` | `boulevard.contract` |\n\n## Next\n| `boulevard.cli` | x |\n"
    )
    assert table["boulevard.api"] == set() and "boulevard.cli" not in table
    graph = {
        "boulevard.contract.m": {"boulevard.games.base", "boulevard.api.v1"},
        "boulevard.games.base": {"boulevard.contract.m"},
        "services.engine.app": {"boulevard.contract.m", "services.dice.app"},
        "boulevard.cli.app": set(),
    }
    assert violations(graph, table) == [
        "boulevard.cli is not in the layer table of docs/architecture.md",
        "boulevard.games.base imports boulevard.contract.m (boulevard.games may not import "
        "boulevard.contract)",
        "services.engine.app imports services.dice.app (services.engine may not import "
        "services.dice)",
    ]
