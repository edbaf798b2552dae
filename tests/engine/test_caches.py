"""The cache sizes the machine reports and the engine knobs derived from them (strided._caches)."""

import os

import pytest

from strided import _caches, _copy
from strided._caches import FALLBACK, CacheSizes, KiB, MiB, derived_tuning, detect


def _sysfs(root, caches):
    """A sysfs cache tree: one index<k> directory per (level, type, size text)."""
    for k, (level, kind, size) in enumerate(caches):
        d = root / f"index{k}"
        d.mkdir(parents=True)
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    return str(root)


def _cpuinfo(path, vendor):
    """A cpuinfo file of two CPUs of ``vendor``."""
    cpu = f"processor\t: {{}}\nvendor_id\t: {vendor}\ncpu family\t: 6\nflags\t\t: fpu sse2\n\n"
    path.write_text(cpu.format(0) + cpu.format(1))
    return str(path)


def test_detect_reads_the_data_and_unified_caches_of_each_level(tmp_path):
    root = _sysfs(tmp_path / "cache", [(1, "Data", "48K"), (1, "Instruction", "32K"),
                                       (2, "Unified", "2048K"), (3, "Unified", "30M")])
    cpuinfo = _cpuinfo(tmp_path / "cpuinfo", "GenuineIntel")
    assert detect(root, cpuinfo) == CacheSizes(48 * KiB, 2 * MiB, 30 * MiB, "sysfs",
                                               "GenuineIntel")


def test_vendor_reads_the_first_vendor_id_or_none(tmp_path):
    assert _caches.vendor(_cpuinfo(tmp_path / "amd", "AuthenticAMD")) == "AuthenticAMD"
    (tmp_path / "arm").write_text("processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n")
    assert _caches.vendor(str(tmp_path / "arm")) is None
    (tmp_path / "empty").write_text("vendor_id\t:\n")
    assert _caches.vendor(str(tmp_path / "empty")) is None
    assert _caches.vendor(str(tmp_path / "missing")) is None


def test_detect_skips_what_it_cannot_read(tmp_path):
    root = _sysfs(tmp_path, [(1, "Data", "32K"), (2, "Unified", "lots"), (3, "Unified", "0K"),
                             ("x", "Unified", "1M")])
    (tmp_path / "index9").mkdir()               # no files at all
    (tmp_path / "power").mkdir()                # not a cache
    nowhere = str(tmp_path / "no-cpuinfo")
    assert detect(root, nowhere) == CacheSizes(32 * KiB, None, None, "sysfs")
    assert detect(str(tmp_path / "missing"), nowhere) == \
        CacheSizes(None, None, None, "not reported")


def test_the_measured_constants_are_the_rules_on_the_caches_they_were_measured_with():
    assert derived_tuning(FALLBACK) == {
        "llc_bytes": 32 * MiB, "nt_bytes": 32 * MiB,
        "stage_big_from": 8 * MiB,
        "fetch_next": 16, "vector_rows_in_place": 31, "nt_pages": 0, "crowd_rows": 4,
        "crowd_staged": 1,
        "down_from": 8, "rows_tile_bytes": 0, "rows_big_bytes": 0, "deint_narrow": 0,
        "deint_alias_nt": 0, "pix32_plain": 0, "sweep_ahead": 0, "pixels_nt_bytes": -1,
        "stitch_tile_rows": 1024, "nt_short_runs_from": -1, "chunks_per_thread": 8,
        "nt_stitch_bytes": 512,
        "fill_nt_bytes": -1,
        "stage_bytes": 128 * KiB, "tile_area_bytes": 64 * KiB,
        "convert_tile_bytes": 128 * KiB,
        "nibble_box_bytes": 128 * KiB, "convert_tiled_bytes": 256 * KiB,
        "shift_buffer_bytes": 256 * KiB}
    # nothing reported: the constants themselves
    assert derived_tuning(CacheSizes(None, None, None, "not reported")) == \
        derived_tuning(FALLBACK)


