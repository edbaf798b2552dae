"""Type stubs of the compiled numpy fast path of ``strided.copyto`` (``_ndarray.pyx``)."""

from typing import Any

from strided.layout import Layout

def copyto_arrays(
    dst: object,
    src: object,
    num_threads: int | None = None,
    casting: str = "same_kind",
    scale: object = None,
    shift: object = None,
    axis: object = None,
) -> bool: ...
def convert_arrays(
    dst: object,
    src: object,
    casting: str,
    scale: object,
    shift: object,
    axis: object,
    num_threads: int | None = None,
) -> bool: ...
def copyto_buffers(dst: object, src: object, num_threads: int | None = None) -> bool: ...
def buffer_address(obj: object) -> tuple[int, bool]: ...
def layout_of_array(x: object) -> Layout | None: ...
def view_array(base: object, layout: object) -> Any: ...
def view_fast(base: object, layout: object) -> Any: ...
def current_address(x: object, sizes: tuple[int, ...], strides: tuple[int, ...]) -> int: ...
def alike_addresses(arrays: tuple[object, ...], like: object) -> list[int] | None: ...
