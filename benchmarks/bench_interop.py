"""Per-call cost of strided's interop (layout_of, view, copyto) next to each library's own call.

Usage::

    python benchmarks/bench_interop.py [--repeat N] [--sample-ms MS] [--markdown]

Each row times one strided call and the closest call of the array's own library, paired and
alternating in one process (in balanced orders), and reports the medians
in microseconds and the median of the paired ratios ``own / strided`` (above 1: strided is
faster). Before timing, both calls of a row run once and their results are compared (the same
elements, the same layout, the same bytes copied); a difference stops the benchmark.

- ``layout_of``: against reading the library's own description of the layout (``.shape`` and
  ``.strides``; for DLPack libraries, which expose no strides, the library's own
  ``from_dlpack`` of the array, the same export-and-read round trip ``layout_of`` makes).
- ``view``: against ``np.lib.stride_tricks.as_strided``, ``torch.as_strided``, or the DLPack
  library's own strided slice or transpose giving the same elements (jax copies for the slice,
  and so does strided, as jax cannot hold those strides).
- ``copyto`` of 16 float32: against ``np.copyto(dst, src)`` and torch's ``dst.copy_(src)``.

strided does more than the baseline on the ``layout_of`` and ``view`` rows: it validates the
layout exactly and bounds-checks it against base's memory before building anything, so there a
ratio below 1 is the price of that check. Libraries that are not installed are skipped, and the
report says so. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import timeit
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from harness.report import (
    check_sampling,
    machine_facts,
    optional_module,
    paired_ratio,
    render_table,
    sample_alternating,
)

import strided as st

#: Elements of the small copies.
SMALL = 16
#: A (64, 64) float32 base and the view every library is asked for: every other row, every
#: other column from column 1 (``base[::2, 1::2]``): padded, with an offset.
PADDED = st.Layout((32, 32), (128, 2), offset=1, itemsize=4)
#: The transpose of a (64, 64) float32 base: a view DLPack libraries can take without a copy.
TRANSPOSED = st.Layout((64, 64), (1, 64), itemsize=4)


@dataclass(frozen=True)
class Row:
    """One strided call, the library's own call, and whether their results agree."""

    call: str
    ours: Callable[[], object]
    own_call: str
    theirs: Callable[[], object]
    agree: Callable[[Any, Any], bool]


def _same_values(a: Any, b: Any) -> bool:
    return bool(np.array_equal(np.asarray(a), np.asarray(b)))


def _same_byte_layout(layout: st.Layout, shape_strides: tuple[Any, Any]) -> bool:
    """numpy's shape and strides (bytes) describe ``layout``."""
    shape, strides = shape_strides
    return layout.sizes == tuple(shape) and layout.byte_strides == tuple(strides)


def _same_layout(layout: st.Layout, shape_strides: tuple[Any, Any]) -> bool:
    """torch's shape and strides (elements) describe ``layout``."""
    shape, strides = shape_strides
    return layout.sizes == tuple(shape) and layout.strides == tuple(strides)


def _dense_layout(layout: st.Layout, array: Any) -> bool:
    """``layout`` is the packed row-major float32 layout of ``array``'s shape."""
    return layout == st.Layout(tuple(array.shape), itemsize=4)


def _copies(dst_ours: Any, dst_theirs: Any, src: Any) -> Callable[[Any, Any], bool]:
    """Both destinations hold the source once each side has run."""
    return lambda _a, _b: _same_values(dst_ours, src) and _same_values(dst_theirs, src)


def _numpy_rows() -> list[Row]:
    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    as_strided = np.lib.stride_tricks.as_strided
    negative = st.Layout((32, 32), (-128, 2), offset=64 * 63, itemsize=4)
    src = np.arange(SMALL, dtype=np.float32)
    dst, dst_np = np.zeros_like(src), np.zeros_like(src)
    return [
        Row("layout_of(ndarray)", lambda: st.layout_of(a), "(a.shape, a.strides)",
            lambda: (a.shape, a.strides), _same_byte_layout),
        Row("view(ndarray, padded)", lambda: st.view(a, PADDED), "np as_strided",
            lambda: as_strided(a[0:, 1:], (32, 32), (512, 8)), _same_values),
        Row("view(ndarray, negative)", lambda: st.view(a, negative), "np as_strided",
            lambda: as_strided(a[::-1, :], (32, 32), (-512, 8)), _same_values),
        Row("view(bytearray)", lambda: st.view(bytearray(64), st.Layout((8, 4), (8, 2))),
            "np.frombuffer + as_strided",
            lambda: as_strided(np.frombuffer(bytearray(64), np.uint8), (8, 4), (8, 2)),
            _same_values),
        Row(f"copyto(ndarray, {SMALL} float32)", lambda: st.copyto(dst, src),
            "np.copyto(dst, src)", lambda: np.copyto(dst_np, src), _copies(dst, dst_np, src)),
    ]


