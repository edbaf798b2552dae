#!/usr/bin/env python3
"""Print strided's version, read from ``src/strided/__init__.py``: its one source.

``meson.build`` runs this to set the project version, which meson-python writes into the
package metadata (``pyproject.toml`` declares ``version`` dynamic). So ``strided.__version__``
and ``importlib.metadata.version("strided")`` agree by construction. The file is parsed, not
imported: importing strided needs the compiled core, which is what is being built.
"""

import ast
import pathlib
import sys

INIT = pathlib.Path(__file__).resolve().parent.parent / "src" / "strided" / "__init__.py"


def read_version(path: pathlib.Path = INIT) -> str:
    """The string assigned to ``__version__`` at the top level of ``path``."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    sys.exit(f"{path}: no top-level __version__ = '...' string")


if __name__ == "__main__":
    print(read_version())
