"""Validate the hand-made DLPack producer (``dlpack_producer``) against independent consumers.

``numpy.from_dlpack`` is the in-process consumer; ``torch.from_dlpack`` runs in subprocesses
(a consumer fed a bad capsule may crash the interpreter) and is skipped without torch. These
tests exercise only the producer: nothing here imports ``strided``.
"""

from __future__ import annotations

import ctypes
import gc
import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hst

try:
    import dlpack_producer as dp
except ImportError as exc:  # numpy < 2.1: no versioned DLPack export to borrow callbacks from
    pytest.skip(str(exc), allow_module_level=True)

HERE = Path(__file__).resolve().parents[1]  # tests/, where dlpack_producer.py lives


class _Fixed:
    """Hands a consumer one given capsule (numpy's from_dlpack only takes exporters)."""

    def __init__(self, cap, device=(dp.kDLCPU, 0)):
        self.cap = cap
        self.device = device

    def __dlpack__(self, **kwargs):
        """The capsule given at construction, whatever the consumer asks for."""
        return self.cap

    def __dlpack_device__(self):
        """The device given at construction."""
        return self.device


@pytest.fixture
def unraisable(monkeypatch):
    """Collect unraisable exceptions (e.g. from a capsule destructor) instead of warning."""
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    return seen


def _collect():
    """Run the cyclic collector twice, so every dropped consumer array is really gone."""
    gc.collect()
    gc.collect()


def _same_data(arr, buf, byte_offset=0):
    """Whether ``arr`` starts ``byte_offset`` bytes into ``buf`` (no copy was made)."""
    return arr.__array_interface__["data"][0] == buf.ctypes.data + byte_offset


# --- the ABI layout -------------------------------------------------------------------------


@pytest.mark.skipif(ctypes.sizeof(ctypes.c_void_p) != 8, reason="offsets are for 64-bit ABIs")
def test_struct_layout_matches_dlpack_h():
    """Sizes and offsets are those of dlpack.h v1.1 on a 64-bit platform."""
    assert ctypes.sizeof(dp.DLPackVersion) == 8
    assert ctypes.sizeof(dp.DLDevice) == 8
    assert ctypes.sizeof(dp.DLDataType) == 4
    assert ctypes.sizeof(dp.DLTensor) == 48
    offsets = {name: getattr(dp.DLTensor, name).offset for name, _ in dp.DLTensor._fields_}
    assert offsets == {
        "data": 0,
        "device": 8,
        "ndim": 16,
        "dtype": 20,
        "shape": 24,
        "strides": 32,
        "byte_offset": 40,
    }
    assert ctypes.sizeof(dp.DLManagedTensor) == 64
    assert dp.DLManagedTensor.manager_ctx.offset == 48
    assert dp.DLManagedTensor.deleter.offset == 56
    assert ctypes.sizeof(dp.DLManagedTensorVersioned) == 80
    assert dp.DLManagedTensorVersioned.manager_ctx.offset == 8
    assert dp.DLManagedTensorVersioned.deleter.offset == 16
    assert dp.DLManagedTensorVersioned.flags.offset == 24
    assert dp.DLManagedTensorVersioned.dl_tensor.offset == 32


# --- what numpy sees ----------------------------------------------------------------------------


def test_null_strides_is_c_contiguous():
    """NULL strides: the consumer lays the tensor out C-contiguously, without copying."""
    buf = np.arange(24.0)
    producer = dp.Producer(buf, (2, 3, 4))
    assert dp.describe(producer.__dlpack__())["strides"] is None
    arr = np.from_dlpack(producer)
    np.testing.assert_array_equal(arr, buf.reshape(2, 3, 4))
    assert arr.flags.c_contiguous
    assert _same_data(arr, buf)


