"""No kernel reads or writes a byte outside its layouts: the copy and conversion engines against
memory that faults one byte past each end of each operand.

The harness is :mod:`guarded`: every operand in its own mapping between two ``PROT_NONE``
pages, the source's lowest byte right after a guard page in one run and its highest byte right
before one in another (the destination's too), odd addresses in two more runs; the
destination's gaps hold a sentinel that must survive, every element must equal a numpy oracle.
It drives the raw entries (``_copy.copy_memory``, ``_convert.convert_memory``) at every SIMD
level, on 1 and 2 threads, with the tuning hooks forcing streaming stores, staged and stitched
tiles, tiny blocks, and the conversion's tiled, planes, pixels, staged and both transpose
routes. A worker that dies names the case it was running, which then fails the test.

The default run takes a seeded sample of every kernel family (seconds); the exhaustive sweep,
about 50 000 cases, is marked ``slow`` (``STRIDED_SLOW=1``). Both print a table of cases,
faulting cases and wrong cases per family.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from isolated import run_isolated

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="anonymous mmap + mprotect through libc")

SWEEP = """
    import guarded
    summary = guarded.sweep({selection!r})
    print(summary.table())
    for kind, case, detail in summary.failures[:60]:
        print(kind, case, detail)
    print("faulting", sum(summary.faults.values()), "wrong", sum(summary.wrong.values()))