@pytest.mark.parametrize("l2, l3, want", [
    # a 512 KiB L2, 105 MiB L3: streaming later
    (512 * KiB, 105 * MiB, {"nt_bytes": 105 * MiB, "stage_bytes": 128 * KiB,
                            "tile_area_bytes": 64 * KiB, "convert_tile_bytes": 128 * KiB,
                            "convert_tiled_bytes": 256 * KiB, "nibble_box_bytes": 128 * KiB}),
    # a 256 KiB L2, 8 MiB L3 (an older desktop): smaller tiles, earlier streaming
    (256 * KiB, 8 * MiB, {"nt_bytes": 8 * MiB, "stage_bytes": 64 * KiB,
                          "tile_area_bytes": 32 * KiB,
                          "convert_tile_bytes": 64 * KiB, "convert_tiled_bytes": 128 * KiB}),
    # tiny caches and no L3: the bounds, the L2 as the last level
    (64 * KiB, None, {"nt_bytes": 4 * MiB, "stage_bytes": 32 * KiB, "tile_area_bytes": 16 * KiB,
                      "convert_tile_bytes": 32 * KiB, "convert_tiled_bytes": 64 * KiB}),
    # an enormous L3: streaming from 256 MiB at the latest
    (512 * KiB, 1024 * MiB, {"nt_bytes": 256 * MiB, "stage_bytes": 128 * KiB}),
])
@pytest.mark.parametrize("vendor", ["AuthenticAMD", None])
def test_the_rules_scale_with_the_caches_within_their_bounds(l2, l3, want, vendor):
    got = derived_tuning(CacheSizes(32 * KiB, l2, l3, "test", vendor))
    assert {k: got[k] for k in want} == want
    assert got["llc_bytes"] == got["nt_bytes"]
    assert got["fetch_next"] == 16 and got["vector_rows_in_place"] == 31
    assert got["nt_pages"] == 0 and got["crowd_rows"] == 4 and got["down_from"] == 8
    assert got["rows_tile_bytes"] == got["deint_narrow"] == got["sweep_ahead"] == 0
    assert got["pixels_nt_bytes"] == got["fill_nt_bytes"] == -1
    assert got["stitch_tile_rows"] == 1024 and got["nt_short_runs_from"] == -1
    assert got["chunks_per_thread"] == 8 and got["nt_stitch_bytes"] == 512
    # the whole rows' big tile: L2 / 2 within 128-512 KiB on an L2 of 1 MiB or more
    assert got["rows_big_bytes"] == 0


@pytest.mark.parametrize("l2, l3, want", [
    # a 2 MiB L2, 105 MiB L3 (a server core): tiles grow to their bounds; streaming from two
    # L2s (the recent-AMD rule of a 1 MiB L2 or more)
    (2 * MiB, 105 * MiB, {"nt_bytes": 4 * MiB, "stage_big_from": 2 * MiB,
                          "llc_bytes": 105 * MiB, "fill_nt_bytes": 105 * MiB,
                          "pixels_nt_bytes": 512 * KiB, "stage_bytes": 128 * KiB,
                          "tile_area_bytes": 256 * KiB, "convert_tile_bytes": 512 * KiB,
                          "convert_tiled_bytes": 256 * KiB, "nibble_box_bytes": 128 * KiB,
                          "rows_big_bytes": 512 * KiB}),
    # an enormous L3 no longer delays streaming; fills stream from the L3's 256 MiB bound
    (1 * MiB, 1024 * MiB, {"nt_bytes": 4 * MiB, "llc_bytes": 256 * MiB,
                           "fill_nt_bytes": 256 * MiB, "stage_bytes": 128 * KiB,
                           "rows_big_bytes": 512 * KiB}),
    # an L2 of 4 MiB: twice it, within the L3
    (4 * MiB, 6 * MiB, {"nt_bytes": 6 * MiB, "stage_big_from": 3 * MiB}),
])
@pytest.mark.parametrize("vendor", ["AuthenticAMD", None])
def test_an_l2_of_1_mib_or_more_streams_from_two_l2s_beside_a_small_l1(l2, l3, want, vendor):
    got = derived_tuning(CacheSizes(32 * KiB, l2, l3, "test", vendor))
    assert {k: got[k] for k in want} == want
    assert got["vector_rows_in_place"] == 8 and got["deint_alias_nt"] == 1
    # the 8-way L1's own values
    assert got["crowd_rows"] == 4 and got["crowd_staged"] == 1 and got["rows_tile_bytes"] == 0
    assert got["pix32_plain"] == got["sweep_ahead"] == 0
    # (measured on Intel only)
    assert got["stitch_tile_rows"] == 1024 and got["nt_short_runs_from"] == -1
    assert got["chunks_per_thread"] == 8 and got["nt_stitch_bytes"] == 512


