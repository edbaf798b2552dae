"""The engine's one set of knobs (``strided._copy._tune``, the ``Tuning`` struct of
``_copy.pxd``): every knob named once for copies and conversions, restored from what ``_tune``
returns, clamped to what the kernels can run, and read by a call once, holding the GIL: a
call plans and runs with the snapshot it started with, so a thread turning the knobs while
other threads copy and convert (without the GIL, through the overlap routes too) changes no
result and no buffer size under a running call.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import strided as st
from strided import _copy

pytestmark = pytest.mark.thread_unsafe(reason="changes the engine's process-wide knobs")

KNOBS = {
    "block_bytes", "thread_bytes", "nogil_bytes", "chunks_per_thread", "nt_bytes",
    "llc_bytes",
    "tile_row_bytes", "tile_area_bytes", "staged", "stage_bytes", "stage_big_from", "nt_run_bytes",
    "nt_stitch_bytes", "shift_buffer_bytes", "convert_tile_bytes", "convert_tiled_bytes",
    "convert_tile_columns", "convert_period_items", "convert_planes", "convert_tiled",
    "convert_last", "convert_chunked", "convert_chunked_from", "convert_chunk_bytes",
    "nibble_box_bytes", "nibble_fused", "fetch_next", "crowd_runs", "crowd_staged",
    "vector_rows_in_place", "nt_pages", "crowd_rows", "down_from", "rows_tile_bytes",
    "rows_big_bytes", "deint_narrow", "deint_alias_nt", "pix32_plain", "sweep_ahead",
    "pixels_nt_bytes", "convert_stream_rows", "fill_nt_bytes", "stitch_rows",
    "stitch_tile_rows", "nt_short_runs_from",
}

#: every route forced on small arrays: tiny tiles, blocks, buffers and chunks, teams for
#: kilobytes of work, streaming stores, the chunked conversion route
EXTREME = {
    "block_bytes": 64, "thread_bytes": 1024, "nogil_bytes": 1, "chunks_per_thread": 1,
    "nt_bytes": 0, "llc_bytes": 1,
    "tile_row_bytes": 16,
    "tile_area_bytes": 16, "staged": 1, "stage_bytes": 256,
    "nt_run_bytes": 64, "nt_stitch_bytes": 64, "shift_buffer_bytes": 64,
    "convert_tile_bytes": 4096, "convert_tiled_bytes": 4096, "convert_tile_columns": 16,
    "convert_period_items": 5, "convert_planes": False, "convert_tiled": False,
    "convert_last": 1, "convert_chunked": 1, "convert_chunk_bytes": 64, "nibble_box_bytes": 2,
    "nibble_fused": False, "fetch_next": 16, "vector_rows_in_place": 31, "crowd_runs": True,
    "crowd_staged": True, "nt_pages": True, "crowd_rows": 8, "down_from": 1,
    "rows_tile_bytes": 256, "rows_big_bytes": 1024, "deint_narrow": True,
    "deint_alias_nt": True, "pix32_plain": True, "sweep_ahead": 1,
    "pixels_nt_bytes": 0, "convert_stream_rows": True, "fill_nt_bytes": 0, "stitch_rows": True,
    "stitch_tile_rows": 16, "nt_short_runs_from": 0,
}


def test_every_knob_is_reported_and_restored():
    old = _copy._tune()
    assert set(old) == KNOBS | {"max_work"}
    try:
        assert _copy._tune(block_bytes=4096, convert_tile_columns=32, max_work=10) == old
        now = _copy._tune()
        assert (now["block_bytes"], now["convert_tile_columns"], now["max_work"]) == (4096, 32, 10)
        assert {k: v for k, v in now.items()
                if k not in ("block_bytes", "convert_tile_columns", "max_work")} == {
            k: v for k, v in old.items()
            if k not in ("block_bytes", "convert_tile_columns", "max_work")}
        assert _copy._tune(block_bytes=None)["block_bytes"] == 4096   # None: left as it is
    finally:
        _copy._tune(**old)
    assert _copy._tune() == old


def test_an_unknown_knob_is_refused_by_name_and_changes_nothing():
    old = _copy._tune()
    # the copy's 256-byte tile row and the conversion's 128 KiB tile once shared this name
    with pytest.raises(TypeError, match="'tile_bytes'"):
        _copy._tune(tile_bytes=16)
    with pytest.raises(TypeError, match="'claims_per_thread'"):
        _copy._tune(claims_per_thread=2)
    assert _copy._tune() == old


def test_knobs_are_clamped_to_what_the_kernels_can_run():
    old = _copy._tune()
    try:
        _copy._tune(staged=7, convert_last=-9, convert_chunked=3, convert_planes=5,
                    chunks_per_thread=-4, convert_tile_bytes=1, convert_tiled_bytes=1 << 40,
                    tile_row_bytes=1, tile_area_bytes=-1, shift_buffer_bytes=0,
                    nt_run_bytes=1 << 40, stage_bytes=1 << 40, nibble_box_bytes=-5,
                    rows_tile_bytes=1 << 40, rows_big_bytes=1 << 40, sweep_ahead=1 << 40)
        now = _copy._tune()
        assert now["sweep_ahead"] == 63     # the lines ahead fit the flags' six bits
        assert _copy._tune(sweep_ahead=-2)["sweep_ahead"] == 63
        assert _copy._tune()["sweep_ahead"] == 0
        _copy._tune(pixels_nt_bytes=-7, fill_nt_bytes=-9)
        assert _copy._tune()["pixels_nt_bytes"] == _copy._tune()["fill_nt_bytes"] == -1
        assert now["nibble_box_bytes"] == 2    # a 4-bit box holds an element pair at least
        assert (now["staged"], now["convert_last"], now["convert_chunked"]) == (1, -1, 1)
        assert now["convert_planes"] == 1 and now["chunks_per_thread"] == 0
        assert now["convert_tile_bytes"] == 4096 and now["convert_tiled_bytes"] == 1 << 22
        assert now["tile_row_bytes"] == 16 and now["shift_buffer_bytes"] == 1
        assert now["tile_area_bytes"] == 16
        # the staging tile and the streamed runs stay within the copy's staging buffer
        # (ST_TILE_BUF, 512 KiB; a tile of 32 runs must fit it)
        assert now["stage_bytes"] == 524288 and now["nt_run_bytes"] == 524288 // 32
        assert now["rows_tile_bytes"] == now["rows_big_bytes"] == 524288
        assert _copy._tune(rows_tile_bytes=-3)["rows_tile_bytes"] == 524288
        assert _copy._tune(rows_big_bytes=-3)["rows_big_bytes"] == 524288
        assert _copy._tune()["rows_tile_bytes"] == _copy._tune()["rows_big_bytes"] == 0
        x = np.arange(300 * 301, dtype=np.float32).reshape(300, 301)
        assert np.array_equal(st.relayout(x, "F"), x)
    finally:
        _copy._tune(**old)


def _cases():
    """(name, run) pairs: run() does one call into fresh arrays and returns the bytes it
    wrote; every call reaches a route whose buffers the knobs size."""
    rng = np.random.default_rng(7)
    base = (rng.standard_normal(128 * 128) * 1000).astype(np.float32)
    image = (rng.standard_normal((16, 33, 35)) * 40).astype(np.float32)
    scale = np.linspace(0.5, 2.0, 16)

    def shift_in_place():       # float32 -> int32 over the same bytes: the shift route
        a = base.copy()
        st.copyto(a.view(np.int32), a, casting="unsafe")
        return a.tobytes()

    def transpose_in_place():   # float32 -> int32 transposed over the same bytes: tile pairs
        a = base.copy().reshape(128, 128)
        st.copyto(a.view(np.int32).T, a, casting="unsafe")
        return a.tobytes()

    def shift_by_one():         # a copy into the same buffer one element on
        a = base.copy()
        st.copyto(a[1:], a[:-1])
        return a.tobytes()

    def normalise_nhwc():       # per-channel int8 quantization through the tiles
        y = np.zeros((33, 35, 16), np.int8)
        st.copyto(y.transpose(2, 0, 1), image, casting="unsafe", scale=scale, shift=-3.0,
                  axis=0, num_threads=2)
        return y.tobytes()

    def relayout():             # a copy transposed through the staging tile, on a team
        return st.relayout(base.reshape(128, 128), "F", num_threads=2).tobytes(order="A")

    return [(f.__name__, f) for f in (shift_in_place, transpose_in_place, shift_by_one,
                                      normalise_nhwc, relayout)]


def test_turning_the_knobs_while_other_threads_copy_changes_no_result():
    cases = _cases()
    expected = {name: run() for name, run in cases}      # at the default knobs
    old = _copy._tune()
    done = threading.Event()
    failures: list[str] = []

    def turn_knobs():
        configs = [EXTREME, old]
        i = 0
        while not done.is_set():
            _copy._tune(**configs[i % 2])
            i += 1

    def work(k):
        for rep in range(25):
            name, run = cases[(k + rep) % len(cases)]
            if run() != expected[name]:
                failures.append(f"{name} (worker {k}, repetition {rep})")

    tuner = threading.Thread(target=turn_knobs)
    workers = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    tuner.start()
    try:
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    finally:
        done.set()
        tuner.join()
        _copy._tune(**old)
    assert failures == []
