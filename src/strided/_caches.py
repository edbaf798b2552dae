"""The cache sizes the machine reports, and the engine's tuning derived from them.

The copy and conversion engines size their staging tiles by the L2 cache and decide to stream
(non-temporal stores) by the last-level cache on AMD, by the L2 on Intel. The rules below
reproduce, on the development machines' caches (AMD EPYC Zen 3: 32 KiB L1d, 512 KiB L2 a core,
32 MiB L3 a CCD), the constants measured there (see the comments on ``_TUNING`` in
``_copy.pyx``), and scale them on other caches within bounds that keep every tile inside its
cache; a machine that reports nothing keeps those constants.

Where to stream differs by vendor. An AMD core reads and writes its CCD's L3 far faster than
memory, so a copy keeps its destination in cache while both operands fit the L3. An Intel Xeon
core's share of its mesh L3 is no faster than memory with streaming stores (2 MiB L2, 480 MiB
L3, one core: a memcpy moves 28 GB/s from 4 to 64 MiB of footprint, 108 GB/s in the L2), so
there copies and conversions stream once they leave the L2s (twice one core's L2). The
vendor comes from ``/proc/cpuinfo``; an unknown one takes the AMD rule, measured the longest.
The knobs measured alike on both vendors (an Intel Xeon and an AMD EPYC Zen 5, both with a
48 KiB L1d) follow the caches instead: the L1d's size (its 12 ways) and the L2's. AMD's own
rules measured cold on the Zen 5 hold on the Zen 4 too (1 MiB L2, a 32 KiB 8-way L1d), except
those that follow the L1's ways: they apply to AMD cores with a 1 MiB L2 or a 48 KiB L1d
("recent AMD" below), the Zen 3's 512 KiB L2 keeps what was measured on it.

The sizes come from Linux's sysfs (``/sys/devices/system/cpu/cpu0/cache``: the caches one
core sees, a shared L3 counted once per instance), not from glibc's
``sysconf(_SC_LEVEL3_CACHE_SIZE)``, which reads CPUID and reports, inside a VM on an AMD
EPYC host, the whole package's 256 MiB where one core's L3 holds 32 MiB.

Examples
--------
>>> zen3 = CacheSizes(l1d=32 * 1024, l2=512 * 1024, l3=30 * 1024 * 1024, source="test")
>>> tuning = derived_tuning(zen3)
>>> tuning["nt_bytes"] == 30 * 1024 * 1024      # stream what the L3 cannot hold
True
>>> zen4 = zen3._replace(l2=1024 * 1024)
>>> derived_tuning(zen4)["nt_bytes"] // (1024 * 1024)   # ... or what two L2s cannot
4
>>> tuning["convert_tiled_bytes"] // 1024        # half the L2, at most 256 KiB
256
>>> derived_tuning(CacheSizes(None, None, None, "none")) == derived_tuning(FALLBACK)
True
"""

from __future__ import annotations

import os
from typing import NamedTuple

KiB = 1024
MiB = 1024 * KiB


class CacheSizes(NamedTuple):
    """Bytes of one core's L1 data, L2 and last-level L3 cache (None: not reported), and where
    the sizes came from."""

    l1d: int | None
    l2: int | None
    l3: int | None
    source: str
    #: the CPU's vendor string (``GenuineIntel``, ``AuthenticAMD``), None when not reported
    vendor: str | None = None

    def describe(self) -> str:
        """``L1d 32 KiB, L2 512 KiB, L3 32 MiB (sysfs)``; ``?`` for a size not reported, the
        vendor after the source when known (``(sysfs, GenuineIntel)``)."""
        def size(n: int | None) -> str:
            if n is None:
                return "?"
            return f"{n // MiB} MiB" if n >= MiB and n % MiB == 0 else f"{n // KiB} KiB"
        where = self.source if self.vendor is None else f"{self.source}, {self.vendor}"
        return f"L1d {size(self.l1d)}, L2 {size(self.l2)}, L3 {size(self.l3)} ({where})"


