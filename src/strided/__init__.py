"""strided: exact tensor memory layouts.

A layout is sizes + element strides + offset (+ itemsize): the element at ``index`` lives at
element offset ``dot(index, strides) + offset``. strided checks layouts exactly (64-bit checked
arithmetic, exact overlap/packed/padded predicates), knows the named layouts (NCHW, NHWC, ...)
and blocked formats (NCHW4, CHWN4, nChw16c), and computes buffer sizes the way DirectML does,
without its 32-bit wrap.

Examples
--------
>>> import strided as st
>>> st.packed_strides((1, 3, 2, 2), "NHWC")       # channels-last: C has stride 1
(12, 1, 6, 3)
>>> L = st.Layout((2, 3), (5, 1), itemsize=4)
>>> L.is_padded, L.buffer_size(align=1)
(True, 32)
"""

from typing import TYPE_CHECKING, Any

from strided._copy import openmp_enabled
from strided._core import MAX_RANK, LayoutIndexError, TooHardError
from strided.formats import packed_strides
from strided.layout import Layout, buffer_size, offset_of

if TYPE_CHECKING:
    from strided import interop
    from strided.batch import Collate, stack
    from strided.bits import pack_bits, unpack_bits
    from strided.copy import copyto, from_blocked, relayout, to_blocked
    from strided.interop import layout_of, view

# The one source of the version: meson.build reads it (tools/version.py) into the package
# metadata. Released versions are listed in CHANGELOG.md.
__version__ = "0.2.0.dev0"

__all__ = [
    "MAX_RANK",
    "Collate",
    "Layout",
    "LayoutIndexError",
    "TooHardError",
    "buffer_size",
    "copyto",
    "from_blocked",
    "interop",
    "layout_of",
    "offset_of",
    "openmp_enabled",
    "pack_bits",
    "packed_strides",
    "relayout",
    "stack",
    "to_blocked",
    "unpack_bits",
    "view",
]

# The interop layer and the copy API import numpy; layout arithmetic needs nothing but the
# core. So they are loaded on first use (PEP 562), and `import strided` stays light.
_LAZY_INTEROP = {"interop", "layout_of", "view"}
_LAZY_COPY = {"copyto", "relayout", "to_blocked", "from_blocked"}
_LAZY_BITS = {"pack_bits", "unpack_bits"}
_LAZY_BATCH = {"stack", "Collate"}
_LAZY = _LAZY_INTEROP | _LAZY_COPY | _LAZY_BITS | _LAZY_BATCH


def __getattr__(name: str) -> Any:
    if name in _LAZY_INTEROP:
        import strided.interop

        # Bind all three here, so later look-ups are plain attribute reads.
        globals().update(layout_of=strided.interop.layout_of, view=strided.interop.view)
        return globals()[name]
    if name in _LAZY_COPY:
        import strided.copy

        # Bind all four here: `st.copyto` then costs a plain attribute read per call.
        globals().update({lazy: getattr(strided.copy, lazy) for lazy in _LAZY_COPY})
        return globals()[name]
    if name in _LAZY_BATCH:
        import strided.batch

        globals().update({lazy: getattr(strided.batch, lazy) for lazy in _LAZY_BATCH})
        return globals()[name]
    if name in _LAZY_BITS:
        import strided.bits

        globals().update({lazy: getattr(strided.bits, lazy) for lazy in _LAZY_BITS})
        return globals()[name]
    raise AttributeError(f"module 'strided' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LAZY)