"""


def _sweep(selection, timeout):
    out = run_isolated(SWEEP.format(selection=selection), timeout=timeout)
    print(out)
    last = out.strip().splitlines()[-1].split()
    assert last[0] == "faulting" and last[2] == "wrong", out
    assert (int(last[1]), int(last[3])) == (0, 0), out
    return out


def _assert_no_problems(out, least_copies):
    """A guard-page script's last two lines (guarded.Tally.report): no wrong copy, and more
    than ``least_copies`` made (so that the cases were not all skipped as too large)."""
    lines = out.strip().splitlines()
    assert lines[-1] == "problems 0", out
    assert int(lines[-2].split()[1]) > least_copies, out


def test_every_kernel_family_stays_inside_its_layouts():
    """The default sample: every family at every SIMD level, no fault, no stray byte, no
    wrong element."""
    out = _sweep("default", timeout=600)
    assert "copy/deinterleave" in out and "convert/planes" in out


@pytest.mark.slow
def test_every_kernel_family_stays_inside_its_layouts_exhaustive():
    _sweep("slow", timeout=3600)


def test_the_default_sample_reaches_every_family_at_every_level():
    """The sample is stratified by the planners' choice of kernel (mirrored in
    guarded.family): each family the sweep knows appears at each SIMD level the CPU has, and
    some cases run on a team of 2 threads."""
    import guarded

    from strided import _copy

    selected = guarded.cases("default")
    levels = range(_copy._simd() + 1)
    seen = {(c.family, c.level) for c in selected}
    level_free = {"convert/tiled", "convert/pixels"}   # AVX2 kernels: level 2 only
    families = {
        "copy/rows", "copy/rows-streamed", "copy/fill", "copy/fill-streamed",
        "copy/gather-scatter", "copy/stride2-bytes",
        "copy/transpose", "copy/transpose-staged", "copy/transpose-streamed",
        "copy/transpose-narrow", "copy/interleave", "copy/deinterleave",
        "convert/fused-rows", "convert/strided-rows", "convert/planes",
        "convert/transpose-first", "convert/transpose-last", "convert/staged",
    }
    missing = {(f, lv) for f in families for lv in levels if (f, lv) not in seen}
    if _copy._simd() >= 2:
        missing |= {(f, 2) for f in level_free if (f, 2) not in seen}
    assert not missing
    assert any(c.threads == 2 for c in selected if not c.converts)
    assert any(c.threads == 2 for c in selected if c.converts)


def test_a_read_of_a_guard_page_kills_the_worker_and_names_its_case():
    """The harness itself: a case that reads one byte past its source (guarded.OVERREAD)
    faults in whichever placement puts the source's end at the guard page; the sweep counts
    it against that case and goes on with the next one."""
    out = run_isolated("""
        import guarded

        bad = guarded.Case((5,), (1,), (1,), itemsize=4, label=guarded.OVERREAD)
        good = guarded.Case((5,), (1,), (1,), itemsize=4, label="fine")
        guarded.cases = lambda selection="default", levels=None: [good, bad, good]
        summary = guarded.sweep("default")
        print(summary.cases["copy/rows"], summary.faults["copy/rows"],
              summary.wrong["copy/rows"])
        print(summary.failures[0][0], "|", summary.failures[0][1])
    """)
    counts, failure = out.strip().splitlines()
    assert counts.split() == ["3", "1", "0"]
    assert failure.startswith("fault (signal 11) |") and "self-test" in failure


def test_a_stray_write_and_a_wrong_element_are_reported():
    """A byte written into a gap of a padded destination, and an element overwritten after
    the copy, each make the harness report the case; the real copy alone does not."""
    out = run_isolated("""
        import ctypes
        import guarded

        case = guarded.Case((3, 5), (8, 1), (5, 1), itemsize=2)   # rows padded by 3 items
        print(guarded.run_case(case) or "clean")
        real_call = guarded._call

        def stray(case, dst_addr, src_addr):
            real_call(case, dst_addr, src_addr)
            ctypes.memset(dst_addr + 5 * 2, 0, 1)   # the first gap byte, after row 0

        guarded._call = stray
        print(guarded.run_case(case))

        def overwrite(case, dst_addr, src_addr):
            real_call(case, dst_addr, src_addr)
            b = ctypes.string_at(dst_addr + 8 * 2, 1)[0]
            ctypes.memset(dst_addr + 8 * 2, b ^ 0xFF, 1)   # element (1, 0) changed

        guarded._call = overwrite
        print(guarded.run_case(case))
    """)
    clean, stray, wrong = out.strip().splitlines()
    assert clean == "clean"
    assert "outside the destination's elements" in stray
    assert "elements wrong" in wrong and "(1, 0)" in wrong


def test_copyto_of_a_column_major_source_ending_at_a_guard_page():
    """The public route of the first case found: st.copyto of a small column-major float32
    array whose last byte is the last byte before an unreadable page (as a memory-mapped
    file's can be), at every SIMD level."""
    out = run_isolated("""
        import numpy as np
        import strided as st
        from strided import _copy
        import guarded

        area = guarded.Arena(1)
        for shape in [(2, 2, 4), (3, 5, 4), (2, 17, 3), (4, 4, 2)]:
            n = int(np.prod(shape))
            raw = area.bytes[area.size - 4 * n:].view(np.float32)
            raw[:] = np.arange(n, dtype=np.float32)
            src = raw.reshape(shape[::-1]).T          # Fortran order, ending at the page
            assert src.flags.f_contiguous
            for level in range(_copy._simd() + 1):
                _copy._simd(level)
                dst = np.empty(shape, np.float32)
                st.copyto(dst, src)
                assert np.array_equal(dst, src), (shape, level)
        print("ok")
    """)
    assert out.strip() == "ok"


def test_interleaved_bytes_of_one_buffer_stay_inside():
    """a[0::2] <- a[1::2] and its mirror (1-byte items two apart, an odd number of bytes
    between the two: the vectors that keep the destination's other lane, which is the source),
    odd distances 3, 5 and 33 (vectors in the middle only), and element-sharing even ones
    (staged), in one guarded page: the buffer's first byte right after a guard page, then its
    last byte right before one; every length 1..80 and a few long ones, every SIMD level,
    1 and 2 threads. Every byte of the page must equal np.copyto's result."""
    out = run_isolated("""
        import numpy as np
        import strided as st
        from strided import _copy
        import guarded

        area = guarded.Arena(2)
        rng = np.random.default_rng(5)
        problems = 0
        for level in range(_copy._simd() + 1):
            _copy._simd(level)
            for n in (*range(1, 81), 129, 1000, 2047):
                for do, so in ((0, 1), (1, 0), (0, 3), (5, 0), (0, 33), (33, 0), (0, 2)):
                    used = max(do, so) + 2 * (n - 1) + 1
                    if used > area.size:
                        continue
                    for at_end in (False, True):
                        base = area.size - used if at_end else 0
                        area.bytes[:] = rng.integers(0, 256, area.size, dtype=np.uint8)
                        expected = area.bytes.copy()
                        np.copyto(expected[base + do:base + do + 2 * n:2],
                                  expected[base + so:base + so + 2 * n:2])
                        dst = area.view(base + do, (n,), (2,), np.uint8)
                        src = area.view(base + so, (n,), (2,), np.uint8)
                        st.copyto(dst, src, num_threads=1 + n % 2)
                        if not np.array_equal(area.bytes, expected):
                            problems += 1
                            print("wrong", level, n, do, so, at_end)
        print("problems", problems)
    """, timeout=900)
    assert out.strip().splitlines()[-1] == "problems 0", out


def test_rows_of_a_few_kib_stay_inside():
    """Contiguous rows copied 128 bytes a round with the last vector ending at the row's end
    (blocks.h st_rows_avx2, rows of 32 bytes to 4 KiB on AVX2; st_copy_run and memcpy below
    that level): padded rows into packed ones and back, every row length 1..300 bytes and
    around 4 KiB, the source's or the destination's last byte right before a guard page and
    its first right after the other, every SIMD level, 1 and 2 threads. The destination's
    page must hold exactly np.copyto's result; the source's must be unchanged."""
    out = run_isolated("""
        import numpy as np
        from strided import _copy
        import guarded

        src_area, dst_area = guarded.Arena(4), guarded.Arena(4)
        rng = np.random.default_rng(7)
        problems = copies = 0
        for level in range(_copy._simd() + 1):
            _copy._simd(level)
            for n in (*range(1, 301), 4064, 4095, 4096, 4097):
                for spad, dpad in ((0, 0), (7, 0), (0, 5), (64, 3)):
                    done, wrong = guarded.rows_stay_inside(src_area, dst_area, 3, n, spad, dpad,
                                                           rng, 1 + n % 2)
                    copies += done
                    for at_end in wrong:
                        problems += 1
                        print("wrong", level, n, spad, dpad, at_end)
        print("copies", copies)
        print("problems", problems)
    """, timeout=900)
    lines = out.strip().splitlines()
    assert lines[-1] == "problems 0", out
    assert int(lines[-2].split()[1]) > 1000, out


def test_streamed_rows_read_four_pages_at_once_and_stay_inside():
    """Streamed rows (every copy streaming: nt_bytes 0) with and without the four-page loop
    (rows.h st_stream_lines4, ST_PAGES): one run of 16 KiB and more read 4 KiB apart at once,
    and four rows of 4 KiB and more at once, each from its own first line boundary, the lines
    one row has more than the others and every row's ends on their own. Row lengths around
    both thresholds, one to six rows (a group of four and its remainder), padded and odd
    starts, the source's or the destination's last byte right before a guard page, 1 and 2
    threads. The destination's pages must hold exactly np.copyto's result."""
    out = run_isolated("""
        import numpy as np
        from strided import _copy
        import guarded

        src_area, dst_area = guarded.Arena(80), guarded.Arena(80)
        rng = np.random.default_rng(11)
        problems = copies = 0
        _copy._tune(nt_bytes=0)
        for pages in (1, 0):
            _copy._tune(nt_pages=pages)
            for n in (4095, 4096, 4097, 4160, 8191, 16383, 16384, 16385, 32868, 49216):
                for rows in (1, 3, 4, 5, 6):
                    for spad, dpad in ((0, 0), (7, 0), (0, 5), (64, 3)):
                        done, wrong = guarded.rows_stay_inside(src_area, dst_area, rows, n,
                                                               spad, dpad, rng, 1 + rows % 2)
                        copies += done
                        for at_end in wrong:
                            problems += 1
                            print("wrong", pages, n, rows, spad, dpad, at_end)
        print("copies", copies)
        print("problems", problems)
    """, timeout=900)
    lines = out.strip().splitlines()
    assert lines[-1] == "problems 0", out
    # 2 settings x 10 lengths x 5 row counts x 4 paddings x 2 placements, less what is too
    # large for the arenas (six rows of 49 KiB)
    assert int(lines[-2].split()[1]) > 700, out


def test_transposes_with_ragged_edges_stay_inside():
    """2-D transposes tiled in place (transpose.h ST_DEFINE_TRANSPOSE) and through the staging
    tile (tile.h), where a ragged last row or column of tiles is one more tile flush with the
    block's edge, over items already written (AVX2 tiles of 32 x 32 bytes in place, 16 x 16
    2-byte items, 8 x 8 floats, 4 x 4 doubles, SSE2 ones of 16 bytes a row), extents at and
    around one and two tiles of each, padded rows
    on either side, the source's or the destination's last byte right before a guard page and
    its first right after the other, every SIMD level, 1 and 2 threads. The destination's pages
    must hold exactly np.copyto's result; the source's must be unchanged."""
    out = run_isolated("""
        import numpy as np
        from strided import _copy
        import guarded

        src_area, dst_area = guarded.Arena(8), guarded.Arena(8)
        rng = np.random.default_rng(11)
        problems = 0
        for level, staged in [(lv, st) for lv in range(_copy._simd() + 1) for st in (0, 1)]:
            _copy._simd(level)
            _copy._tune(staged=staged)
            for k, tile in ((1, 32), (2, 16), (4, 8), (8, 4), (16, 2)):
                dtype = np.dtype(f"V{k}")
                ext = sorted({e for t in (tile, max(1, 16 // k))
                              for e in (t - 1, t, t + 1, 2 * t - 1, 2 * t + 3)} - {0} | {45})
                for R in ext:
                    for C in ext:
                        for spad, dpad in ((0, 0), (3, 0), (0, 5)):
                            _, wrong = guarded.transpose_stays_inside(
                                src_area, dst_area, R, C, R + spad, C + dpad, dtype, rng,
                                1 + (R + C) % 2)
                            for at_end in wrong:
                                problems += 1
                                print("wrong", level, staged, k, R, C, spad, dpad, at_end)
        print("problems", problems)
    """, timeout=900)
    assert out.strip().splitlines()[-1] == "problems 0", out


def test_transposes_in_place_from_anywhere_in_a_line_stay_inside():
    """In-place tiled transposes whose blocks start on both sides' lines (_copy.pyx: the first
    block row and column are the items before the source's and the destination's first line
    boundary): rows a whole number of lines apart, each operand starting anywhere in a line
    (0, one item, 16 and 48 bytes, a line less one item in), extents that leave that first
    block narrower than a micro-tile, one, or more, and ragged ends; the last byte of one
    operand right before a guard page and the other's first right after one (after its lead),
    every SIMD level, 1 and 2 threads. The destination's pages must hold exactly np.copyto's
    result; the source's must be unchanged."""
    out = run_isolated("""
        import numpy as np
        from strided import _copy
        import guarded

        src_area, dst_area = guarded.Arena(8), guarded.Arena(8)
        rng = np.random.default_rng(12)
        tally = guarded.Tally()
        for level in range(_copy._simd() + 1):
            _copy._simd(level)
            for k in (1, 2, 4, 8):
                dtype = np.dtype(f"V{k}")
                line = 64 // k
                leads = sorted({0, k, 16, 48, 64 - k})
                for R, C in ((2 * line, 2 * line), (2 * line + 5, line + 3), (3 * line, 41)):
                    sp, dp = -(-R // line) * line, -(-C // line) * line
                    assert _copy._block_kind((R, C), (dp, 1), (1, sp), k) == "transpose"
                    for lead in [(a, b) for a in leads for b in leads]:
                        tally.add(guarded.transpose_stays_inside(
                            src_area, dst_area, R, C, sp, dp, dtype, rng, 1 + (R + C) % 2,
                            lead), level, k, R, C, lead)
        tally.report()
    """, timeout=900)
    _assert_no_problems(out, least_copies=1000)


def test_streamed_transposes_running_down_block_columns_stay_inside():
    """Streamed staged transposes whose blocks run down each column of blocks first
    (``down_from``, _run_blocks: P.down), the next block's source fetched below
    (ST_FETCH_DOWN), against the strips' own order: tiles of 16-byte runs so that a strip
    holds many blocks, destination rows on a shared line offset (the lead column block) and
    not (stitched strips: never run down), ragged last blocks both ways, each operand's last
    byte right before a guard page and the other's first right after one (after 0 or 16
    bytes), every SIMD level, 1 and 2 threads. The destination's pages must hold exactly
    np.copyto's result; the source's must be unchanged."""
    out = run_isolated("""
        import numpy as np
        from strided import _copy
        import guarded

        src_area, dst_area = guarded.Arena(96), guarded.Arena(96)
        rng = np.random.default_rng(13)
        tally = guarded.Tally()
        _copy._tune(nt_bytes=0, nt_run_bytes=64, stage_bytes=4096, fetch_next=16)
        for level in range(_copy._simd() + 1):
            _copy._simd(level)
            for down in (0, 1, 3):
                _copy._tune(down_from=down)
                for k in (1, 4, 8):
                    dtype = np.dtype(f"V{k}")
                    for R, C, dpad in ((100, 333, 0), (67, 1000 // k, 0), (45, 130, 3)):
                        dp = -(-C // (64 // k)) * (64 // k) + dpad
                        for lead in ((0, 0), (16, 16)):
                            tally.add(guarded.transpose_stays_inside(
                                src_area, dst_area, R, C, R + 5, dp, dtype, rng,
                                1 + (R + C) % 2, lead), level, down, k, R, C, dpad, lead)
        tally.report()
    """, timeout=900)
    _assert_no_problems(out, least_copies=300)


def test_streamed_short_pixels_stay_inside():
    """Streamed transposes into dense pixels of 16, 32 or 64 bytes (NCHW -> NHWC with 16
    bytes, 4 or 16 floats, 2 doubles a pixel, NCHW4 float32), pixels of one or two micro-tiles
    written in place by the staging tile (tile.h, ST_STREAMS_DIRECT) through streaming stores
    when the destination is 16-byte aligned, ordinary ones otherwise; and float32 planes into
    8-channel float16 pixels, the conversion's one-pass tile the same way: pixel counts around
    one and two micro-tiles and long ones, planes back to back, padded or 4 KiB apart (one L1
    set: pixels of two micro-tiles then keep the tile), the destination 0, one item, 16 and 48
    bytes into a line, each operand's last byte right before a guard page
    and the other's first right after one, every SIMD level, 1 and 2 threads. The
    destination's pages must hold exactly the pixels (np.copyto's, numpy's float16 for the
    conversion); the source's must be unchanged."""
    out = run_isolated("""
        import numpy as np
        import strided as st
        from strided import _copy
        import guarded

        src_area, dst_area = guarded.Arena(24), guarded.Arena(24)
        rng = np.random.default_rng(14)
        tally = guarded.Tally()
        _copy._tune(nt_bytes=0)
        for level in range(_copy._simd() + 1):
            _copy._simd(level)
            for k, C in [(k, row // k) for k in (1, 2, 4, 8) for row in (16, 32, 64)]:
                dtype = np.dtype(f"V{k}")
                for R in sorted({C - 1, C, C + 1, 16, 17, 2 * C + 3, 100, 1001}):
                    if R >= C:
                        assert _copy._block_kind((R, C), (C, 1), (1, R), k) == "staged"
                    page = 4096 // k      # planes 4 KiB apart crowd one L1 set
                    for sp in (R, R + 5, -(-R // page) * page):
                        for lead in sorted({0, k, 16, 48}):
                            tally.add(guarded.transpose_stays_inside(
                                src_area, dst_area, R, C, sp, C, dtype, rng,
                                1 + R % 2, (0, lead)), level, k, R, sp, lead)
            for C, R, lead in [(C, R, lead) for C in (8, 16) for R in (7, 8, 9, 100, 1001)
                               for lead in (0, 2, 16, 48)]:   # float32 planes -> float16
                sused, dused = 4 * (C * R + C - 1), 2 * C * R
                for at_end, sbase, dbase, before, expected in guarded.placements(
                        src_area, dst_area, sused, dused, rng, (0, lead)):
                    src = src_area.view(sbase, (R, C), (1, R + 1), np.float32)
                    src[...] = rng.standard_normal((R, C))
                    before = src_area.bytes.copy()
                    dst = dst_area.view(dbase, (R, C), (C, 1), np.float16)
                    expected[dbase:dbase + dused] = np.ascontiguousarray(
                        src, np.float16).view(np.uint8).ravel()
                    st.copyto(dst, src, num_threads=1 + R % 2)
                    ok = (np.array_equal(dst_area.bytes, expected)
                          and np.array_equal(src_area.bytes, before))
                    tally.add((1, [] if ok else [at_end]), "f16", level, C, R, lead)
        tally.report()
    """, timeout=900)
    _assert_no_problems(out, least_copies=1000)


# (the knob, its tile's bytes, the (item size, pixel items) streamed through it, each
# arena's pages, the destination's offsets in a line, the least copies the run must make)
WHOLE_ROW_TILES = {
    # the L1-sized tile of long pixels (NCDHW -> NDHWC, NCHW32 of floats and doubles)
    "small": ("rows_tile_bytes", 32768, ((4, 32), (8, 16), (8, 32)), 72, "0, k, 16", 300),
    # the whole 512 KiB buffer for pixels of many planes (NCHW -> NHWC with 64-256 channels)
    "big": ("rows_big_bytes", 524288, ((1, 64), (1, 256), (2, 128), (4, 64), (8, 64)), 264,
            "0, 16", 600),
}


@pytest.mark.parametrize("which", sorted(WHOLE_ROW_TILES))
def test_streamed_whole_pixel_rows_through_either_tile_stay_inside(which):
    """Streamed transposes into whole pixel rows staged through the L1-sized tile
    (``rows_tile_bytes``: pixels of 128 and 256 bytes of floats and doubles, blocks of 1 KiB
    of each source plane) or the whole 512 KiB buffer (``rows_big_bytes``: pixels of 64-256
    planes of bytes, uint16, floats and doubles), and through the 128 KiB staging tile
    instead: pixel counts just under, at and over one and two such blocks (and a ragged long
    one for the small tile), planes back to back and padded, the destination at the offsets
    in a line given, each operand's last byte right before a guard page and the other's first
    right after one, every SIMD level, 1 and 2 threads. The destination's pages must hold
    exactly np.copyto's result; the source's must be unchanged."""
    knob, size, shapes, pages, leads, least = WHOLE_ROW_TILES[which]
    out = run_isolated(f"""
        import numpy as np
        from strided import _copy
        import guarded

        src_area, dst_area = guarded.Arena({pages}), guarded.Arena({pages})
        rng = np.random.default_rng(15)
        tally = guarded.Tally()
        # the other whole-row rule off: each test is about one tile
        _copy._tune(nt_bytes=0, stage_big_from=1, stage_bytes=131072, rows_tile_bytes=0,
                    rows_big_bytes=0)
        for level in range(_copy._simd() + 1):
            _copy._simd(level)
            for tile in (0, {size}):
                _copy._tune({knob}=tile)
                for k, C in {shapes!r}:
                    dtype = np.dtype(f"V{{k}}")
                    block = {size} // (C * k)
                    pixels = [block - 1, block, block + 1, 2 * block + 3]
                    if {size} < 131072:
                        pixels.append(1000)
                    for R in pixels:
                        assert _copy._block_plan((R, C), (C, 1), (1, R), k) == (
                            "staged", min(R, block if tile else 131072 // (C * k)), C)
                        for sp in (R, R + 3):
                            for lead in sorted({{{leads}}}):
                                tally.add(guarded.transpose_stays_inside(
                                    src_area, dst_area, R, C, sp, C, dtype, rng,
                                    1 + R % 2, (0, lead)), level, tile, k, C, R, sp, lead)
        tally.report()
    """, timeout=900)
    _assert_no_problems(out, least_copies=least)


def test_transposes_of_rows_crowding_an_l1_set_stay_inside():
    """Source rows whose lines crowd one L1 set (4096 or 2048 bytes apart, or 32761: 7 short
    of 32 KiB) go through a line buffer four lines a row (tile.h; rows of one vector written
    in place take it too) and, for 32 byte planes into 32-byte pixels, in groups of 256 pixels
    (interleave.h st_pixels32_w4, then 64-pixel groups for the rest): pixel counts around the
    buffer's 4 lines and a line, one-vector and wider pixels, dense and padded, staged and as
    the planner chooses, each operand's last byte right before a guard page and the other's
    first right after one, every SIMD level, 1 and 2 threads. The destination's pages must hold
    exactly np.copyto's result; the source's must be unchanged. With ``crowd_runs`` off, the
    buffer holds one line a row (the streamed copies' and the conversions' way); streamed
    (``nt_bytes`` 0), with ``crowd_rows`` 4 and 8 (ST_SETS8: up to 8 rows in a set read
    directly), each also fetching its rows a line ahead (``sweep_ahead``: the prefetches may
    point past a row's end, never a load or a store)."""
    out = run_isolated("""
        import numpy as np
        from strided import _copy
        import guarded

        src_area, dst_area = guarded.Arena(52), guarded.Arena(8)
        rng = np.random.default_rng(13)
        problems = copies = 0
        default = _copy._tune()
        tunes = [dict(staged=s, crowd_runs=r) for s in (-1, 1) for r in (0, 1)] + [
            dict(nt_bytes=0, crowd_rows=c, sweep_ahead=a) for c in (4, 8) for a in (0, 1)]
        for level, tune in [(lv, tn) for lv in range(_copy._simd() + 1) for tn in tunes]:
            _copy._simd(level)
            _copy._tune(**{**default, **tune})
            label = ",".join(f"{k}={v}" for k, v in tune.items())
            for k in (1, 2, 4, 8):
                dtype = np.dtype(f"V{k}")
                line = 64 // k
                pixels = sorted({line, 4 * line - 1, 4 * line, 4 * line + 1, 5 * line + 3,
                                 256 + 1, 600} - {0})
                widths = {1: (16, 17, 32, 48), 2: (8, 9, 16, 24), 4: (4, 5, 8, 12),
                          8: (2, 3, 4, 6)}[k]
                pitches = (4096 // k, 2048 // k) + ((32761,) if k == 1 else ())
                for R in pixels:
                    for C in widths:
                        for sp in pitches:
                            for dpad in (0, 1):
                                if sp < R:
                                    continue
                                done, wrong = guarded.transpose_stays_inside(
                                    src_area, dst_area, R, C, sp, C + dpad, dtype, rng,
                                    1 + (R + C) % 2)
                                copies += done
                                for at_end in wrong:
                                    problems += 1
                                    print("wrong", level, label, k, R, C, sp, dpad, at_end)
        print("copies", copies)
        print("problems", problems)
    """, timeout=900)
    lines = out.strip().splitlines()
    assert lines[-1] == "problems 0", out
    assert int(lines[-2].split()[1]) > 1000, out


def test_narrow_transposes_stay_inside():
    """Planes into pixels of 5 to M - 1 items and back (transpose.h: st_narrow_into_1,
    st_narrow_into_1_8, st_narrow_into_2, the AVX2 st_narrow_into_4_avx2, st_narrow_outof_1
    and _2), whose tiles load and store whole vectors past a pixel's items where the next
    pixels are the block's own (dense pixels) and exact moves elsewhere: pixel counts at and
    around one, two and three tiles, pixels back to back and padded, planes back to back and
    padded, each operand's last byte right before a guard page and the other's first right
    after one, every SIMD level, 1 and 2 threads. The destination's pages must hold exactly
    np.copyto's result; the source's must be unchanged."""
    out = run_isolated("""
        import numpy as np
        from strided import _copy
        import guarded

        src_area, dst_area = guarded.Arena(8), guarded.Arena(8)
        rng = np.random.default_rng(12)
        problems = copies = 0
        for level in range(_copy._simd() + 1):
            _copy._simd(level)
            for k, tile, narrow in ((1, 16, (5, 6, 7, 8, 9, 12, 15)), (2, 8, (5, 6, 7)),
                                    (4, 8, (5, 6, 7))):
                dtype = np.dtype(f"V{k}")
                long = (tile - 1, tile, tile + 1, tile + 3, 2 * tile - 1, 2 * tile,
                        3 * tile + 5)
                shapes = [(n, m) for n in long for m in narrow]
                shapes += [(m, n) for n in long for m in narrow]
                for R, C in shapes:
                    for spad, dpad in ((0, 0), (2, 0), (0, 1), (0, 3)):
                        done, wrong = guarded.transpose_stays_inside(
                            src_area, dst_area, R, C, R + spad, C + dpad, dtype, rng,
                            1 + (R + C) % 2)
                        copies += done
                        for at_end in wrong:
                            problems += 1
                            print("wrong", level, k, R, C, spad, dpad, at_end)
        print("copies", copies)
        print("problems", problems)
    """, timeout=900)
    lines = out.strip().splitlines()
    assert lines[-1] == "problems 0", out
    assert int(lines[-2].split()[1]) > 1000, out


def test_rgb_pixels_of_every_length_stay_inside():
    """Two, three or four planes of 1- or 2-byte items into dense pixels (interleave.h:
    st_rgb_avx2, 32 bytes of each plane a step in three 32-byte stores; st_rgb_ssse3, 16 bytes
    a step; 2- and 4-item pixels 16 bytes of each plane a step, and 2 float32 planes; items
    after that), with ordinary stores and with streaming stores forced on (whole output lines
    streamed between an ordinary head and tail), three planes of float32 (st_rgb_4_avx2,
    8 pixels a step), and 32 byte planes into 32-byte pixels (st_pixels32_bytes_avx2, groups
    of 64 pixels through a buffer, also in streamed copies with pix32_plain): every pixel
    count 1..200 and a few long ones, planes back
    to back or padded, the planes' last byte or the pixels' last byte right before a guard
    page and the other operand's first right after one, every SIMD level, 1 and 2 threads.
    The destination's pages must hold exactly the interleaved planes and nothing else; the
    source's must be unchanged."""
    out = run_isolated("""
        import numpy as np
        import strided as st
        from strided import _copy
        import guarded

        src_area, dst_area = guarded.Arena(8), guarded.Arena(8)
        rng = np.random.default_rng(11)
        problems = 0
        for level, (C, dtype), nt in ((level, kind, nt) for level in range(_copy._simd() + 1)
                                      for kind in ((3, np.uint8), (4, np.uint8),
                                                   (2, np.uint8), (2, np.uint16),
                                                   (3, np.uint16), (4, np.uint16),
                                                   (2, np.float32), (3, np.float32),
                                                   (32, np.uint8))
                                      for nt in ((-1, 0, 1) if kind[0] == 32 else (-1, 0))):
            _copy._simd(level)
            # nt 1: streamed, 8-bit NCHW32 through the in-register kernel (pix32_plain)
            _copy._tune(nt_bytes=min(nt, 0), pix32_plain=int(nt == 1))
            k = np.dtype(dtype).itemsize
            for n in (*range(1, 201, 1 if nt else 3), 1000, 2047, 2048):
                for pad in (0, 5, 64):
                    sused, dused = k * (C * (n + pad) - pad), k * C * n
                    if max(sused, dused) > src_area.size:
                        continue
                    for at_end, sbase, dbase, before, expected in guarded.placements(
                            src_area, dst_area, sused, dused, rng):
                        planes = src_area.view(sbase, (C, n), (n + pad, 1), dtype)
                        pixels = np.ascontiguousarray(planes.T)
                        expected[dbase:dbase + dused] = pixels.view(np.uint8).ravel()
                        dst = dst_area.view(dbase, (C, n), (1, C), dtype)
                        st.copyto(dst, planes, num_threads=1 + n % 2)
                        if not (np.array_equal(dst_area.bytes, expected)
                                and np.array_equal(src_area.bytes, before)):
                            problems += 1
                            print("wrong", level, C, nt, n, pad, at_end)
        print("problems", problems)
    """, timeout=900)
    assert out.strip().splitlines()[-1] == "problems 0", out


def test_streamed_planes_of_every_length_stay_inside():
    """Dense pixels of 2, 3 and 4 items of 1, 2 and 4 bytes into planes a multiple of 64 bytes
    apart, streaming stores forced on (interleave.h: the AVX2 deinterleave streams the whole
    lines of every plane between an ordinary head and tail that may overlap them): every
    pixel count 1..160 and a few long ones, the planes starting at every 16th byte of a line,
    the pixels' or the last plane's last byte right before a guard page, every SIMD level, 1
    and 2 threads; planes a multiple of 2 KiB apart too, which stream with deint_alias_nt.
    The destination's pages must hold exactly the planes and nothing else."""
    out = run_isolated("""
        import numpy as np
        import strided as st
        from strided import _copy
        import guarded

        src_area, dst_area = guarded.Arena(3), guarded.Arena(3)
        rng = np.random.default_rng(13)
        _copy._tune(nt_bytes=0, deint_alias_nt=1)
        problems = 0
        for level in range(_copy._simd() + 1):
            _copy._simd(level)
            for k, dtype in ((1, np.uint8), (2, np.uint16), (4, np.float32)):
                for S in (2, 3, 4):
                    for n, pitch in (*((n, -(-n * k // 64) * 64)
                                       for n in (*range(1, 161), 1000, 1001)),
                                     (1000, 2048), (300, 2048), (1001, 4096)):
                        if pitch < n * k:
                            continue            # (planes that would overlap)
                        for lead in (0, 16, 48):
                            sused, dused = S * n * k, (S - 1) * pitch + n * k + lead
                            if max(sused, dused) > src_area.size:
                                continue
                            at_end = (n + lead) % 2 == 1
                            sbase = src_area.size - sused if at_end else 0
                            dbase = lead if at_end else dst_area.size - dused + lead
                            src_area.bytes[:] = rng.integers(0, 256, src_area.size,
                                                             dtype=np.uint8)
                            dst_area.bytes[:] = rng.integers(0, 256, dst_area.size,
                                                             dtype=np.uint8)
                            pixels = src_area.view(sbase, (n, S), (S, 1), dtype)
                            planes = dst_area.view(dbase, (S, n), (pitch // k, 1), dtype)
                            expected = dst_area.bytes.copy()
                            for p in range(S):
                                at = dbase + p * pitch
                                plane = np.ascontiguousarray(pixels[:, p])
                                expected[at:at + n * k] = plane.view(np.uint8)
                            st.copyto(planes, pixels.T, num_threads=1 + n % 2)
                            if not np.array_equal(dst_area.bytes, expected):
                                problems += 1
                                print("wrong", level, k, S, n, lead, at_end)
        print("problems", problems)
    """, timeout=900)
    assert out.strip().splitlines()[-1] == "problems 0", out


def test_sentinel_pattern_changes_with_position():
    """A stray store of any single byte value is caught: no 256-byte window of the sentinel
    holds one value twice."""
    import guarded

    pattern = guarded._sentinel(4096)
    assert all(np.unique(pattern[i:i + 256]).size == 256 for i in (0, 1, 255, 3000))


def test_image_planes_and_pixels_rows_of_every_width_stay_inside():
    """HWC 8-bit pixels -> CHW float32 planes whose rows do not merge (a padded destination,
    as a crop's source does): each row is one call of the planes kernel, whose last rounds of
    8 pixels overlap the ones before and end at the row's last byte; and the mirror, float32
    planes -> padded rows of quantized pixels (the pixels kernels). Every width 1..40, 3, 4
    and 32 channels (int8 NCHW32 both ways: the tile-staged kernels), both signs, every SIMD
    level, against the guard pages."""
    out = run_isolated("""
        import numpy as np
        from guarded import CONVERT_TUNES, Case, family, run_case
        from strided import _copy

        problems, families = [], set()
        for level in range(_copy._simd() + 1):
            for channels in (3, 4, 32):
                for src_type in ("uint8", "int8"):
                    for width in range(1, 41):
                        case = Case((channels, 2, width), (2 * (width + 3), width + 3, 1),
                                    (1, width * channels, channels), dst_type="float32",
                                    src_type=src_type,
                                    scale=tuple(np.linspace(0.5, 2, channels)),
                                    shift=tuple(np.linspace(-1, 1, channels)),
                                    param_strides=(1, 0, 0), param_length=channels,
                                    level=level, convert_tune=CONVERT_TUNES["default"],
                                    label="HWC -> CHW rows")
                        mirror = Case((channels, 2, width),
                                      (1, (width + 1) * channels, channels),
                                      (2 * (width + 3), width + 3, 1), dst_type=src_type,
                                      src_type="float32",
                                      scale=tuple(np.linspace(0.5, 2, channels)),
                                      shift=tuple(np.linspace(-1, 1, channels)),
                                      param_strides=(1, 0, 0), param_length=channels,
                                      level=level, convert_tune=CONVERT_TUNES["default"],
                                      label="CHW -> HWC rows")
                        for one in (case, mirror):
                            families.add(family(one))
                            problem = run_case(one)
                            if problem:
                                problems.append(f"{one.describe()}: {problem}")
        print(sorted(families))
        print(*problems[:10], sep="\\n")
        print("problems", len(problems))
    """, timeout=900)
    assert "convert/planes" in out and "convert/pixels" in out, out
    assert out.strip().splitlines()[-1] == "problems 0", out


def test_real_cast_rows_and_long_copies_stay_inside():
    """The unit-stride rows of plain casts between real types (vectorised by the compiler,
    every SIMD level), lengths 1..40 and 129, widening and narrowing both ways; and long
    contiguous copies (rows over 512 bytes, memcpy's or the engine's own vector rounds),
    against the guard pages."""
    out = run_isolated("""
        from guarded import CONVERT_TUNES, Case, run_case
        from strided import _copy

        pairs = [("int16", "int32"), ("int64", "int8"), ("uint8", "uint64"),
                 ("uint32", "int16"), ("int8", "uint16"), ("float64", "uint8"),
                 ("float32", "int32"), ("bool", "float64"), ("float32", "bool"),
                 ("int64", "float32")]
        problems = []
        for level in range(_copy._simd() + 1):
            for src_type, dst_type in pairs:
                for n in (*range(1, 41), 129):
                    case = Case((n,), (1,), (1,), dst_type=dst_type, src_type=src_type,
                                level=level, convert_tune=CONVERT_TUNES["default"],
                                label="real cast row")
                    problem = run_case(case)
                    if problem:
                        problems.append(f"{case.describe()}: {problem}")
            for n in (513, 1000, 4097, 20001):
                case = Case((n,), (1,), (1,), itemsize=1, level=level, label="long row")
                problem = run_case(case)
                if problem:
                    problems.append(f"{case.describe()}: {problem}")
        print(*problems[:10], sep="\\n")
        print("problems", len(problems))
    """, timeout=900)
    assert out.strip().splitlines()[-1] == "problems 0", out