#: The caches the constants were measured with (AMD EPYC Zen 3), used for any size not reported.
FALLBACK = CacheSizes(l1d=32 * KiB, l2=512 * KiB, l3=32 * MiB, source="fallback")

_SYSFS = "/sys/devices/system/cpu/cpu0/cache"
_CPUINFO = "/proc/cpuinfo"


def _parse_size(text: str) -> int | None:
    """``32K`` / ``32768K`` / ``1M`` / ``524288`` -> bytes; None for anything else."""
    text = text.strip().upper()
    scale = {"K": KiB, "M": MiB, "G": 1024 * MiB}.get(text[-1:], 1)
    digits = text[:-1] if scale != 1 else text
    return int(digits) * scale if digits.isdigit() and int(digits) > 0 else None


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as f:
            return f.read().strip()
    except (OSError, UnicodeDecodeError):
        return None


def vendor(cpuinfo: str = _CPUINFO) -> str | None:
    """The ``vendor_id`` of the first CPU in Linux's ``cpuinfo`` file (``GenuineIntel``,
    ``AuthenticAMD``); None where there is none (another OS, another architecture)."""
    text = _read(cpuinfo)
    for line in (text or "").splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "vendor_id" and value.strip():
            return value.strip()
    return None


def detect(root: str = _SYSFS, cpuinfo: str = _CPUINFO) -> CacheSizes:
    """The caches of CPU 0 as Linux's sysfs describes them under ``root`` (one directory
    ``index<k>`` per cache, with ``level``, ``type`` and ``size``); all None where there is no
    such description (another OS, a container hiding sysfs). The vendor from ``cpuinfo``."""
    found: dict[int, int] = {}
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        entries = []
    for entry in entries:
        if not entry.startswith("index"):
            continue
        level = _read(os.path.join(root, entry, "level"))
        kind = _read(os.path.join(root, entry, "type"))
        size = _parse_size(_read(os.path.join(root, entry, "size")) or "")
        if level is None or not level.isdigit() or kind not in ("Data", "Unified") or not size:
            continue
        found.setdefault(int(level), size)
    if not found:
        return CacheSizes(None, None, None, "not reported", vendor(cpuinfo))
    return CacheSizes(found.get(1), found.get(2), found.get(3), "sysfs", vendor(cpuinfo))


def _clamp(value: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, value))