@pytest.mark.parametrize(
    ("size", "shape", "strides", "byte_offset", "expected"),
    [
        pytest.param(12, (3, 4), (4, 1), 0, lambda b: b.reshape(3, 4), id="c-order"),
        pytest.param(15, (3, 4), (5, 1), 0, lambda b: b.reshape(3, 5)[:, :4], id="padded"),
        pytest.param(12, (4, 3), (1, 4), 0, lambda b: b.reshape(3, 4).T, id="transposed"),
        pytest.param(12, (3, 2), (4, 2), 0, lambda b: b.reshape(3, 4)[:, ::2], id="step"),
        pytest.param(5, (5,), (-1,), 4 * 8, lambda b: b[::-1], id="reversed"),
        pytest.param(4, (3, 4), (0, 1), 0, lambda b: np.broadcast_to(b, (3, 4)), id="zero"),
    ],
)
def test_explicit_strides(size, shape, strides, byte_offset, expected):
    """Explicit strides (in elements) are honoured, including padded and transposed layouts."""
    buf = np.arange(size, dtype=np.float64)
    producer = dp.Producer(buf, shape, strides, byte_offset=byte_offset)
    arr = np.from_dlpack(producer)
    np.testing.assert_array_equal(arr, expected(buf))
    assert arr.strides == tuple(s * buf.itemsize for s in strides)
    assert _same_data(arr, buf, byte_offset)


@pytest.mark.parametrize("strides", [None, (1,)])
def test_byte_offset(strides):
    """A non-zero byte_offset moves the start of the tensor within the buffer."""
    buf = np.arange(10, dtype=np.int32)
    arr = np.from_dlpack(dp.Producer(buf, (4,), strides, byte_offset=8))
    np.testing.assert_array_equal(arr, buf[2:6])
    assert _same_data(arr, buf, 8)


def test_byte_offset_2d():
    """byte_offset combines with explicit strides."""
    buf = np.arange(20, dtype=np.int16)
    arr = np.from_dlpack(dp.Producer(buf, (3, 2), (5, 2), byte_offset=2 * 2))
    np.testing.assert_array_equal(arr, buf.reshape(4, 5)[:3, 2::2])


@given(
    dims=hst.lists(hst.tuples(hst.integers(0, 4), hst.integers(-6, 6)), min_size=0, max_size=4),
    dtype=hst.sampled_from(["i1", "u2", "f4", "f8", "c8"]),
)
def test_arbitrary_strided_views(dims, dtype):
    """Any in-bounds shape/strides/byte_offset reads the same elements as ``as_strided``."""
    shape = tuple(n for n, _ in dims)
    strides = tuple(s for _, s in dims)
    low = sum(min(0, (n - 1) * s) for n, s in dims if n)
    high = sum(max(0, (n - 1) * s) for n, s in dims if n)
    buf = np.arange(high - low + 1).astype(dtype)
    producer = dp.Producer(buf, shape, strides, byte_offset=-low * buf.itemsize)
    arr = np.from_dlpack(producer)
    expected = np.lib.stride_tricks.as_strided(
        buf[-low:], shape, tuple(s * buf.itemsize for s in strides)
    )
    assert arr.dtype == buf.dtype
    np.testing.assert_array_equal(arr, expected)


@pytest.mark.parametrize(
    "dtype",
    [
        "float16",
        "float32",
        "float64",
        "int8",
        "int16",
        "int64",
        "uint8",
        "uint16",
        "uint64",
        "complex64",
        "complex128",
        "bool",
    ],
)
def test_dtypes(dtype):
    """The default DLPack dtype derived from the buffer round-trips through numpy."""
    buf = (np.arange(6) % 3).astype(dtype)
    producer = dp.Producer(buf, (2, 3))
    arr = np.from_dlpack(producer)
    assert arr.dtype == buf.dtype
    np.testing.assert_array_equal(arr, buf.reshape(2, 3))


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [
        ("float32", (dp.kDLFloat, 32, 1)),
        ("int16", (dp.kDLInt, 16, 1)),
        ("uint8", (dp.kDLUInt, 8, 1)),
        ("complex64", (dp.kDLComplex, 64, 1)),
        ("bool", (dp.kDLBool, 8, 1)),
    ],
)
def test_default_dtype_codes(dtype, expected):
    """The (code, bits, lanes) derived from numpy dtypes follow dlpack.h."""
    assert dp.describe(dp.capsule(np.zeros(1, dtype), (1,)))["dtype"] == expected


