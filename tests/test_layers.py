"""The floor plan holds: imports only go down, and nothing imports in a circle.

Floors (DESIGN.md, "Target layout"): the edges (`cli`, `commands/`, `hookio`, `hooktypes`,
`events/`, `hosts/`, `setup/`) over the features (`invariants/`, `guard/`, `compress/`, `bank/`,
`subagents/`, `transcript/`, `sessions/`, `drift/`, `debate/`) over `core/` over `errors`. Every
import counts, the lazy ones inside functions too; only those under `if TYPE_CHECKING:` do not
(they never run).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

LIB = Path(__file__).resolve().parents[1] / "lib"
PACKAGE = LIB / "ctxward"

EDGES = {"cli", "__main__", "hookio", "hooktypes", "commands", "events", "hosts", "setup"}
FEATURES = {
    "invariants",
    "guard",
    "compress",
    "bank",
    "subagents",
    "transcript",
    "sessions",
    "drift",
    "debate",
}
FLOOR = {**dict.fromkeys(EDGES, 3), **dict.fromkeys(FEATURES, 2), "core": 1, "errors": 0}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(LIB).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()
NAMES = {path: name for name, path in MODULES.items()}


@functools.cache
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.cache
def _imports(path: Path, *, top_level_only: bool) -> frozenset[str]:
    """The ctxward modules `path` imports (a `from x import y` of a module counts as x.y)."""
    tree = _parsed(path)
    name = NAMES[path]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST, top: bool) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child, top)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("ctxward"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            if base.startswith("ctxward"):
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    found.add(full if full in MODULES else base)
        for child in ast.iter_child_nodes(node):
            nested = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if top_level_only and nested:
                continue
            visit(child, top and not nested)

    visit(tree, True)
    found.discard(name)
    return frozenset(found)


def _floor(module: str) -> tuple[int, str]:
    parts = module.split(".")
    if len(parts) == 1:  # the package itself: its __init__ holds only the version
        return 0, "ctxward"
    top = parts[1]
    return FLOOR[top], top


def test_every_module_has_a_floor() -> None:
    unplaced = sorted({m.split(".")[1] for m in MODULES if "." in m} - set(FLOOR))
    assert not unplaced, f"modules at the package root with no floor: {unplaced}"


def test_imports_only_go_down() -> None:
    upward = []
    for name, path in sorted(MODULES.items()):
        level, _ = _floor(name)
        for target in sorted(_imports(path, top_level_only=False)):
            if _floor(target)[0] > level:
                upward.append(f"{name} -> {target}")
    assert not upward, "imports that go up a floor:\n" + "\n".join(upward)


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph`, as the list of its nodes, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state:
                found = walk(target)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = walk(node)
            if found:
                return found
    return None


def test_no_module_imports_itself_in_a_circle() -> None:
    # Top-level imports only: a lazy import inside a function runs after both modules loaded.
    graph = {name: set(_imports(path, top_level_only=True)) for name, path in MODULES.items()}
    cycle = _cycle(graph)
    assert cycle is None, "an import cycle: " + " -> ".join(cycle or [])


def test_features_and_the_base_form_no_circle() -> None:
    # Every import, lazy ones too, between packages below the edges.
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        level, top = _floor(name)
        if level == 3:
            continue
        for target in _imports(path, top_level_only=False):
            other = _floor(target)[1]
            if other != top:
                graph.setdefault(top, set()).add(other)
    cycle = _cycle(graph)
    assert cycle is None, "packages that import each other: " + " -> ".join(cycle or [])


def test_the_checks_see_what_they_claim() -> None:
    """The walker finds lazy imports and resolves `from package import module`."""
    pre_tool_use = _imports(MODULES["ctxward.events.pre_tool_use"], top_level_only=False)
    assert "ctxward.guard.decide" in pre_tool_use  # imported inside a function
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_module_is_longer_than_600_lines() -> None:
    long = {
        name: lines
        for name, path in MODULES.items()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert not long, f"modules over 600 lines (split them along their seams): {long}"


def test_templates_mirror_the_packages() -> None:
    """templates/<package>/: each text sits in the folder of the package it belongs to."""
    templates = LIB.parent / "templates"
    packages = {p.parent.name for p in (LIB / "ctxward").glob("*/__init__.py")}
    loose = sorted(p.name for p in templates.iterdir() if p.is_file())
    folders = sorted(p.name for p in templates.iterdir() if p.is_dir())

    assert loose == []
    assert [name for name in folders if name not in packages] == []
    assert len(folders) >= 10  # the walk saw the tree


def test_no_module_imports_another_modules_private_name() -> None:
    """A name with a leading underscore belongs to its module: what another module needs is
    public in the module that owns it."""
    borrowed = []
    for path in MODULES.values():
        for node in ast.walk(_parsed(path)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ctxward"):
                names = [a.name for a in node.names if a.name[:1] == "_" and a.name[:2] != "__"]
                borrowed += [f"{NAMES[path]}: {node.module}.{name}" for name in names]

    assert borrowed == []
    assert len(MODULES) > 100  # the walk saw the package


def test_the_bench_scripts_import_names_that_exist() -> None:
    """A move must take `bench/` along: its scripts import ctxward in their own code and in the
    programs they hand to `python -c` (a stale name there only shows as a failed benchmark)."""
    import importlib.util
    import re

    found = []
    for script in sorted((LIB.parent / "bench").glob("*.py")):
        text = script.read_text(encoding="utf-8")
        for module, names in re.findall(r"from (ctxward[\w.]*) import ([\w, ]+)", text):
            for name in (n.strip() for n in names.split(",") if n.strip()):
                found.append(f"{script.name}: {module}.{name}")
                imported = importlib.import_module(module)
                assert hasattr(imported, name) or importlib.util.find_spec(f"{module}.{name}"), (
                    f"{script.name}: {module} has no {name}"
                )

    assert len(found) >= 8  # the scan saw the scripts' imports