@pytest.mark.parametrize("l2, l3, want", [
    # the Xeon it was measured on: calls stream from 2 L2s, the L3 is still the cache a copy
    # counts as in (at most 256 MiB)
    (2 * MiB, 480 * MiB, {"nt_bytes": 4 * MiB, "stage_big_from": 2 * MiB,
                          "llc_bytes": 256 * MiB, "fetch_next": 1, "vector_rows_in_place": 0,
                          "nt_pages": 1, "crowd_rows": 8, "down_from": 8,
                          "rows_tile_bytes": 32 * KiB, "rows_big_bytes": 512 * KiB,
                          "deint_narrow": 1, "deint_alias_nt": 1,
                          "pixels_nt_bytes": 256 * KiB, "fill_nt_bytes": -1,
                          "stitch_tile_rows": 128, "nt_short_runs_from": 32 * MiB,
                          "chunks_per_thread": 4, "nt_stitch_bytes": 256,
                          "tile_area_bytes": 256 * KiB, "nibble_box_bytes": 128 * KiB}),
    (1280 * KiB, 48 * MiB, {"nt_bytes": 4 * MiB, "llc_bytes": 48 * MiB, "crowd_rows": 8,
                            "rows_big_bytes": 512 * KiB, "pixels_nt_bytes": 160 * KiB}),
    # never past the last-level cache, never under 4 MiB; the whole rows' tile L2 / 2 within
    # 128-512 KiB (the staging tile's size at least, the buffer's at most) on an L2 of 1 MiB
    # or more, none on a smaller one (unmeasured)
    (256 * KiB, 6 * MiB, {"nt_bytes": 4 * MiB, "llc_bytes": 6 * MiB, "rows_big_bytes": 0,
                          "pixels_nt_bytes": 64 * KiB}),
    (1 * MiB, 6 * MiB, {"nt_bytes": 4 * MiB, "rows_big_bytes": 512 * KiB}),
    (4 * MiB, 12 * MiB, {"nt_bytes": 8 * MiB, "llc_bytes": 12 * MiB,
                         "stage_big_from": 4 * MiB, "rows_big_bytes": 512 * KiB}),
])
def test_intel_streams_once_a_copy_leaves_the_l2s(l2, l3, want):
    got = derived_tuning(CacheSizes(48 * KiB, l2, l3, "test", "GenuineIntel"))
    assert {k: got[k] for k in want} == want


def test_intel_with_a_smaller_l1_keeps_the_staging_tile_for_whole_rows():
    """rows_tile_bytes (an L1-sized tile for long pixel rows) was measured on a 48 KiB L1d
    only: a 32 KiB one keeps the staging tile, as it keeps crowd_rows at 4."""
    got = derived_tuning(CacheSizes(32 * KiB, 2 * MiB, 480 * MiB, "test", "GenuineIntel"))
    assert got["rows_tile_bytes"] == 0 and got["crowd_rows"] == 4
    assert got["nt_pages"] == 1 and got["down_from"] == 8


@pytest.mark.parametrize("vendor", ["AuthenticAMD", "GenuineIntel", None])
def test_a_48_kib_l1_reads_crowded_rows_directly_and_stages_long_rows_in_it(vendor):
    """crowd_rows, rows_tile_bytes and nt_bytes follow the L1d's 12 ways, measured alike on
    an Intel Xeon and an AMD EPYC Zen 5; nt_pages and deint_narrow stay Intel's (they lost on
    the Zen 5); the Zen 5's 1 MiB L2 takes the whole rows' 512 KiB tile."""
    zen5 = derived_tuning(CacheSizes(48 * KiB, 1 * MiB, 32 * MiB, "test", vendor))
    assert zen5["crowd_rows"] == 8 and zen5["rows_tile_bytes"] == 32 * KiB
    assert zen5["down_from"] == 8 and zen5["rows_big_bytes"] == 512 * KiB
    intel = vendor == "GenuineIntel"
    assert zen5["nt_pages"] == zen5["deint_narrow"] == int(intel)
    # sources in one L1 set: tiled in place from memory on the Zen 5's 12 ways (Intel: staged)
    assert zen5["crowd_staged"] == (1 if intel else 0)
    # deinterleaves stream planes 2 KiB multiples apart on the Zen 5 and the Xeon (the Zen 3
    # lost); NCHW32 bytes over spread planes take ordinary stores (level on the Zen 4's 8-way
    # L1; Intel unmeasured)
    assert zen5["deint_alias_nt"] == 1
    assert zen5["pix32_plain"] == (0 if intel else 1)
    # one-vector NHWC -> NCHW pixels: in place for doubles only on the Zen 5 (none on Intel)
    assert zen5["vector_rows_in_place"] == (0 if intel else 8)
    # streamed tiles fetch their rows 8 lines ahead on the Zen 5 (Intel unmeasured)
    assert zen5["sweep_ahead"] == (0 if intel else 8)
    # images (HWC <-> CHW) stream from a quarter of the Zen 5's L2 (Intel: an eighth)
    assert zen5["pixels_nt_bytes"] == (128 * KiB if intel else 256 * KiB)
    # stitched streamed tiles of at most 128 rows on the Xeon (AMD unmeasured: the room)
    assert zen5["stitch_tile_rows"] == (128 if intel else 1024)
    # large streamed tiles of aligned rows write half runs on the Xeon (AMD: the Zen 3's)
    assert zen5["nt_short_runs_from"] == (32 * MiB if intel else -1)
    # teams claim their blocks in 4 runs a thread on the Xeon (AMD unmeasured: 8)
    assert zen5["chunks_per_thread"] == (4 if intel else 8)
    assert zen5["nt_stitch_bytes"] == (256 if intel else 512)
    # every call streams from twice the L2 (4 MiB at least) on both vendors (measured cold),
    # and stages through the big tile from half that
    assert zen5["nt_bytes"] == 4 * MiB and zen5["stage_big_from"] == 2 * MiB
    # fills stream from the L3 on the Zen 5 (Intel: from nt_bytes)
    assert zen5["fill_nt_bytes"] == (-1 if intel else 32 * MiB)
    big_l2 = derived_tuning(CacheSizes(48 * KiB, 8 * MiB, 32 * MiB, "test", vendor))
    assert big_l2["pixels_nt_bytes"] == 1 * MiB
    assert big_l2["nt_bytes"] == 16 * MiB and big_l2["stage_big_from"] == 8 * MiB
    zen3 = derived_tuning(CacheSizes(32 * KiB, 512 * KiB, 32 * MiB, "test", vendor))
    # the Zen 3 (measured warm only) streams from its L3
    assert zen3["nt_bytes"] == (4 * MiB if intel else 32 * MiB)
    assert zen3["crowd_rows"] == 4 and zen3["rows_tile_bytes"] == zen3["rows_big_bytes"] == 0
    assert zen3["crowd_staged"] == 1 and zen3["pix32_plain"] == 0
    assert zen3["deint_alias_nt"] == int(intel)
    assert zen3["vector_rows_in_place"] == (0 if intel else 31)
    assert zen3["sweep_ahead"] == 0 and zen3["fill_nt_bytes"] == -1
    assert zen3["pixels_nt_bytes"] == (64 * KiB if intel else -1)