def derived_tuning(caches: CacheSizes) -> dict[str, int]:
    """The engine's knobs that follow the caches and the vendor (names of ``_copy._tune``),
    from ``caches``, any size it lacks taken from :data:`FALLBACK`.

    - ``llc_bytes`` = the last-level cache (L3, else L2), 4-256 MiB: what a copy counts as
      in cache (one of an eighth of it tiles in place).
    - ``nt_bytes`` = twice the L2 (4 MiB - ``llc_bytes``) on Intel and recent AMD (Zen 4, Zen
      5), else ``llc_bytes``: a copy or conversion that reads and writes
      together more streams. Measured on an AMD Zen 3's 32 MiB L3, warm: copies gain from
      16 MiB each way (glibc's memcpy streams from 3/4 of the same cache, an L3 per core
      complex on AMD Zen). On an AMD EPYC Zen 5 (1 MiB L2; a 32 MiB L3 that its core
      complex's 8 cores share, 2 of them this VM's), cold (bench_copy --cold: every call on
      the next of copies >= 3x the L3), 4 MiB against 32: relayouts of 2 and 4 MiB each way
      1.1-1.9x faster on 1 and 2 threads (cases >= 1.1x the best peer on 2 threads: 21 -> 27
      of 28, 30 -> 35 of 38; 1 MiB ones gained too from 2 MiB, 22 -> 27 of 28, but the floor
      stays Intel's 4 MiB), the conversion table (bench_convert, warm loops of 4-64 MiB) 21
      of its 31 targets met against 15. Warm loops over one 4 MiB pair lose, 0.4-0.85x (the
      L3 moves 60-160 GB/s there, memory 25-40); fills keep the L3 (``fill_nt_bytes``). On an
      Intel Xeon (2 MiB L2, 480 MiB L3), against the L3's 256 MiB, cold (every
      call on fresh operands, rotating over 1-1.5 GiB): copies of 2-4 MiB 1.0-1.8x faster on
      1 and 2 threads (fills level), 64 MiB 1.0-2.6x; float32 -> float16 / bfloat16 NCHW ->
      NHWC of 9-37 MiB 1.17-1.30x; 3-channel 1080p CHW -> HWC 1.5-1.75x. Warm (tune_copy.py,
      a memcpy between calls): transposes of 2-3 MiB 1.1-2x on 1 thread, level on 2; 0.5 MiB
      (in the L2) behind. Only loops on the same arrays, which the 480 MiB L3 keeps whole,
      lose (bench_copy's warm 4 MiB rows on 2 threads: 24 of 38 slower, 0.45-0.9x): a shared
      L3 under load does not keep them. On an AMD EPYC Zen 4 (32 KiB L1d, 1 MiB L2, 32 MiB
      L3), cold, this knob with the other recent-AMD ones against the Zen 3's rules: 4 MiB
      relayouts on 2 threads >= 1.1x the best peer 22 -> 35 of 38, transposes >= 0.7x a
      memcpy 11-13 -> 22-23 of 26 (2-D float32 2.0x, NCHW -> NHWC 1.1-1.8x, 3-channel images
      1.2-1.6x); on 1 thread 22 -> 31 of 38; the conversion table (warm loops) 26 -> 32 of 39
      targets (a warm int8 NCHW32 -> float32 loop on 1 thread lost 0.71x, cold it is level).
    - ``fetch_next`` = 16, on Intel 1: the item sizes (at most this many bytes) whose
      streamed transposes prefetch their next block's source: on the Xeon only bytes gained
      (float32 and float64 1.2-1.3x faster without, 64 MiB; see ``_copy.pyx``).
    - ``vector_rows_in_place`` = 31 (every item size, a mask of byte counts), on Intel 0, on
      recent AMD 8 (doubles): the item sizes whose NHWC -> NCHW
      copies with one-vector pixels tile in place rather than stream (on the Zen 3 1.1-1.7x
      faster in place at 64-256 MiB; on the Xeon level for bytes and uint16, 0.82-0.88x for
      floats and doubles; on the Zen 5, 64 MiB cold, 0.78-0.86x for bytes and uint16, level
      on 1 thread and 0.8-0.85x on 2 for float32, 1.08-1.5x for float64; on the Zen 4, 64
      MiB cold, uint8 with 16 channels streamed 1.22-1.32x faster, the rest level).
    - ``nt_pages`` = 0, on Intel 1: streamed runs read four pages at once (rows.h). On the
      Xeon, cold, 64 MiB: packed copies 1.18-1.24x faster, padded -> packed with 16 KiB rows
      1.29-1.36x, transposes level; a streamed copy of 512 MiB 1.28-1.32x. On an AMD EPYC
      Zen 5 (1 MiB L2, 32 MiB L3) it lost: packed copies 0.68-0.73x on 1 thread, padded ->
      packed 0.71-0.83x (2 threads: 0.57-1.83x in the two orders, level to behind); so AMD and
      unknown vendors read one run at a time.
    - ``crowd_rows`` = 4, with an L1d of 48 KiB or more (12 ways) 8: a streamed transpose
      reads its source through a line buffer once more of a micro-tile's rows share an L1 set
      (64 MiB cold: on the Xeon 32-128 float channels and NCDHW 1.10-1.37x, 2-D float32
      0.91-1.07x over four runs, 4 MiB 1.0-1.31x; on the Zen 5 float32 NCHW32 and NCDHW
      1.26-1.6x on 1 and 2 threads, float64 NCHW -> NHWC with 64 channels 1.29-1.41x, 2-D
      float32 1.11-1.19x, uint8 column-major 1.19-1.21x on 2 threads, the rest 0.95-1.02x;
      see tile.h).
    - ``crowd_staged`` = 1, on AMD with an L1d of 48 KiB or more 0: transposes in cache
      whose source rows are a multiple of 4 KiB apart (one L1 set) go through the staging
      tile rather than tile in place (on the Zen 3's 8-way L1 1.04-1.85x faster, warm). On
      the Zen 5, 4 MiB, cold, in place: float32 and float64 2-D, NCHW -> NHWC of 32 x 32
      planes and NHWC -> NCHW with 1024 channels 1.5-2.3x faster on 1 and 2 threads; warm
      float32 0.87-1.3x, float64 0.73-1.12x. Intel (48 KiB L1d) unmeasured cold: it keeps
      the rule, which its streaming threshold leaves only copies inside its L2s.
    - ``down_from`` = 8: streamed staged transposes whose strips hold at least this many
      blocks run down each column of blocks first, so the source's rows continue from block
      to block (64 MiB cold: on the Xeon 2-D float32 1.04-1.23x on 1 thread, 1.09x on 2;
      uint8 1.06-1.19x, 1.20x; column-major float32 0.97-1.11x, 1.09x; on the Zen 5 2-D
      uint8 1.05-1.1x on 1 thread, 1.1-1.33x on 2, column-major float32 1.03-1.16x, 2-D
      float32 0.94-1.06x, float64 and uint8 column-major 0.96-1.04x; strips of 3-4 blocks
      run down lost up to 0.86x on the Xeon).
    - ``rows_tile_bytes`` = 0, with an L1d of 48 KiB or more 32 KiB: streamed tiles of whole
      destination rows longer than a line stage this much (in the L1) where each source row
      still gives a block 1 KiB (64 MiB cold, against the 128 KiB tile: on the Xeon float32
      NCHW32 and NCDHW, 128-byte pixels, 1.07-1.17x on 1 and 2 threads, float64 1.03-1.22x,
      4 MiB 1.04-1.19x; on the Zen 5 float32 1.01-1.06x, float64 1.05-1.11x; runs of 512
      bytes lost 0.84-0.88x on the Xeon, so rows that long keep the tile).
    - ``rows_big_bytes`` = 0, on an L2 of 1 MiB or more L2 / 2 within 128-512 KiB: streamed
      tiles of whole destination rows from 64 or more source rows (NCHW -> NHWC with 64-256
      channels) stage this much where it is more than ``stage_bytes``, so that each plane
      gives a block a longer run (64 MiB cold, 512 KiB against 128 KiB: on the Xeon, 2 MiB
      L2, uint8 and uint16 with 256 channels 1.27-1.40x on 1 and 2 threads, uint16 with 64
      1.17-1.25x, uint8 and float64 with 64 1.06-1.18x, float32 with 64 0.98-1.03x, 512 MiB
      1.0-1.34x; on the Zen 5, 1 MiB L2, uint8 and uint16 with 256 channels 1.17-1.31x,
      float64 with 64 1.16-1.35x, uint16 with 64 1.05-1.13x, uint8 with 64 1.02-1.09x; there
      512 KiB against 256 KiB 1.03-1.2x on 256 channels and float64, level on the rest).
      Smaller L2s (unmeasured) keep the staging tile.
    - ``deint_narrow`` = 0, on Intel 1: pixels of 2 items of 2 or 4 bytes, or of 4 of 2
      bytes, deinterleave (HWC -> CHW, NHWC -> NCHW) with the 16-byte kernels where the AVX2
      ones would not stream (on the Xeon 1.11-1.63x warm, 1.14-1.31x cold; level where the
      AVX2 ones stream). On the Zen 5, cold, pairs 0.93-1.01x, uint16 quads 0.85-0.93x: AMD
      and unknown vendors keep the AVX2 kernels.
    - ``deint_alias_nt`` = 0, on Intel and recent AMD 1: streamed deinterleaves
      (HWC -> CHW) stream planes a multiple of 2 KiB apart too (on the Zen 3 those took
      1.1-1.35x the time of ordinary stores; on the Zen 5, cold, 1 and 2 threads, 2048^2
      and 1080 x 1920 planes: float32 with 2 and 3 channels, uint16 with 2-4, uint8 with 4
      1.18-1.47x faster, the rest level, as cv2.split streams them; on the Zen 4, the same
      planes 1.29-1.58x faster); on Intel too (on the Xeon, 4 MiB cold, 1080 x 1920 float32
      HWC -> CHW 1.26x faster on 1 thread, 1.21x on 2; the other images level).
    - ``pix32_plain`` = 0, on AMD with an L1d of 48 KiB or more 1: streamed 8-bit NCHW ->
      NCHW32 over planes that spread over the L1 sets writes its pixels with ordinary
      stores (on the Zen 5, 64 MiB, planes of 362^2-724^2: 1.0-2.9x faster on 1 and 2
      threads; planes of 256^2 and 512^2, which crowd a set, keep streaming, 0.67-1.03x
      otherwise). On the Zen 4 (8-way L1d) level, 0.96-1.06x: it keeps streaming. Intel and
      the Zen 3 unmeasured.
    - ``sweep_ahead`` = 0, on AMD with an L1d of 48 KiB or more 8: streamed tiles (the
      copy's and the float32 -> float16 / bfloat16 conversions') fetch each source row this
      many lines ahead of their micro-tiles, at most a quarter of a block's rows (on the Zen
      5, 64 MiB cold, 1 and 2 threads: NCHW -> NHWC with 64 and 256 channels 1.03-1.2x,
      float32 -> float16 NCHW -> NHWC 1.11-1.28x, float32 NCHW32 and NCDHW 1.05-1.13x; the
      rest level; 16 lines ahead lost up to 0.75x on bytes, 4 lost 0.96x on the
      conversion). On the Zen 4 (8-way L1d), 64 MiB cold, mixed (0.92-1.08x, bytes behind):
      not taken. On the Xeon, 4 MiB cold, 0.94-1.06x (bytes with 64 channels behind): not
      taken. The Zen 3 unmeasured.
    - ``pixels_nt_bytes`` = -1 (as ``nt_bytes``), on recent AMD L2 / 4 within 64 KiB-1 MiB
      (Intel: L2 / 8):
      copies between a few planes and dense pixels (HWC <-> CHW, the interleave and
      deinterleave kernels) stream from this footprint, as OpenCV's split and merge stream
      every aligned destination (on the Zen 5, 112^2-1080 x 1920 images of uint8 and
      float32, split and merge, against ordinary stores: cold 1.13-1.56x faster, a warm
      source into a cold destination 1.2-1.63x, 1 and 2 threads; a warm pair of buffers
      reused in a loop 0.45-0.82x; on the Zen 4, cold, the same images 1.2-1.65x with the
      other recent-AMD knobs). On Intel from L2 / 8 within the same bounds (on the Xeon's 2
      MiB L2, 256 KiB: cold, 224 x 224 x 3 images, uint8 merge 1.45x faster on 1 and 2
      threads, uint8 split 1.14-1.19x, float32 merge 1.43x; 512 KiB, the L2 / 4, left the
      uint8 image's 300 KB unstreamed; 64 KiB level with 256).
    - ``stitch_tile_rows`` = 1024 (the buffer's most), on Intel 128: the most rows of a
      streamed transpose's stitched tile (destination rows that do not share a line offset,
      e.g. NHWC -> NCHW planes of 23 x 23 pixels), which else takes the staging tile's room
      (256 rows of 512 bytes). On the Xeon, cold, NHWC -> NCHW float32 with 256 channels
      1.21x faster at 4 MiB on 2 threads (0.47 -> 0.57 memcpy), 1.0-1.03x on 1 thread; at
      64 MiB 0.98-1.08x (float32 with 64 channels 1.08x on 1 thread, NCHW -> NHWC with 256
      channels 1.04-1.06x); the rest level; 64 rows lost NHWC -> NCHW with 64 channels (0.95x). AMD
      unmeasured: it keeps the tile's room.
    - ``nt_short_runs_from`` = -1 (never), on Intel 32 MiB: streamed transposes of line-aligned
      destination rows in copies this large write runs of 128 bytes a tile row, not 256,
      and read source runs twice as long (on the Xeon, cold, 64 MiB: 2-D and column-major
      transposes 1.05-1.16x on 1 and 2 threads, NHWC -> NCHW float64 with 256 channels
      1.15-1.24x, the rest level; 32 MiB 0.97-1.32x, uint8 NHWC -> NCHW with 16 channels
      0.93-0.95x; 4-16 MiB mixed, float64 2-D 0.77x at 8 MiB). On the Zen 3 (64 MiB, warm)
      the 256-byte runs had won against 128 for floats (``_copy._nt_run``): AMD keeps them.
    - ``nt_stitch_bytes`` = 512, on Intel 256: a stitched streamed tile's destination run a
      row for items of 2 bytes and more (bytes: half, at least ``nt_run_bytes``: 256). On the
      Xeon, cold, float32 NHWC -> NCHW with 64 channels 1.15x at 4 MiB on 2 threads, 1.07x on
      1, 1.17-1.18x at 64 MiB on 1 and 2; 256 channels 0.99-1.06x; float64 and the rest
      level. AMD unmeasured keeps 512.
    - ``chunks_per_thread`` = 8, on Intel 4: a team's blocks are claimed in about this many
      runs a thread (``_copy.run_team``: a thread held up by another process claims fewer).
      On the Xeon, cold, 2 threads, 4 against 8: 4 MiB NHWC -> NCHW with 16-256 channels,
      float32 and uint8, 1.04-1.16x, NCDHW 1.05-1.06x, the rest 0.97-1.06x; 64 MiB
      0.94-1.05x; conversions into float16 and from uint8 at 4 MiB 0.92-1.09x. AMD
      unmeasured keeps 8.
    - ``fill_nt_bytes`` = -1 (as ``nt_bytes``), on recent AMD ``llc_bytes``: fills (copies
      that read at most an eighth of what they write: broadcast sources) stream from this
      footprint. On the Zen 5, broadcast -> packed of 4 and 8 MiB
      streamed from ``nt_bytes`` against ordinary stores: cold 0.95-1.35x on 1 thread,
      1.05-1.12x on 2; warm (one destination in a loop, which the L3 keeps) 0.22-0.39x. On
      Intel fills stream from ``nt_bytes`` (cold level with ordinary stores on the Xeon).
    - ``stage_bytes`` = L2 / 4, 32-128 KiB (the copy's staging tile; on the Xeon 64 KiB was
      level; 512 KiB lost on rows of 1 KiB), for copies of ``stage_big_from`` = 8 MiB
      and more, or of half ``nt_bytes`` where that is less (every streamed copy: on the Xeon
      streamed 4 MiB copies through the 16 KiB tile of smaller ones took 1.2-1.8x the time
      of 128 KiB on 2-D transposes, NHWC -> NCHW and NCHW32, cold, 1 and 2 threads).
    - ``tile_area_bytes`` = L2 / 8, 16-256 KiB (the most of each operand an in-place
      transpose tile holds: 64 KiB measured best on a 512 KiB L2, 128 and 256 KiB no better;
      on the Xeon's 2 MiB L2, 64, 128 and 256 KiB level, 1 MiB copies, 1 and 2 threads).
    - ``convert_tile_bytes`` = L2 / 4, 32-512 KiB (a conversion's staged tile beside the
      other operands in L2; on the Xeon 128-512 KiB level).
    - ``nibble_box_bytes`` = L2 / 4, 32-128 KiB (a 4-bit conversion's box: on a 512 KiB L2 a
      256 KiB box took 1.7x the time of a 128 KiB one; on the Xeon's 2 MiB L2, 128 KiB
      against 512 KiB: float32 -> int4 NCHW64 1.52-1.54x faster, back 1.16-1.23x).
    - ``convert_tiled_bytes`` = L2 / 2, 64-256 KiB (the one-pass conversion tiles: on a 512
      KiB L2, 256 KiB took 0.9x the time of 128 KiB; on the Xeon's 2 MiB L2, 256 KiB against
      1 MiB tiles, streamed float32 -> float16 / bfloat16 NCHW -> NHWC of 37 MiB: warm
      1.2-1.25x faster, cold 1.12x on 1 thread and level on 2; level in cache).
    - ``shift_buffer_bytes`` = L2 / 2, 64 KiB - 1 MiB (the overlap routes' buffer).
    """
    l2 = caches.l2 or FALLBACK.l2
    assert l2 is not None and FALLBACK.l3 is not None
    llc = _clamp(caches.l3 or caches.l2 or FALLBACK.l3, 4 * MiB, 256 * MiB)
    intel = caches.vendor == "GenuineIntel"
    # 48 KiB L1d (Intel since Ice Lake, AMD Zen 5): 12 ways, measured on both vendors
    twelve_way_l1 = (caches.l1d or 0) >= 48 * KiB
    # AMD since Zen 4: a 1 MiB L2 a core (Zen 4, Zen 5), or the 48 KiB L1d (Zen 5); the Zen 3
    # (512 KiB L2, 32 KiB L1d) keeps the rules measured on it. Unknown vendors go with AMD.
    recent_amd = not intel and (twelve_way_l1 or l2 >= 1 * MiB)
    # streaming stores from twice the L2 where measured cold (Intel; AMD Zen 4 and Zen 5);
    # from the L3 on the Zen 3 (measured warm only)
    nt = _clamp(2 * l2, 4 * MiB, llc) if intel or recent_amd else llc
    return {
        "llc_bytes": llc,
        "nt_bytes": nt,
        "stage_big_from": min(8 * MiB, nt // 2),
        "fetch_next": 1 if intel else 16,
        "vector_rows_in_place": 0 if intel else 8 if recent_amd else 31,
        "nt_pages": 1 if intel else 0,
        "crowd_rows": 8 if twelve_way_l1 else 4,
        "crowd_staged": 1 if intel or not twelve_way_l1 else 0,
        "down_from": 8,
        "rows_tile_bytes": 32 * KiB if twelve_way_l1 else 0,
        "rows_big_bytes": _clamp(l2 // 2, 128 * KiB, 512 * KiB) if l2 >= 1 * MiB else 0,
        "deint_narrow": 1 if intel else 0,
        "deint_alias_nt": 1 if intel or recent_amd else 0,
        "pix32_plain": 1 if twelve_way_l1 and not intel else 0,
        "sweep_ahead": 8 if twelve_way_l1 and not intel else 0,
        "pixels_nt_bytes": (_clamp(l2 // (8 if intel else 4), 64 * KiB, 1 * MiB)
                            if intel or recent_amd else -1),
        "stitch_tile_rows": 128 if intel else 1024,
        "nt_short_runs_from": 32 * MiB if intel else -1,
        "chunks_per_thread": 4 if intel else 8,
        "nt_stitch_bytes": 256 if intel else 512,
        "fill_nt_bytes": llc if recent_amd else -1,
        "stage_bytes": _clamp(l2 // 4, 32 * KiB, 128 * KiB),
        "tile_area_bytes": _clamp(l2 // 8, 16 * KiB, 256 * KiB),
        "convert_tile_bytes": _clamp(l2 // 4, 32 * KiB, 512 * KiB),
        "nibble_box_bytes": _clamp(l2 // 4, 32 * KiB, 128 * KiB),
        "convert_tiled_bytes": _clamp(l2 // 2, 64 * KiB, 256 * KiB),
        "shift_buffer_bytes": _clamp(l2 // 2, 64 * KiB, 1 * MiB),
    }
