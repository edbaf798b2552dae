"""layout_of / describe / view through DLPack, fed by the hand-made ctypes producer.

The producer (``tests/dlpack_producer.py``) shares no code with strided, so it can hand over
capsules no library would make: NULL strides, a byte_offset, the read-only flag, legacy
capsules, malformed fields. Malformed capsules are read in a subprocess that must survive.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import types
import weakref
from pathlib import Path

import numpy as np
import pytest

import strided as st
from strided.interop import describe

try:
    import dlpack_producer as dp
except ImportError as exc:  # numpy < 2.1 cannot lend the producer its C callbacks
    pytest.skip(str(exc), allow_module_level=True)

TESTS = Path(__file__).resolve().parents[1]  # tests/, where dlpack_producer.py lives


def _namespace(name: str = "fake_xp", refuse=None, calls=None) -> types.SimpleNamespace:
    """An array namespace whose from_dlpack is numpy's, optionally refusing some layouts."""

    def from_dlpack(x):
        if calls is not None and hasattr(x, "_layout"):
            calls.append(x._layout)
        if refuse is not None and hasattr(x, "_layout") and refuse(x._layout):
            raise BufferError(f"{name} refuses strides {x._layout.strides}")
        return np.from_dlpack(x)

    return types.SimpleNamespace(__name__=name, from_dlpack=from_dlpack,
                                 asarray=lambda a, copy=None: np.array(a, copy=copy))


class NamespacedProducer(dp.Producer):
    """The hand-made producer, plus an array namespace so that view() can build results."""

    namespace = _namespace()

    def __array_namespace__(self):
        return self.namespace


class PreVersionProducer(dp.Producer):
    """A producer from before DLPack 1.0: ``__dlpack__`` knows no ``max_version``."""

    def __dlpack__(self, stream=None):  # type: ignore[override]
        return super().__dlpack__(stream=stream)


def _buffer(n=24, dtype=np.float32):
    return np.arange(n, dtype=dtype)


# ---- reading ---------------------------------------------------------------------------------

@pytest.mark.parametrize("versioned", [None, False, True])
def test_null_strides_mean_packed_row_major(versioned):
    buf = _buffer()
    p = dp.Producer(buf, (2, 3, 4), None, versioned=versioned)
    record = describe(p)
    assert record.layout == st.Layout((2, 3, 4), (12, 4, 1), itemsize=4)
    assert record.ptr == buf.__array_interface__["data"][0]
    assert record.library == "dlpack" and record.device == (1, 0)
    assert record.dtype == (2, 32, 1)


def test_versioned_producer_is_asked_for_a_versioned_capsule():
    p = dp.Producer(_buffer(), (24,))
    describe(p)
    assert p.requests[-1]["max_version"] == (1, 1)


def test_producer_without_max_version_gives_legacy():
    buf = _buffer()
    p = PreVersionProducer(buf, (4, 6), (1, 4))
    assert st.layout_of(p) == st.Layout((4, 6), (1, 4), itemsize=4)
    assert describe(p).writeable


@pytest.mark.parametrize("versioned", [False, True])
def test_byte_offset_moves_the_first_element(versioned):
    buf = _buffer()
    p = NamespacedProducer(buf, (2, 3), (6, 2), byte_offset=5 * 4, versioned=versioned)
    record = describe(p)
    assert record.ptr == buf.__array_interface__["data"][0] + 20
    assert record.layout == st.Layout((2, 3), (6, 2), itemsize=4)
    out = st.view(p, st.Layout((3, 2), (2, 6), itemsize=4))
    # element (i, j) is at buffer index 5 + 2 i + 6 j
    expected = np.array([[buf[5 + 2 * i + 6 * j] for j in range(2)] for i in range(3)])
    np.testing.assert_array_equal(out, expected)
    assert np.shares_memory(out, buf)


def test_read_only_flag_is_read_and_kept():
    buf = _buffer()
    p = NamespacedProducer(buf, (24,), (1,), readonly=True, versioned=True)
    record = describe(p)
    assert record.writeable is False
    out = st.view(p, st.Layout((2, 2), (12, 1), itemsize=4))
    assert not out.flags.writeable
    np.testing.assert_array_equal(out, [[0, 1], [12, 13]])