def test_explicit_dtype_reinterprets_the_buffer():
    """``dtype=(code, bits, lanes)`` overrides the buffer's dtype."""
    buf = np.arange(4, dtype=np.float32).view(np.uint8)
    arr = np.from_dlpack(dp.Producer(buf, (4,), dtype=(dp.kDLFloat, 32, 1)))
    np.testing.assert_array_equal(arr, np.arange(4, dtype=np.float32))


def test_versioned_writeable_shares_memory():
    """A versioned capsule without the read-only flag gives a writeable view of the buffer."""
    buf = np.zeros(4)
    arr = np.from_dlpack(dp.Producer(buf, (4,)))
    assert arr.flags.writeable
    arr[1] = 5.0
    assert buf[1] == 5.0


def test_readonly_versioned():
    """The read-only flag of a versioned capsule gives a read-only array."""
    buf = np.arange(4.0)
    producer = dp.Producer(buf, (4,), readonly=True)
    assert dp.describe(producer.__dlpack__(max_version=(1, 0)))["flags"] == (
        dp.DLPACK_FLAG_BITMASK_READ_ONLY
    )
    arr = np.from_dlpack(producer)
    assert not arr.flags.writeable
    np.testing.assert_array_equal(arr, buf)


def test_legacy_capsule():
    """A forced legacy capsule (no version, no flags) is read by numpy, without copying."""
    buf = np.arange(6, dtype=np.int64)
    producer = dp.Producer(buf, (2, 3), versioned=False)
    info = dp.describe(producer.__dlpack__(max_version=(1, 0)))
    assert (info["name"], info["versioned"], info["flags"]) == ("dltensor", False, None)
    arr = np.from_dlpack(producer)
    np.testing.assert_array_equal(arr, buf.reshape(2, 3))
    assert _same_data(arr, buf)


@pytest.mark.parametrize(
    ("forced", "max_version", "name"),
    [
        (None, None, "dltensor"),
        (None, (0, 8), "dltensor"),
        (None, (1, 0), "dltensor_versioned"),
        (None, (2, 3), "dltensor_versioned"),
        (True, None, "dltensor_versioned"),
        (False, (1, 1), "dltensor"),
    ],
)
def test_capsule_kind_follows_consumer(forced, max_version, name):
    """``versioned=None`` follows ``max_version``; True/False force the kind."""
    producer = dp.Producer(np.zeros(1), (1,), versioned=forced)
    assert dp.capsule_name(producer.__dlpack__(max_version=max_version)) == name
    assert producer.requests[-1]["max_version"] == max_version


def test_describe_reports_odd_fields():
    """Every field is exported as given, odd values included."""
    buf = np.zeros(4, dtype=np.uint16)
    info = dp.describe(
        dp.capsule(
            buf,
            (2, 2),
            (2, 1),
            byte_offset=6,
            dtype=(dp.kDLBfloat, 16, 1),
            device=(2, 3),
            readonly=True,
            is_copied=True,
            versioned=True,
            version=(1, 7),
            ndim=5,
        )
    )
    assert info == {
        "name": "dltensor_versioned",
        "versioned": True,
        "version": (1, 7),
        "flags": dp.DLPACK_FLAG_BITMASK_READ_ONLY | dp.DLPACK_FLAG_BITMASK_IS_COPIED,
        "data": buf.ctypes.data,
        "device": (2, 3),
        "ndim": 5,
        "dtype": (dp.kDLBfloat, 16, 1),
        "shape": (2, 2, 1, 1, 1),  # padded up to ndim
        "strides": (2, 1, 0, 0, 0),
        "byte_offset": 6,
        "manager_ctx": info["manager_ctx"],
        "deleter": info["deleter"],
    }
    assert info["manager_ctx"] and info["deleter"]