@pytest.mark.parametrize("vendor", ["AuthenticAMD", "GenuineIntel", None])
def test_a_1_mib_l2_with_an_8_way_l1_takes_the_streaming_rules_but_not_the_12_way_ones(vendor):
    """An AMD EPYC Zen 4 (32 KiB 8-way L1d, 1 MiB L2, 32 MiB L3): the streaming rules measured
    cold on the Zen 5 held there too (nt_bytes, the images' pixels_nt_bytes, deint_alias_nt,
    fills from the L3, one-vector NHWC -> NCHW pixels streamed but for doubles), while the
    knobs that follow the L1's 12 ways (crowd_rows, crowd_staged, rows_tile_bytes) and the
    two level or mixed there (pix32_plain, sweep_ahead) keep the 8-way values."""
    zen4 = derived_tuning(CacheSizes(32 * KiB, 1 * MiB, 32 * MiB, "test", vendor))
    intel = vendor == "GenuineIntel"
    assert zen4["nt_bytes"] == 4 * MiB and zen4["stage_big_from"] == 2 * MiB
    assert zen4["pixels_nt_bytes"] == (128 * KiB if intel else 256 * KiB)
    assert zen4["fill_nt_bytes"] == (-1 if intel else 32 * MiB)
    assert zen4["deint_alias_nt"] == 1
    assert zen4["vector_rows_in_place"] == (0 if intel else 8)
    assert zen4["crowd_rows"] == 4 and zen4["rows_tile_bytes"] == 0
    assert zen4["crowd_staged"] == 1
    assert zen4["pix32_plain"] == zen4["sweep_ahead"] == 0
    # the 1 MiB L2 is the line: the Zen 3's 512 KiB one keeps its own rules (above)
    below = derived_tuning(CacheSizes(32 * KiB, 1 * MiB - 64 * KiB, 32 * MiB, "test", vendor))
    assert below["nt_bytes"] == (4 * MiB if intel else 32 * MiB)
    assert below["deint_alias_nt"] == int(intel)
    assert below["pixels_nt_bytes"] == (120 * KiB if intel else -1)


def test_the_engine_runs_with_the_knobs_of_the_caches_it_found():
    knobs = _copy._tune()
    derived = derived_tuning(_copy.CACHES)
    assert {k: knobs[k] for k in derived} == derived
    if os.path.isdir("/sys/devices/system/cpu/cpu0/cache"):
        assert _copy.CACHES == detect()
        assert _copy.CACHES.source == "sysfs" and _copy.CACHES.l2


def test_describe_names_every_level():
    assert CacheSizes(32 * KiB, 512 * KiB, 32 * MiB, "sysfs").describe() == \
        "L1d 32 KiB, L2 512 KiB, L3 32 MiB (sysfs)"
    assert CacheSizes(None, 1536 * KiB, None, "x").describe() == "L1d ?, L2 1536 KiB, L3 ? (x)"
    assert CacheSizes(48 * KiB, 2 * MiB, 480 * MiB, "sysfs", "GenuineIntel").describe() == \
        "L1d 48 KiB, L2 2 MiB, L3 480 MiB (sysfs, GenuineIntel)"
    assert _caches.FALLBACK.source == "fallback"
