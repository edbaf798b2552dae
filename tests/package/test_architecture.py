"""The package's structure (DESIGN.md §2), checked on the source: data flows one way.

- No Python module imports one that imports it back, directly or through others, at module
  level or inside a function (the import graph has no cycle).
- ``formats`` sits below ``layout``; ``copy`` is library-neutral (it names no adapter of a
  particular library, and imports no compiled module of the package but the engines it
  drives); ``_core`` knows no memory and no threads (it cimports neither the copy engine nor
  OpenMP).
- ``interop`` dispatches library questions through one table (``ADAPTERS``), never by
  comparing a record's ``library`` with a name.
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


def _compiled_modules() -> set[str]:
    """The package's compiled modules: one per ``.pyx`` file."""
    return {_module_name(p) for p in PACKAGE.rglob("*.pyx")}


# The engines copy.py drives: it hands them pointers, sizes, strides and type codes (_copy,
# _convert) and reads its arguments and overlap through the checked arithmetic (_core). Every
# other compiled module reads a library's own structs (numpy's array struct, torch's DLPack
# exchange API, DLPack capsules): that is an adapter's business, reached through interop.
ENGINES = {"strided._copy", "strided._convert", "strided._core"}


def test_copy_imports_no_compiled_module_but_the_engines():
    compiled = _compiled_modules()
    assert ENGINES | {"strided.interop._ndarray", "strided.interop._tensor",
                      "strided.interop._capsule"} <= compiled, compiled
    imported = _imports(PACKAGE / "copy.py", set(_modules()) | compiled)
    assert ENGINES <= imported                  # the checker sees compiled imports
    assert imported & compiled == ENGINES, sorted(imported & compiled - ENGINES)


def _is_name_literal(node: ast.expr) -> bool:
    """A string constant, or a tuple, list or set of them."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_name_literal(e) for e in node.elts)
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _library_switches(path: Path) -> list[int]:
    """Lines where a ``.library`` is compared with (or matched against) a string literal."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if (any(isinstance(o, ast.Attribute) and o.attr == "library" for o in operands)
                    and any(_is_name_literal(o) for o in operands)):
                found.append(node.lineno)
        elif (isinstance(node, ast.Match) and isinstance(node.subject, ast.Attribute)
              and node.subject.attr == "library"):
            found.append(node.lineno)
    return sorted(found)


def test_the_checker_finds_a_library_switch(tmp_path):
    code = tmp_path / "switch.py"
    code.write_text('if r.library == "numpy":\n    pass\n'
                    'x = a.library == b.library == "torch"\n'
                    'y = r.library in ("numpy", "torch")\n'
                    'z = a.library != b.library\n'
                    'match r.library:\n    case "dlpack":\n        pass\n')
    assert _library_switches(code) == [1, 3, 4, 6]


@pytest.mark.parametrize("path", sorted(p.relative_to(PACKAGE).as_posix()
                                        for p in [PACKAGE / "copy.py",
                                                  *(PACKAGE / "interop").glob("*.py")]))
def test_library_questions_dispatch_through_one_table(path):
    """copy.py and interop ask a record's adapter (one table, library name -> adapter) and
    never switch on the library's name."""
    assert _library_switches(PACKAGE / path) == []


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


def _sources(pattern: str) -> dict[str, str]:
    return {str(p.relative_to(PACKAGE)): p.read_text() for p in sorted(PACKAGE.rglob(pattern))}


def test_the_engine_is_written_once():
    """One reorder engine (DESIGN.md §2): one plan struct, one runner (the only parallel
    region), one tuning hook over one struct of knobs, one CPU detection, one element-type
    table; the engine's modules read no Python buffer (they take addresses)."""
    cython = _sources("*.pyx") | _sources("*.pxd")
    plans = sorted((name, plan) for name, text in cython.items()
                   for plan in re.findall(r"^ctypedef struct (\w*Plan)\b", text, re.M))
    assert plans == [("_copy.pxd", "Plan")]
    assert [n for n, t in cython.items() if re.search(r"^def _tune\(", t, re.M)] == ["_copy.pyx"]
    assert [n for n, t in cython.items()
            if re.search(r"^ctypedef struct Tuning\b", t, re.M)] == ["_copy.pxd"]
    # no knob beside the struct: an engine's module-level C constants are not tuning
    constants = {(n, c) for n, t in cython.items() if n in ("_copy.pyx", "_convert.pyx")
                 for c in re.findall(r"^cdef (?:int64_t|int|bint) (_[A-Z_]+)\b", t, re.M)}
    assert constants == {("_copy.pyx", "_CORES")}
    assert [n for n, t in cython.items() if "with parallel(" in t or "prange(" in t] == [
        "_copy.pyx"]
    assert cython["_copy.pyx"].count("with parallel(") == 1                # in run_team
    headers = _sources("_kernels/*.h")
    assert [n for n, t in headers.items() if "__builtin_cpu_supports" in t] == [
        "_kernels/common.h"]
    for engine in ("_copy.pyx", "_convert.pyx"):
        assert "PyObject_GetBuffer" not in cython[engine], engine
    python = _sources("*.py")
    assert [n for n, t in python.items()
            if re.search(r"^TYPE_NAMES\b.*=", t, re.M)] == ["_dtypes.py"]