def _torch_rows(torch: Any) -> list[Row]:
    t = torch.arange(64 * 64, dtype=torch.float32).reshape(64, 64)
    src = torch.arange(SMALL, dtype=torch.float32)
    dst, dst_t = torch.zeros(SMALL), torch.zeros(SMALL)
    return [
        Row("layout_of(tensor)", lambda: st.layout_of(t), "(t.shape, t.stride())",
            lambda: (t.shape, t.stride()), _same_layout),
        Row("view(tensor, padded)", lambda: st.view(t, PADDED), "torch.as_strided",
            lambda: torch.as_strided(t, (32, 32), (128, 2), 1), _same_values),
        Row(f"copyto(tensor, {SMALL} float32)", lambda: st.copyto(dst, src), "dst.copy_(src)",
            lambda: dst_t.copy_(src), _copies(dst, dst_t, src)),
    ]


def _jax_rows(jnp: Any) -> list[Row]:
    x = jnp.arange(64 * 64, dtype=jnp.float32).reshape(64, 64)
    # jax dispatches asynchronously: both sides wait for their result
    return [
        Row("layout_of(jax)", lambda: st.layout_of(x), "jnp.from_dlpack(x)",
            lambda: jnp.from_dlpack(x).block_until_ready(), _dense_layout),
        Row("view(jax, transposed)", lambda: st.view(x, TRANSPOSED).block_until_ready(),
            "x.T", lambda: x.T.block_until_ready(), _same_values),
        Row("view(jax, padded: copies)", lambda: st.view(x, PADDED).block_until_ready(),
            "x[::2, 1::2]", lambda: x[::2, 1::2].block_until_ready(), _same_values),
    ]


def _array_api_strict_rows(xp: Any) -> list[Row]:
    x = xp.asarray(np.arange(64 * 64, dtype=np.float32).reshape(64, 64))
    return [
        Row("layout_of(array_api_strict)", lambda: st.layout_of(x), "xp.from_dlpack(x)",
            lambda: xp.from_dlpack(x), _dense_layout),
        Row("view(array_api_strict, padded)", lambda: st.view(x, PADDED), "x[::2, 1::2]",
            lambda: x[::2, 1::2], _same_values),
    ]


#: (label, module to import, rows for it); numpy is always there.
LIBRARIES: tuple[tuple[str, str, Callable[[Any], list[Row]]], ...] = (
    ("torch", "torch", _torch_rows),
    ("jax", "jax.numpy", _jax_rows),
    ("array_api_strict", "array_api_strict", _array_api_strict_rows),
)


def rows() -> tuple[list[Row], list[str]]:
    """Every row of the installed libraries, and a note per library left out."""
    out = _numpy_rows()
    skipped = []
    for label, module_name, make in LIBRARIES:
        module = optional_module(module_name)
        if module is None:
            skipped.append(f"{label}: not installed, its rows are skipped")
        else:
            out += make(module)
    return out, skipped


def _check(row: Row) -> None:
    """Run both calls once (imports, caches) and compare their results."""
    ours, theirs = row.ours(), row.theirs()
    if not row.agree(ours, theirs):
        raise AssertionError(f"{row.call} and {row.own_call} give different results")


def time_row(row: Row, repeat: int, sample_s: float) -> tuple[float, float, float]:
    """Median seconds per call of strided and of the library, and the median paired ratio."""
    _check(row)
    timers = {"strided": timeit.Timer(row.ours), "own": timeit.Timer(row.theirs)}
    times = sample_alternating(timers, repeat=repeat, sample_s=sample_s)
    return (statistics.median(times["strided"]), statistics.median(times["own"]),
            paired_ratio(times["own"], times["strided"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="paired samples (default 15)")
    parser.add_argument("--sample-ms", type=float, default=20.0, help="ms per sample")
    parser.add_argument("--markdown", action="store_true", help="print a pipe table")
    args = parser.parse_args(argv)
    check_sampling(parser, args.repeat, args.sample_ms)
    table = []
    all_rows, skipped = rows()
    for row in all_rows:
        print(f"  {row.call}", file=sys.stderr, flush=True)
        ours, theirs, ratio = time_row(row, args.repeat, args.sample_ms / 1000)
        table.append([row.call, f"{ours * 1e6:.2f}", row.own_call, f"{theirs * 1e6:.2f}",
                      f"{ratio:.2f}x"])
    header = ["strided call", "strided us", "library's own call", "own us", "own/strided"]
    print("\n".join(machine_facts()))
    print(f"{args.repeat} paired samples of ~{args.sample_ms:g} ms, alternating; medians per "
          f"call; own/strided = median of the paired ratios (above 1: strided is faster); "
          f"results compared before timing")
    for note in skipped:
        print(note)
    print(render_table(header, table, {1, 3, 4}, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