@pytest.mark.parametrize("ndim", [-1, 0, 2**31 - 1])
def test_describe_ndim_and_null_shape(ndim):
    """``ndim`` overrides the field; ``shape_null`` gives a NULL shape pointer."""
    info = dp.describe(dp.capsule(np.zeros(4), (4,), ndim=ndim, shape_null=True))
    assert info["ndim"] == ndim
    assert info["shape"] is None
    assert info["strides"] is None


def test_producer_validates_its_own_inputs():
    """Only the buffer and a missing default dtype are checked; tensor fields are not."""
    with pytest.raises(ValueError, match="C-contiguous"):
        dp.Producer(np.zeros((4, 4))[:, ::2], (4, 2))
    with pytest.raises(ValueError, match="C-contiguous"):
        dp.Producer([1.0, 2.0], (2,))
    with pytest.raises(ValueError, match="no default DLPack dtype"):
        dp.Producer(np.zeros(2, "M8[s]"), (2,))
    with pytest.raises(ValueError, match="no default DLPack dtype"):
        dp.Producer(np.zeros(2, ">f8"), (2,))
    dp.Producer(np.zeros(2, ">f8"), (2,), dtype=(dp.kDLFloat, 64, 1))


# --- memory management -------------------------------------------------------------------------


def test_deleter_runs_once_per_export_after_consumers_die():
    """Consumed capsules are not deleted by their destructor; the consumer's arrays do it."""
    before = dp.outstanding()
    buf = np.arange(8.0)
    producer = dp.Producer(buf, (8,))
    arrays = [np.from_dlpack(producer) for _ in range(3)]
    _collect()
    assert (producer.exported, producer.deleted) == (3, 0)
    assert dp.outstanding() == before + 3
    del arrays[0]
    _collect()
    assert producer.deleted == 1
    arrays.clear()
    _collect()
    assert (producer.exported, producer.deleted) == (3, 3)
    assert dp.outstanding() == before


@pytest.mark.parametrize("versioned", [False, True])
def test_unconsumed_capsule_calls_deleter(versioned):
    """A capsule dropped on the floor (never consumed) calls the deleter itself."""
    before = dp.outstanding()
    producer = dp.Producer(np.zeros(3), (3,), versioned=versioned)
    cap = producer.__dlpack__()
    assert dp.capsule_name(cap) == ("dltensor_versioned" if versioned else "dltensor")
    assert (producer.exported, producer.deleted, dp.outstanding()) == (1, 0, before + 1)
    del cap
    _collect()
    assert (producer.exported, producer.deleted, dp.outstanding()) == (1, 1, before)


@pytest.mark.parametrize("versioned", [False, True])
def test_consumed_capsule_is_renamed_and_left_to_the_consumer(versioned):
    """Once renamed by the consumer, dropping the capsule does not call the deleter."""
    producer = dp.Producer(np.arange(3.0), (3,), versioned=versioned)
    cap = producer.__dlpack__()
    arr = np.from_dlpack(_Fixed(cap))
    prefix = "used_dltensor"
    assert dp.capsule_name(cap) == (prefix + "_versioned" if versioned else prefix)
    del cap
    _collect()
    assert producer.deleted == 0
    np.testing.assert_array_equal(arr, [0.0, 1.0, 2.0])
    del arr
    _collect()
    assert producer.deleted == 1


def test_exports_keep_the_buffer_alive():
    """The data stays valid after both the producer and the caller's buffer are dropped."""
    producer = dp.Producer(np.arange(5.0) * 2, (5,))
    arr = np.from_dlpack(producer)
    del producer
    _collect()
    junk = [np.full(5, -1.0) for _ in range(100)]  # would reuse freed memory
    np.testing.assert_array_equal(arr, [0.0, 2.0, 4.0, 6.0, 8.0])
    del junk


