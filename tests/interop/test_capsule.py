"""The core's DLPack capsule reader (consume_dlpack) and writer (make_dlpack_capsule).

Independent oracles: numpy's and torch's own DLPack producers feed the reader, and numpy's
``from_dlpack`` consumes what the writer makes. Anything handed to torch runs in a subprocess.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

from strided.interop import _capsule

F32 = (2, 32, 1)


class _Holder:
    """A producer object exposing a ready-made capsule, as from_dlpack expects."""

    def __init__(self, capsule, device=(1, 0)):
        self.capsule = capsule
        self.device = device

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return self.device


class _Owner:
    """Something weak-referenceable to prove what a capsule keeps alive."""


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


# ---- reading capsules made by numpy ----------------------------------------------------------

@pytest.mark.parametrize("versioned", [False, True])
@pytest.mark.parametrize(
    "make",
    [
        lambda: np.arange(12, dtype=np.float32).reshape(3, 4),
        lambda: np.arange(12, dtype=np.float32).reshape(3, 4).T,
        lambda: np.arange(24, dtype=np.int16).reshape(2, 3, 4)[:, ::2, ::-1],
        lambda: np.broadcast_to(np.arange(3, dtype=np.uint8), (4, 3)),
        lambda: np.zeros((0, 5), np.complex64),
        lambda: np.array(7.5),
        lambda: np.ones(3, dtype=bool),
    ],
)
def test_consume_numpy_capsules(make, versioned):
    a = make()
    if not (versioned or a.flags.writeable):
        with pytest.raises(BufferError):       # numpy's refusal: legacy has no read-only flag
            a.__dlpack__()
        return
    capsule = a.__dlpack__(max_version=(1, 0)) if versioned else a.__dlpack__()
    t = _capsule.consume_dlpack(capsule)
    assert t.shape == a.shape
    itemsize = a.dtype.itemsize
    if t.strides is not None:
        assert tuple(s * itemsize for s in t.strides) == a.strides or a.size <= 1
    assert t.data + t.byte_offset == _address(a)
    assert t.device == (1, 0)
    assert t.dtype[1] * t.dtype[2] == 8 * itemsize
    assert t.version == ((1, 0) if versioned else None)
    assert t.readonly is (versioned and not a.flags.writeable)
    assert "used_dltensor" in repr(capsule)


def test_consume_read_only_flag():
    a = np.arange(4.0)
    a.flags.writeable = False
    t = _capsule.consume_dlpack(a.__dlpack__(max_version=(1, 0)))
    assert t.readonly is True


def test_consumed_tensor_keeps_producer_memory_alive():
    a = np.arange(6, dtype=np.int64)
    ref = weakref.ref(a)
    t = _capsule.consume_dlpack(a.__dlpack__())
    address = t.data + t.byte_offset
    del a
    gc.collect()
    assert ref() is not None, "the consumed tensor must keep numpy's array alive"
    del t
    gc.collect()
    assert ref() is None, "dropping the consumed tensor must run numpy's deleter"
    assert address != 0


def test_capsule_is_read_once():
    capsule = np.arange(3.0).__dlpack__()
    _capsule.consume_dlpack(capsule)
    with pytest.raises(ValueError, match="already been consumed"):
        _capsule.consume_dlpack(capsule)


@pytest.mark.parametrize("bad", [None, 3, "dltensor", b"x", np.arange(3), object()])
def test_consume_refuses_non_capsules(bad):
    with pytest.raises(TypeError, match="DLPack capsule"):
        _capsule.consume_dlpack(bad)


def test_consume_refuses_foreign_capsule():
    import _datetime  # its C API is a capsule with another name

    with pytest.raises(TypeError, match=r"datetime\.datetime_CAPI"):
        _capsule.consume_dlpack(_datetime.datetime_CAPI)


# ---- writing capsules, read back by numpy ----------------------------------------------------

@pytest.mark.parametrize("version", [None, (1, 0), (1, 1)])
@pytest.mark.parametrize(
    "sizes, strides, offset",
    [
        ((3, 4), (4, 1), 0),
        ((4, 3), (1, 4), 0),
        ((2, 3), (5, 1), 1),          # padded
        ((3, 2), (-4, 1), 8),         # negative
        ((2, 3), (0, 1), 2),          # broadcast
        ((), (), 5),                  # rank 0
        ((0, 3), (3, 1), 0),          # empty
    ],
)
def test_written_capsule_read_by_numpy(sizes, strides, offset, version):
    base = np.arange(12, dtype=np.float32)
    capsule = _capsule.make_dlpack_capsule(base, _address(base), 4 * offset, sizes, strides,
                                        (1, 0), F32, version=version)
    out = np.from_dlpack(_Holder(capsule))
    expected = np.lib.stride_tricks.as_strided(
        base[offset:], sizes, tuple(4 * s for s in strides)) if offset < 12 else None
    if expected is not None and all(s >= 0 for s in strides):
        np.testing.assert_array_equal(out, expected)
    for index in np.ndindex(*sizes):
        assert out[index] == base[offset + sum(i * s for i, s in zip(index, strides))]
    if out.size:
        assert np.shares_memory(out, base)


def test_written_read_only_capsule_gives_read_only_array():
    base = np.arange(4.0, dtype=np.float32)
    capsule = _capsule.make_dlpack_capsule(base, _address(base), 0, (4,), (1,), (1, 0), F32,
                                        readonly=True, version=(1, 0))
    out = np.from_dlpack(_Holder(capsule))
    assert not out.flags.writeable


def test_legacy_capsule_cannot_be_read_only():
    base = np.arange(4.0, dtype=np.float32)
    with pytest.raises(ValueError, match="legacy"):
        _capsule.make_dlpack_capsule(base, _address(base), 0, (4,), (1,), (1, 0), F32,
                                  readonly=True)


@pytest.mark.parametrize("version", [None, (1, 1)])
def test_written_capsule_keeps_owner_until_the_consumer_is_done(version):
    base = np.arange(4.0, dtype=np.float32)
    owner = _Owner()
    ref = weakref.ref(owner)
    capsule = _capsule.make_dlpack_capsule(owner, _address(base), 0, (4,), (1,), (1, 0), F32,
                                        version=version)
    del owner
    gc.collect()
    assert ref() is not None
    out = np.from_dlpack(_Holder(capsule))
    del capsule
    gc.collect()
    assert ref() is not None, "the consumer's array still uses the memory"
    del out
    gc.collect()
    assert ref() is None, "the deleter must release the owner"


@pytest.mark.parametrize("version", [None, (1, 1)])
def test_unconsumed_capsule_releases_owner(version):
    owner = _Owner()
    ref = weakref.ref(owner)
    capsule = _capsule.make_dlpack_capsule(owner, 0, 0, (0,), (1,), (1, 0), F32, version=version)
    del owner, capsule
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize("version", [None, (1, 1)])
def test_null_data_is_refused_unless_empty(version):
    capsule = _capsule.make_dlpack_capsule(None, 0, 0, (2, 3), (3, 1), (1, 0), F32, version=version)
    with pytest.raises(ValueError, match="6 elements has a NULL data pointer"):
        _capsule.consume_dlpack(capsule)
    empty = _capsule.make_dlpack_capsule(None, 0, 0, (2, 0), (3, 1), (1, 0), F32, version=version)
    assert _capsule.consume_dlpack(empty).data == 0


def test_round_trip_writer_to_reader():
    base = np.arange(12, dtype=np.int16)
    capsule = _capsule.make_dlpack_capsule(base, _address(base), 6, (2, 3), (-3, 2), (1, 0),
                                        (0, 16, 1), readonly=True, version=(1, 1))
    t = _capsule.consume_dlpack(capsule)
    assert (t.data, t.byte_offset) == (_address(base), 6)
    assert (t.shape, t.strides) == ((2, 3), (-3, 2))
    assert (t.device, t.dtype, t.readonly, t.version) == ((1, 0), (0, 16, 1), True, (1, 1))


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(sizes=(2,), strides=(1, 1)), ValueError),
        (dict(sizes=(-1,), strides=(1,)), ValueError),
        (dict(sizes=(2,), strides=(1.5,)), TypeError),
        (dict(byte_offset=-8), ValueError),
        (dict(dtype=(2, 300, 1)), OverflowError),
        (dict(device=(1,)), ValueError),
    ],
)
def test_writer_validates(kwargs, error):
    args = dict(owner=None, data=0, byte_offset=0, sizes=(2,), strides=(1,), device=(1, 0),
                dtype=F32)
    args.update(kwargs)
    with pytest.raises(error):
        _capsule.make_dlpack_capsule(**args)


def test_writer_failure_leaks_no_reference():
    owner = _Owner()
    before = sys.getrefcount(owner)
    for _ in range(100):
        with pytest.raises(OverflowError):
            _capsule.make_dlpack_capsule(owner, 0, 0, (2,), (1,), (1, 0), (2, 999, 1))
    assert sys.getrefcount(owner) == before


# ---- torch as producer and consumer (in a subprocess: torch aborts on some inputs) -----------

def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120)


def test_torch_capsules_round_trip():
    pytest.importorskip("torch")
    result = _run("""
        import torch, numpy as np
        from strided import _core
        from strided.interop import _capsule
        t = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4).permute(2, 0, 1)[1:, :, ::2]
        for kwargs in ({}, {"max_version": (1, 0)}):
            h = _capsule.consume_dlpack(t.__dlpack__(**kwargs))
            assert h.shape == tuple(t.shape) and h.strides == t.stride(), h
            assert h.data + h.byte_offset == t.data_ptr(), h
            assert h.dtype == (2, 32, 1) and h.device == (1, 0), h
        class Holder:
            def __init__(self, c): self.c = c
            def __dlpack__(self, **kw): return self.c
            def __dlpack_device__(self): return (1, 0)
        base = np.arange(12, dtype=np.float32)
        ptr = base.__array_interface__["data"][0]
        for version in (None, (1, 0)):
            cap = _capsule.make_dlpack_capsule(base, ptr, 4, (2, 3), (4, 1), (1, 0), (2, 32, 1),
                                            version=version)
            out = torch.from_dlpack(Holder(cap))
            assert out.tolist() == [[1, 2, 3], [5, 6, 7]], out
            out[0, 0] = -1
            assert base[1] == -1
            base[1] = 1
        print("ok")
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
