from collections.abc import Sequence
from typing import SupportsFloat, SupportsIndex

TYPE_NAMES: tuple[str, ...]

_Params = SupportsFloat | Sequence[SupportsFloat] | None

def compute_type(src_type: str) -> str: ...
def check_pair(dst_type: str, src_type: str, affine: bool = False) -> None: ...
def convert_memory(
    dst_address: SupportsIndex,
    src_address: SupportsIndex,
    sizes: Sequence[SupportsIndex],
    dst_strides: Sequence[SupportsIndex],
    src_strides: Sequence[SupportsIndex],
    dst_type: str,
    src_type: str,
    scale: _Params = None,
    shift: _Params = None,
    param_strides: Sequence[SupportsIndex] | None = None,
    param_length: SupportsIndex = 1,
    num_threads: int | None = None,
    dst_first: SupportsIndex = 0,
    src_first: SupportsIndex = 0,
    divide: bool = False,
) -> None: ...
def convert_many(
    dst_addresses: Sequence[SupportsIndex],
    src_addresses: Sequence[SupportsIndex],
    sizes: Sequence[SupportsIndex],
    dst_strides: Sequence[SupportsIndex],
    src_strides: Sequence[SupportsIndex],
    dst_type: str,
    src_type: str,
    scale: _Params = None,
    shift: _Params = None,
    param_strides: Sequence[SupportsIndex] | None = None,
    param_length: SupportsIndex = 1,
    num_threads: int | None = None,
    divide: bool = False,
) -> None: ...
def _nibble_boxes(
    sizes: Sequence[SupportsIndex],
    dst_strides: Sequence[SupportsIndex],
    src_strides: Sequence[SupportsIndex],
    dst_first: int = 0,
    src_first: int = 0,
    dst_type: str = "int4",
    src_type: str = "float32",
    num_threads: int | None = None,
) -> tuple[int, list[list[int]]]: ...
def _tiled_streams(
    sizes: Sequence[SupportsIndex],
    dst_strides: Sequence[SupportsIndex],
    src_strides: Sequence[SupportsIndex],
    dst_type: str,
    src_type: str,
) -> bool | None: ...
def _plan_streams(
    sizes: Sequence[SupportsIndex],
    dst_strides: Sequence[SupportsIndex],
    src_strides: Sequence[SupportsIndex],
    dst_type: str,
    src_type: str,
) -> bool: ...

CASTINGS: tuple[str, ...]

def can_cast(src_type: str, dst_type: str, casting: str) -> bool: ...