def test_raw_capsule_is_freed():
    """``capsule()`` exports are freed too when dropped unconsumed."""
    before = dp.outstanding()
    caps = [dp.capsule(np.zeros(2), (2,), versioned=v) for v in (None, False, True)]
    assert dp.outstanding() == before + 3
    del caps
    _collect()
    assert dp.outstanding() == before


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"device": (dp.kDLCUDA, 0)}, "device"),
        ({"dtype": (dp.kDLFloat, 64, 2)}, "lanes"),
        ({"dtype": (dp.kDLFloat, 8, 1)}, "dtype"),
        ({"ndim": 100}, "maxdims"),
        ({"version": (2, 0), "versioned": True}, "version"),
        ({"device": (dp.kDLCUDA, 0), "versioned": False}, "device"),
        ({"ndim": 100, "versioned": False}, "maxdims"),
    ],
)
def test_rejected_capsule_keeps_consumer_exception(kwargs, match, unraisable):
    """A consumer that rejects a capsule keeps its own exception, and the tensor is freed.

    numpy releases the rejected capsule with its exception already set: a Python-level
    capsule destructor would replace it with ``SystemError`` and leak the tensor.
    """
    before = dp.outstanding()
    producer = dp.Producer(np.zeros(4), (4,), **kwargs)
    # numpy's exception type for these varies between releases (RuntimeError, BufferError)
    with pytest.raises(Exception, match=match) as info:
        np.from_dlpack(producer)
    assert not isinstance(info.value, SystemError)
    _collect()
    assert (producer.exported, producer.deleted) == (1, 1)
    assert dp.outstanding() == before
    assert unraisable == []


# --- torch, in subprocesses ----------------------------------------------------------------------

needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch is not installed"
)


def _run(body: str) -> subprocess.CompletedProcess:
    """Run ``body`` in a fresh interpreter with ``dlpack_producer`` importable."""
    code = f"import sys\nsys.path.insert(0, {str(HERE)!r})\n" + textwrap.dedent(body)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )


@needs_torch
def test_torch_consumes_exports():
    """torch reads strided, legacy and versioned exports and calls every deleter."""
    result = _run(
        """
        import gc
        import numpy as np
        import torch
        import dlpack_producer as dp

        buf = np.arange(12, dtype=np.float32)
        producer = dp.Producer(buf, (4, 3), (1, 4))
        tensor = torch.from_dlpack(producer)
        assert producer.requests[0]["max_version"][0] >= 1, producer.requests
        assert torch.equal(tensor, torch.arange(12.0).reshape(3, 4).T), tensor
        assert tensor.data_ptr() == buf.ctypes.data
        assert (producer.exported, producer.deleted) == (1, 0)
        del tensor
        gc.collect()
        assert (producer.exported, producer.deleted) == (1, 1)

        for versioned in (False, True):
            cap = dp.capsule(buf, (2, 6), versioned=versioned)
            tensor = torch.from_dlpack(cap)
            assert dp.capsule_name(cap).startswith("used_"), dp.capsule_name(cap)
            assert torch.equal(tensor, torch.arange(12.0).reshape(2, 6))
            del cap, tensor
        gc.collect()
        assert dp.outstanding() == 0, dp.outstanding()
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


@needs_torch
def test_torch_rejection_keeps_its_exception():
    """torch's own error for a capsule it rejects (byte_offset != 0) survives the deleter."""
    result = _run(
        """
        import gc
        import numpy as np
        import torch
        import dlpack_producer as dp

        for versioned in (False, True):
            producer = dp.Producer(np.zeros(8), (4,), byte_offset=8, versioned=versioned)
            try:
                torch.from_dlpack(producer)
            except SystemError as exc:
                raise AssertionError(f"exception replaced: {exc!r}") from exc
            except Exception as exc:
                print(type(exc).__name__, exc)
            gc.collect()
            assert (producer.exported, producer.deleted) == (1, 1), producer.deleted
        assert dp.outstanding() == 0
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ok"), result.stdout
    assert "Exception ignored" not in result.stderr, result.stderr
