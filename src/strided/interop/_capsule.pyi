"""Type stubs for the compiled DLPack capsule module ``strided.interop._capsule``."""

from collections.abc import Sequence
from typing import Any, SupportsIndex

from typing_extensions import disjoint_base

_Dims = Sequence[SupportsIndex] | SupportsIndex

DLPACK_VERSION: tuple[int, int]

# A cdef class: its instances have a C layout, so no class can inherit from it and another such
# class at once (PEP 800).
@disjoint_base
class DLPackTensor:
    data: int
    byte_offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None
    device: tuple[int, int]
    dtype: tuple[int, int, int]
    readonly: bool
    version: tuple[int, int] | None
    flags: int

def consume_dlpack(capsule: Any) -> DLPackTensor: ...
def make_dlpack_capsule(
    owner: Any,
    data: int,
    byte_offset: int,
    sizes: _Dims,
    strides: _Dims,
    device: tuple[int, int],
    dtype: tuple[int, int, int],
    *,
    readonly: bool = ...,
    version: tuple[int, int] | None = ...,
) -> Any: ...