def test_read_only_memory_is_not_exported_to_a_legacy_consumer():
    buf = _buffer()
    p = NamespacedProducer(buf, (24,), (1,), readonly=True, versioned=True)
    legacy_xp = types.SimpleNamespace(
        __name__="legacy_xp", from_dlpack=lambda x: np.from_dlpack(_LegacyOnly(x)),
        asarray=lambda a, copy=None: np.array(a, copy=copy))
    p.namespace = legacy_xp
    with pytest.raises(ValueError, match="legacy DLPack capsule"):
        st.view(p, st.Layout((4,), itemsize=4), copy=False)
    out = st.view(p, st.Layout((4,), (2,), itemsize=4))     # copy=None: an independent copy
    np.testing.assert_array_equal(out, [0, 2, 4, 6])
    assert not np.shares_memory(out, buf)


class _LegacyOnly:
    """Asks the wrapped object for a legacy capsule, as a pre-1.0 consumer does."""

    def __init__(self, inner):
        self.inner = inner

    def __dlpack__(self, **kwargs):
        return self.inner.__dlpack__()

    def __dlpack_device__(self):
        return self.inner.__dlpack_device__()


@pytest.mark.parametrize(
    "dtype, itemsize",
    [((0, 8, 1), 1), ((1, 16, 1), 2), ((2, 64, 1), 8), ((4, 16, 1), 2), ((5, 128, 1), 16),
     ((6, 8, 1), 1), ((2, 32, 4), 16)],
)
def test_dtype_gives_itemsize(dtype, itemsize):
    buf = np.zeros(64, np.uint8)
    p = dp.Producer(buf, (2,), (1,), dtype=dtype)
    record = describe(p)
    assert record.layout.itemsize == itemsize
    assert record.dtype == dtype


def test_sub_byte_dtype_is_refused():
    p = dp.Producer(np.zeros(8, np.uint8), (4,), (1,), dtype=(1, 4, 1))
    with pytest.raises(ValueError, match="several elements per byte"):
        describe(p)
    gc.collect()
    assert p.deleted == p.exported


def test_record_keeps_producer_memory_until_dropped():
    buf = _buffer()
    p = dp.Producer(buf, (24,))
    record = describe(p)
    gc.collect()
    assert p.exported == 1 and p.deleted == 0
    del record
    gc.collect()
    assert p.deleted == 1


def test_view_keeps_producer_alive_until_it_dies():
    p = NamespacedProducer(_buffer(), (24,))
    alive = weakref.ref(p)
    out = st.view(p, st.Layout((3,), (5,), offset=2, itemsize=4))
    del p
    gc.collect()
    assert alive() is not None
    np.testing.assert_array_equal(out, [2, 7, 12])
    producer = alive()
    assert producer.deleted < producer.exported
    del out, producer
    gc.collect()
    assert alive() is None, "the view's capsule deleter must release base"


def test_view_writes_through_to_producer_memory():
    buf = _buffer()
    p = NamespacedProducer(buf, (4, 6))
    out = st.view(p, st.Layout((6, 4), (1, 6), itemsize=4))     # the transpose
    out[5, 3] = -1
    assert buf[3 * 6 + 5] == -1


def test_refused_strides_copy_or_raise():
    buf = _buffer()
    p = NamespacedProducer(buf, (24,))
    p.namespace = _namespace("picky_xp", refuse=lambda L: not L.is_contiguous)
    L = st.Layout((3, 2), (1, 3), offset=4, itemsize=4)
    with pytest.raises(ValueError, match="picky_xp cannot take this view without a copy"):
        st.view(p, L, copy=False)
    out = st.view(p, L)
    np.testing.assert_array_equal(out, [[4, 7], [5, 8], [6, 9]])
    assert not np.shares_memory(out, buf)
    contiguous = st.view(p, st.Layout((2, 3), offset=1, itemsize=4), copy=False)
    assert np.shares_memory(contiguous, buf)


def test_torch_like_namespace_never_receives_negative_strides():
    calls = []
    p = NamespacedProducer(_buffer(), (24,))
    p.namespace = _namespace("torch_compat_xp", calls=calls)
    out = st.view(p, st.Layout((3,), (-2,), offset=10, itemsize=4))
    np.testing.assert_array_equal(out, [10, 8, 6])
    assert all(s >= 0 for L in calls for s in L.strides)
    with pytest.raises(ValueError, match="torch cannot hold negative strides"):
        st.view(p, st.Layout((3,), (-2,), offset=10, itemsize=4), copy=False)


