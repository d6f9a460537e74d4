"""The import layers, read from the source (every import, including those inside functions and
under ``TYPE_CHECKING``):

- ``wireserver.protocol`` (the ``protocol/`` folder) imports nothing else of ours;
- ``wireserver.storage`` (``storage/``) imports only ``wireserver.protocol``;
- no broker module imports the test kit ``wireserver.testing`` (only the CLI, for its
  ``wireserver cluster`` development command, and the kit itself do);
- no module of ours imports itself back through others: handlers and services are given what
  they use (``wireserver.services``, small Protocols of what a class uses of its owner), never
  the ``Broker``.

Import-linter cannot read this layout: its graph walks a package's own folder, and
``wireserver.protocol`` / ``wireserver.storage`` live beside it in a checkout."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {
    "wireserver": "wireserver",
    "protocol": "wireserver.protocol",
    "storage": "wireserver.storage",
}


def module_files() -> dict[str, Path]:
    modules = {}
    for folder, package in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join((package, *parts))] = path
    return modules


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ours that ``name`` imports (``from x import y`` counts as ``x.y`` when
    that is a module, else ``x``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    modules = module_files()
    known = set(modules)
    return {name: imports_of(name, path, known) for name, path in modules.items()}


def circles(edges: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_protocol_imports_nothing_else_of_ours():
    wrong = {
        m: sorted(t for t in targets if not in_package(t, "wireserver.protocol"))
        for m, targets in graph().items()
        if in_package(m, "wireserver.protocol")
    }
    assert {m: t for m, t in wrong.items() if t} == {}


def test_storage_imports_only_protocol():
    allowed = ("wireserver.storage", "wireserver.protocol")
    wrong = {
        m: sorted(t for t in targets if not any(in_package(t, a) for a in allowed))
        for m, targets in graph().items()
        if in_package(m, "wireserver.storage")
    }
    assert {m: t for m, t in wrong.items() if t} == {}


def test_broker_modules_never_import_the_test_kit():
    wrong = {
        m: sorted(t for t in targets if in_package(t, "wireserver.testing"))
        for m, targets in graph().items()
        if not in_package(m, "wireserver.testing") and m != "wireserver.cli"
    }
    assert {m: t for m, t in wrong.items() if t} == {}


def test_no_import_circle_anywhere():
    """Every module of ours can be read bottom up: no two import each other, directly or
    through others (imports under TYPE_CHECKING and inside functions included)."""
    assert [sorted(c) for c in circles(graph())] == []


def test_the_layer_reader_sees_a_circle():
    """The checks above are only as good as the reader: it finds a circle it is shown."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    modules = module_files()
    assert "wireserver.storage.log" in imports_of(
        "wireserver.storage.manager", modules["wireserver.storage.manager"], set(modules)
    )
