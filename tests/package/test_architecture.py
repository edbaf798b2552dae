"""The package's structure (DESIGN.md §2), checked on the source: data flows one way.

- No Python module imports one that imports it back, directly or through others, at module
  level or inside a function (the import graph has no cycle).
- ``formats`` sits below ``layout``; ``copy`` is library-neutral (it names no adapter of a
  particular library); ``_core`` knows no memory and no threads (it cimports neither the copy
  engine nor OpenMP).
"""

from __future__ import annotations

import ast
import re
import tokenize
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "strided"

pytestmark = pytest.mark.skipif(not PACKAGE.is_dir(), reason="needs the source tree")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(path: Path, known: set[str]) -> set[str]:
    """The package modules a Python file imports, anywhere in it (``from strided import x``
    counts as importing ``strided.x`` when that is a module, else the package)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    graph = {}
    for name, path in modules.items():
        # a submodule necessarily loads its parent packages: those edges are not choices
        parents = {name.rsplit(".", k)[0] for k in range(1, name.count(".") + 1)}
        graph[name] = _imports(path, known) - parents - {name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_checker_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_module_imports_one_that_imports_it_back():
    graph = _graph()
    assert "strided.layout" in graph["strided.interop"]      # the graph is not empty
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_formats_sits_below_layout():
    graph = _graph()
    assert "strided.formats" in graph["strided.layout"]
    assert "strided.layout" not in graph["strided.formats"]


def _code_names(path: Path) -> set[str]:
    """The identifiers a Python file uses in code (strings and comments dropped)."""
    with tokenize.open(path) as f:
        return {tok.string for tok in tokenize.generate_tokens(f.readline)
                if tok.type == tokenize.NAME}


def test_copy_names_no_library_adapter():
    graph = _graph()
    assert "strided.interop" in graph["strided.copy"]        # it reaches libraries through interop
    assert not graph["strided.copy"] & {"strided.interop._torch", "strided.interop._numpy",
                                        "strided.interop._dlpack"}
    names = _code_names(PACKAGE / "copy.py")
    assert "interop" in names
    assert not names & {"torch", "numpy", "np", "jax", "cupy"}


def test_core_knows_no_memory_and_no_threads():
    core = (PACKAGE / "_core.pyx").read_text()
    assert not re.search(r"cimport.*\b(_copy|_openmp|parallel)\b", core)
    assert not re.search(r"^\s*(from|import)\s+(numpy|torch)", core, re.M)
    copy = (PACKAGE / "_copy.pyx").read_text()
    assert "from strided._core cimport" in copy
    assert not re.search(r"(cimport|import).*_convert", copy)   # conversion sits above copy
    convert = (PACKAGE / "_convert.pyx").read_text()
    assert "from strided._copy cimport" in convert and "from strided._core cimport" in convert
    assert not re.search(r"^\s*(from|import)\s+(numpy|torch)", convert, re.M)


def test_the_readme_map_names_what_exists():
    """README's "How the code is laid out" names files and folders that are there."""
    readme = (PACKAGE.parent.parent / "README.md").read_text()
    block = readme.split("How the code is laid out", 1)[1].split("```", 2)[1]
    block = re.sub(r"(\w+)\.pyx/\.pxd", r"\1.pyx \1.pxd", block)
    names = set(re.findall(r"[\w*]+(?:/[\w*]+)*\.(?:pyx|pxd|py|h)\b|^  \w+/", block, re.M))
    assert {"copy.py", "_core.pxd", "_library.py", "  interop/"} <= names, names
    for name in names:
        name = name.strip()
        if name != "src/strided/":
            assert list(PACKAGE.rglob(name.rstrip("/"))), f"README names {name}: not in the package"