def test_device_memory_is_never_read_by_the_host():
    # A CUDA tensor at a fake address: describing and checking it touches no data.
    p = NamespacedProducer(np.zeros(1, np.float32), (1000,), (1,), device=(2, 0))
    record = describe(p)
    assert record.device == (2, 0) and record.layout.sizes == (1000,)
    with pytest.raises(ValueError, match="outside base's buffer"):
        st.view(p, st.Layout((1001,), itemsize=4))
    # numpy refuses device memory; strided cannot copy it from the host either.
    with pytest.raises(ValueError, match="device"):
        st.view(p, st.Layout((10,), (3,), itemsize=4))


def test_copy_true_is_independent():
    buf = _buffer()
    p = NamespacedProducer(buf, (24,))
    out = st.view(p, st.Layout((2, 3), (3, 1), itemsize=4), copy=True)
    out[0, 0] = 99
    assert buf[0] == 0


@pytest.mark.parametrize(
    "layout",
    [st.Layout((5,), offset=20, itemsize=4), st.Layout((3,), (-1,), offset=1, itemsize=4),
     st.Layout((2,), offset=0, itemsize=8), st.Layout((0,), offset=26, itemsize=4)],
)
def test_out_of_bounds_views_are_refused(layout):
    p = NamespacedProducer(_buffer(), (24,))
    with pytest.raises(ValueError):
        st.view(p, layout)


def test_without_namespace_view_is_a_type_error():
    p = dp.Producer(_buffer(), (24,))
    with pytest.raises(TypeError, match="__array_namespace__"):
        st.view(p, st.Layout((2,), itemsize=4))


# ---- malformed capsules: read in a subprocess that must survive -------------------------------

MALFORMED = {
    "ndim_negative": ("dict(ndim=-1)", "ndim -1"),
    "ndim_too_large": ("dict(ndim=100)", "ndim 100"),
    "shape_null": ("dict(shape_null=True)", "NULL shape"),
    "size_negative": ("dict(shape=(2, -3))", "shape[1] = -3"),
    "zero_bits": ("dict(dtype=(2, 0, 1))", "zero-width"),
    "zero_lanes": ("dict(dtype=(2, 32, 0))", "zero-width"),
    "major_version_2": ("dict(versioned=True, version=(2, 0))", "version 2.0"),
    "sizes_overflow": ("dict(shape=(2**40, 2**40))", "2**63"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_capsules_are_value_errors(case):
    kwargs, message = MALFORMED[case]
    code = textwrap.dedent(f"""
        import gc, sys
        sys.path.insert(0, {str(TESTS)!r})
        import numpy as np
        import dlpack_producer as dp
        from strided.interop import describe
        kwargs = dict(shape=(2, 3), strides=None)
        kwargs.update({kwargs})
        buf = np.zeros(64, np.float32)
        p = dp.Producer(buf, kwargs.pop("shape"), kwargs.pop("strides"), **kwargs)
        try:
            describe(p)
        except (ValueError, OverflowError) as exc:
            print(type(exc).__name__, exc)
        else:
            print("accepted")
        gc.collect()
        print("released", p.deleted == p.exported, dp.outstanding())
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.strip().splitlines()
    assert message in first, first
    assert first.split()[0] in ("ValueError", "OverflowError")
    assert second == "released True 0", "every capsule must be freed, consumed or not"


# ---- a real library that refuses some strides: jax (where installed) --------------------------

JAX_LAYOUTS = [
    st.Layout((3, 4), itemsize=4),                      # packed: jax takes it
    st.Layout((4, 3), (1, 4), itemsize=4),              # a transpose: jax takes it
    st.Layout((2, 3), (4, 1), offset=1, itemsize=4),    # padded: jax refuses
    st.Layout((3,), (-2,), offset=10, itemsize=4),      # negative: jax refuses
    st.Layout((2, 3), (0, 1), itemsize=4),              # broadcast: jax refuses
]


@pytest.mark.parametrize("layout", JAX_LAYOUTS, ids=lambda L: str(L.strides))
def test_jax_views_or_copies_per_copy_argument(layout):
    jnp = pytest.importorskip("jax.numpy")
    values = np.arange(12, dtype=np.float32)
    base = jnp.asarray(values)
    expected = np.array([values[layout.offset_of(i)] for i in np.ndindex(*layout.sizes)])
    out = st.view(base, layout)
    assert type(out) is type(base)
    np.testing.assert_array_equal(np.asarray(out).reshape(-1), expected)
    try:
        strict = st.view(base, layout, copy=False)
    except ValueError as exc:
        assert "jax.numpy cannot take this view without a copy" in str(exc)
        assert not (layout.is_packed and layout.offset == 0)
    else:
        np.testing.assert_array_equal(np.asarray(strict).reshape(-1), expected)
