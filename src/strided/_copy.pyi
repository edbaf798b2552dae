"""Type stubs for the compiled copy engine ``strided._copy`` (element strides throughout)."""

from collections.abc import Sequence

def openmp_enabled() -> bool: ...
def max_threads() -> int: ...
def in_forked_child() -> bool: ...
def resolve_threads(num_threads: int | None = None) -> int: ...
def copy_memory(
    dst_address: int,
    src_address: int,
    sizes: Sequence[int],
    dst_strides: Sequence[int],
    src_strides: Sequence[int],
    itemsize: int,
    num_threads: int | None = None,
) -> None: ...
def copyto_buffers(dst: object, src: object, num_threads: int | None = None) -> bool: ...
def _tune(
    tile_bytes: int | None = None,
    block_bytes: int | None = None,
    thread_bytes: int | None = None,
    nt_bytes: int | None = None,
    staged: bool | None = None,
    stage_bytes: int | None = None,
    nt_run_bytes: int | None = None,
    nt_stitch_bytes: int | None = None,
    chunks_per_thread: int | None = None,
) -> tuple[int, int, int, int, int, int, int, int, int]: ...
def _overlap_tuning(
    shift_buffer_bytes: int | None = None, max_work: int | None = None
) -> tuple[int, int]: ...
def _simd(level: int | None = None) -> int: ...
