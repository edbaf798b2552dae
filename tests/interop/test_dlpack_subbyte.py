"""DLPack for 4-bit elements: to_dlpack_subbyte / from_dlpack_subbyte.

Capsules are read back field by field with the hand-made ctypes producer's reader
(``dlpack_producer.describe``), and 4-bit tensors are produced by it, so neither side of a test
trusts strided's own capsule code. Values are compared nibble by nibble against a brute-force
reading of the bytes (element ``e`` in byte ``e // 2``, low nibble when ``e`` is even).
"""

from __future__ import annotations

import gc
import itertools
import weakref

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st_h

import strided as st
from strided.interop import SubByteArray, from_dlpack_subbyte, to_dlpack_subbyte

try:
    import dlpack_producer as dp
except ImportError as exc:  # numpy < 2.1 cannot lend the producer its C callbacks
    pytest.skip(str(exc), allow_module_level=True)

INT4 = (dp.kDLInt, 4, 1)
UINT4 = (dp.kDLUInt, 4, 1)
PADDED = 1 << 2          # DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED


def nibble(buf: np.ndarray, byte_base: int, e: int, signed: bool) -> int:
    """The 4-bit value of element offset ``e`` counted from byte ``byte_base`` of ``buf``."""
    byte = int(buf[byte_base + e // 2])          # floor division: negative e reach back
    v = (byte >> (4 * (e % 2))) & 0xF
    return v - 16 if signed and v >= 8 else v


def values_of(buf, byte_base, sizes, strides, offset, signed):
    """Every element's value, in C order of its index (brute force)."""
    return [nibble(buf, byte_base, offset + sum(i * s for i, s in zip(index, strides)), signed)
            for index in itertools.product(*map(range, sizes))]


def imported_values(got: SubByteArray, signed: bool):
    flat = got.data.reshape(-1)
    assert np.shares_memory(flat, got.data) or got.data.size == 0
    L = got.layout
    return values_of(flat, 0, L.sizes, L.strides, L.offset, signed)


class PaddedProducer(dp.Producer):
    """The hand-made producer with DLPack 1.1's sub-byte padded flag set (versioned only)."""

    def _export(self, versioned):
        cap = super()._export(versioned)
        if versioned:
            managed = dp.DLManagedTensorVersioned.from_address(
                dp._PyCapsule_GetPointer(cap, b"dltensor_versioned"))
            managed.flags |= PADDED
            del managed
        return cap


class PreVersionProducer(dp.Producer):
    """A producer from before DLPack 1.0: ``__dlpack__`` knows no ``max_version``."""

    def __dlpack__(self, stream=None):  # type: ignore[override]
        return super().__dlpack__(stream=stream)


# ---- export: the capsule's fields --------------------------------------------------------------

@pytest.mark.parametrize("dtype,code", [("int4", dp.kDLInt), ("uint4", dp.kDLUInt)])
@pytest.mark.parametrize("max_version", [None, (1, 0), (1, 1), (1, 7), (2, 0)])
def test_capsule_fields(dtype, code, max_version):
    container = np.arange(24, dtype=np.uint8)
    layout = st.Layout((3, 4), (12, 1), offset=6, bits=4)    # 3 rows of 4, row pitch 6 bytes
    exporter = to_dlpack_subbyte(container, layout, dtype)
    assert exporter.__dlpack_device__() == (dp.kDLCPU, 0)
    cap = exporter.__dlpack__(max_version=max_version)
    fields = dp.describe(cap)
    assert fields["dtype"] == (code, 4, 1)
    assert fields["shape"] == (3, 4) and fields["strides"] == (12, 1)
    assert fields["ndim"] == 2
    assert fields["data"] + fields["byte_offset"] == container.ctypes.data + 3
    assert fields["device"] == (dp.kDLCPU, 0)
    if max_version is None:
        assert fields["name"] == "dltensor" and fields["version"] is None
    else:
        assert fields["name"] == "dltensor_versioned"
        assert fields["version"] == ((1, min(1, max_version[1])) if max_version[0] == 1
                                     else (1, 1))
        assert fields["flags"] == 0                      # writeable, packed


def test_capsule_read_only_and_legacy_refusal():
    container = np.zeros(8, dtype=np.uint8)
    container.flags.writeable = False
    exporter = to_dlpack_subbyte(container, st.Layout(16, bits=4))
    assert dp.describe(exporter.__dlpack__(max_version=(1, 1)))["flags"] == 1
    with pytest.raises(BufferError, match="legacy"):
        exporter.__dlpack__()
    # bytes are read-only too; a stride 0 makes elements alias: read-only as well
    assert dp.describe(to_dlpack_subbyte(b"\x01\x02", st.Layout(4, bits=4))
                       .__dlpack__(max_version=(1, 1)))["flags"] == 1
    alias = to_dlpack_subbyte(np.zeros(4, np.uint8), st.Layout((3, 2), (0, 1), bits=4))
    assert dp.describe(alias.__dlpack__(max_version=(1, 1)))["flags"] == 1


def test_dlpack_keyword_refusals():
    exporter = to_dlpack_subbyte(np.zeros(4, np.uint8), st.Layout(8, bits=4))
    with pytest.raises(BufferError, match="device"):
        exporter.__dlpack__(max_version=(1, 1), dl_device=(dp.kDLCUDA, 0))
    with pytest.raises(BufferError, match="does not copy"):
        exporter.__dlpack__(max_version=(1, 1), copy=True)
    exporter.__dlpack__(max_version=(1, 1), dl_device=(dp.kDLCPU, 0), copy=False)


def test_container_kept_alive():
    container = np.arange(16, dtype=np.uint8)
    ref = weakref.ref(container)
    exporter = to_dlpack_subbyte(container, st.Layout(32, bits=4), "uint4")
    cap = exporter.__dlpack__(max_version=(1, 1))
    del container, exporter
    gc.collect()
    assert ref() is not None                     # the capsule holds it
    got = from_dlpack_subbyte(cap)
    del cap
    gc.collect()
    assert ref() is not None                     # the consumed tensor holds it
    assert st.unpack_bits(got.data, dtype="uint8").tolist() == [
        v for b in range(16) for v in (b & 0xF, b >> 4)]
    del got
    gc.collect()
    assert ref() is None                          # and lets it go


def test_unconsumed_capsule_releases_container():
    container = np.arange(4, dtype=np.uint8)
    ref = weakref.ref(container)
    for max_version in (None, (1, 1)):
        to_dlpack_subbyte(container, st.Layout(8, bits=4)).__dlpack__(max_version=max_version)
    del container
    gc.collect()
    assert ref() is None


def test_torch_container():
    torch = pytest.importorskip("torch")
    t = torch.arange(12, dtype=torch.uint8)
    exporter = to_dlpack_subbyte(t, st.Layout((2, 4), (8, 1), offset=4, bits=4))
    fields = dp.describe(exporter.__dlpack__(max_version=(1, 1)))
    assert fields["data"] + fields["byte_offset"] == t.data_ptr() + 2
    got = from_dlpack_subbyte(exporter)
    assert imported_values(got, True) == values_of(t.numpy(), 0, (2, 4), (8, 1), 4, True)


# ---- export errors -------------------------------------------------------------------------------

def test_export_refuses_what_dlpack_cannot_say():
    c = np.zeros(16, dtype=np.uint8)
    with pytest.raises(ValueError, match=r"offset 3 of 4-bit elements is odd: element 3 starts "
                                         r"in the middle of byte 1"):
        to_dlpack_subbyte(c, st.Layout((2, 4), (8, 1), offset=3, bits=4))
    with pytest.raises(ValueError, match="stride 5 of dim 0 is odd"):
        to_dlpack_subbyte(c, st.Layout((2, 4), (5, 1), bits=4))
    with pytest.raises(ValueError, match="stride -2 of dim 0 is negative"):
        to_dlpack_subbyte(c, st.Layout((2, 4), (-2, 1), offset=4, bits=4))
    with pytest.raises(ValueError, match="only one dimension may have an odd"):
        to_dlpack_subbyte(c, st.Layout((2, 4), (1, 1), bits=4))


def test_export_refuses_layouts_outside_the_container():
    c = np.zeros(4, dtype=np.uint8)                 # elements 0..7
    to_dlpack_subbyte(c, st.Layout(8, bits=4))
    to_dlpack_subbyte(c, st.Layout(7, offset=0, bits=4))
    with pytest.raises(ValueError, match=r"elements 0\.\.8 \(bytes 0\.\.4\), outside the "
                                         r"container: it holds 4 bytes"):
        to_dlpack_subbyte(c, st.Layout(9, bits=4))
    with pytest.raises(ValueError, match="outside the container"):
        to_dlpack_subbyte(c, st.Layout(2, offset=8, bits=4))
    to_dlpack_subbyte(c, st.Layout(0, offset=8, bits=4))     # empty: one past the end is fine
    with pytest.raises(ValueError, match="an empty layout"):
        to_dlpack_subbyte(c, st.Layout(0, offset=10, bits=4))
    # a sliced container: offsets count from its first byte, the extent is its own span
    with pytest.raises(ValueError, match="outside the container"):
        to_dlpack_subbyte(np.zeros(8, np.uint8)[2:4], st.Layout(5, bits=4))


def test_export_argument_errors():
    c = np.zeros(4, dtype=np.uint8)
    with pytest.raises(TypeError, match="dtype must be one of int4, uint4"):
        to_dlpack_subbyte(c, st.Layout(8, bits=4), "int8")
    with pytest.raises(TypeError, match=r"layout must be a strided\.Layout"):
        to_dlpack_subbyte(c, ((8,), (1,)))
    with pytest.raises(ValueError, match="layout must be of 4-bit elements"):
        to_dlpack_subbyte(c, st.Layout(4))
    with pytest.raises(TypeError, match="container must be an array of bytes"):
        to_dlpack_subbyte(np.zeros(4, np.float32), st.Layout(8, bits=4))
    with pytest.raises(TypeError, match="container must be an array of bytes"):
        to_dlpack_subbyte(np.zeros(4, np.uint16), st.Layout(8, bits=4))
    with pytest.raises(TypeError):
        to_dlpack_subbyte(object(), st.Layout(8, bits=4))


# ---- round trips ---------------------------------------------------------------------------------

@st_h.composite
def addressable_cases(draw):
    """(container, byte-addressable 4-bit layout over it): a random physical order, the unit
    stride (if any) innermost, padding, size-0/1 dims, an even offset."""
    rank = draw(st_h.integers(0, 4))
    sizes = draw(st_h.lists(st_h.integers(0, 5), min_size=rank, max_size=rank))
    order = draw(st_h.permutations(range(rank)))        # physical order, outermost first
    strides = [0] * rank
    pitch = 1
    for k, dim in enumerate(reversed(order)):
        if k == 0 and draw(st_h.booleans()):
            strides[dim] = 1                                   # the one unit stride
            pitch = sizes[dim] + draw(st_h.integers(0, 3))
        else:
            pitch += pitch % 2                                 # even strides elsewhere
            strides[dim] = pitch * draw(st_h.sampled_from([1, 1, 2]))
            pitch = strides[dim] * max(sizes[dim], 1)
    if rank and draw(st_h.booleans()):
        strides[draw(st_h.integers(0, rank - 1))] = 0          # broadcast
    offset = 2 * draw(st_h.integers(0, 3))
    layout = st.Layout(sizes, strides, offset=offset, bits=4)
    assert layout.is_byte_addressable, layout
    nbytes = max(layout.nbytes, (offset + 1) // 2) + draw(st_h.integers(0, 2))
    seed = draw(st_h.integers(0, 2**32 - 1))
    container = np.random.default_rng(seed).integers(0, 256, size=nbytes, dtype=np.uint8)
    return container, layout


@given(addressable_cases(), st_h.sampled_from(["int4", "uint4"]),
       st_h.sampled_from([None, (1, 1), (1, 0)]))
def test_round_trip(case, dtype, max_version):
    container, layout = case
    signed = dtype == "int4"
    exporter = to_dlpack_subbyte(container, layout, dtype)

    class Consumer:            # a consumer asking for the given capsule kind
        def __dlpack__(self, **kwargs):
            return exporter.__dlpack__(max_version=max_version)

    if layout.overlaps and max_version is None:
        # elements that alias each other are exported read-only, which legacy cannot say
        with pytest.raises(BufferError, match="legacy"):
            from_dlpack_subbyte(Consumer())
        return
    got = from_dlpack_subbyte(Consumer())
    assert got.dtype == dtype and got.padded is False
    assert got.layout.bits == 4
    assert got.layout.sizes == layout.sizes and got.layout.strides == layout.strides
    assert got.data.dtype == np.uint8 and got.data.flags.c_contiguous
    want = values_of(container, 0, layout.sizes, layout.strides, layout.offset, signed)
    assert imported_values(got, signed) == want
    if layout.size:
        assert np.shares_memory(got.data, container)
        # the same bytes: the imported data is the container's bytes from the first one reached
        first = (layout.span[0]) // 2
        assert got.data.reshape(-1).tobytes() == container[first:first + got.data.size].tobytes()
        assert got.layout.offset == layout.offset - 2 * first
    # the exported layout again, from the imported pair: same capsule fields
    again = dp.describe(to_dlpack_subbyte(got.data, got.layout, dtype)
                        .__dlpack__(max_version=(1, 1)))
    first_fields = dp.describe(exporter.__dlpack__(max_version=(1, 1)))
    for key in ("dtype", "shape", "strides", "device", "flags"):
        assert again[key] == first_fields[key], key
    if layout.size:
        assert again["data"] + again["byte_offset"] == (first_fields["data"]
                                                        + first_fields["byte_offset"])


def test_packed_row_major_container_shape():
    x = np.arange(-8, 8, dtype=np.int8).reshape(2, 8)
    p = st.pack_bits(x)
    got = from_dlpack_subbyte(to_dlpack_subbyte(p, st.Layout((2, 8), bits=4)))
    assert got.data.shape == (2, 4)                     # innermost dim halved
    np.testing.assert_array_equal(st.unpack_bits(got.data), x)
    odd = from_dlpack_subbyte(to_dlpack_subbyte(p, st.Layout(15, bits=4)))
    assert odd.data.shape == (8,)                       # 15 elements: bytes 0..7
    assert odd.layout == st.Layout(15, bits=4)
    padded = from_dlpack_subbyte(to_dlpack_subbyte(p, st.Layout((2, 3), (8, 1), bits=4)))
    assert padded.data.shape == (6,)                    # rows 4 bytes apart: bytes 0..5, 1-D
    assert padded.layout == st.Layout((2, 3), (8, 1), bits=4)


# ---- import from a hand-made producer ------------------------------------------------------------

@pytest.mark.parametrize("versioned", [False, True])
@pytest.mark.parametrize("dtype", [INT4, UINT4])
def test_import_null_strides_and_byte_offset(versioned, dtype):
    buf = np.arange(40, dtype=np.uint8) * 7
    p = dp.Producer(buf, (3, 6), None, byte_offset=5, dtype=dtype, versioned=versioned)
    got = from_dlpack_subbyte(p)
    signed = dtype == INT4
    assert got.layout.sizes == (3, 6) and got.layout.strides == (6, 1)
    assert got.data.shape == (3, 3) and np.shares_memory(got.data, buf)
    assert imported_values(got, signed) == values_of(buf, 5, (3, 6), (6, 1), 0, signed)
    assert got.data.flags.writeable
    del got
    gc.collect()
    assert p.deleted == p.exported == 1


@pytest.mark.parametrize("strides", [(-6, 1), (7, -3), (3, 1), (1, 3), (0, -1), (-1, -2)])
def test_import_any_strides(strides):
    # layouts that are not byte-addressable have no export, but a producer may hand them over:
    # they are read exactly (odd and negative strides; the start stays a byte boundary)
    buf = np.arange(64, dtype=np.uint8) * 13
    p = dp.Producer(buf, (3, 4), strides, byte_offset=20, dtype=INT4)
    got = from_dlpack_subbyte(p)
    assert got.layout.strides == strides and got.data.ndim == 1
    assert got.layout.offset % 2 == 0
    assert imported_values(got, True) == values_of(buf, 20, (3, 4), strides, 0, True)
    assert np.shares_memory(got.data, buf)


def test_import_legacy_producer_and_raw_capsules():
    buf = np.array([0x21, 0x43], dtype=np.uint8)
    got = from_dlpack_subbyte(PreVersionProducer(buf, (4,), dtype=UINT4))
    assert st.unpack_bits(got.data, dtype="uint8").tolist() == [1, 2, 3, 4]
    for versioned in (False, True):
        cap = dp.capsule(buf, (3,), (1,), dtype=INT4, versioned=versioned)
        got = from_dlpack_subbyte(cap)
        assert dp.capsule_name(cap).startswith("used_")
        assert imported_values(got, True) == [1, 2, 3]
        with pytest.raises(ValueError, match="already been consumed"):
            from_dlpack_subbyte(cap)


def test_import_read_only_flag():
    buf = np.array([0x21, 0x43], dtype=np.uint8)
    got = from_dlpack_subbyte(dp.Producer(buf, (4,), dtype=INT4, readonly=True, versioned=True))
    assert not got.data.flags.writeable
    with pytest.raises(BufferError, match="legacy"):
        to_dlpack_subbyte(got.data, got.layout).__dlpack__()


@pytest.mark.parametrize("shape,strides", [((2, 3), None), ((2, 3), (1, 2)), ((4,), (-1,)),
                                           ((0, 3), None), ((), None)])
def test_import_padded(shape, strides):
    # one element per byte; the producer's high bits are arbitrary (0xF7 is -1 in its low bits)
    buf = np.array([0xF7, 0x08, 0x0F, 0x31, 0x77, 0xE9, 0x00, 0xFF], dtype=np.uint8)
    offset = 3 if strides == (-1,) else 0
    n = int(np.prod(shape))
    for dtype, signed in ((INT4, True), (UINT4, False)):
        p = PaddedProducer(buf, shape, strides, byte_offset=offset, dtype=dtype)
        got = from_dlpack_subbyte(p)
        assert got.padded is True and got.dtype == ("int4" if signed else "uint4")
        assert got.data.dtype == (np.int8 if signed else np.uint8)
        assert got.data.shape == shape and got.data.flags.c_contiguous
        assert got.layout == st.Layout(shape, itemsize=1)
        assert not np.shares_memory(got.data, buf)          # a new array
        eff = strides if strides is not None else st.Layout(shape).strides
        want = []
        for index in itertools.product(*map(range, shape)):
            v = int(buf[offset + sum(i * s for i, s in zip(index, eff))]) & 0xF
            want.append(v - 16 if signed and v >= 8 else v)
        assert got.data.reshape(-1).tolist() == want
        assert len(want) == n


def test_padded_flag_ignored_on_legacy_capsules():
    # the flag lives in the versioned struct only: a legacy capsule is packed
    buf = np.array([0x21, 0x43], dtype=np.uint8)
    got = from_dlpack_subbyte(PaddedProducer(buf, (4,), dtype=INT4, versioned=False))
    assert got.padded is False and imported_values(got, True) == [1, 2, 3, 4]


def test_import_with_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.array([[-8, 7, 1, -1], [0, 3, -4, 5]], dtype=ml_dtypes.int4)
    p = dp.Producer(st.pack_bits(x), (2, 4), dtype=INT4)
    got = from_dlpack_subbyte(p)
    np.testing.assert_array_equal(st.unpack_bits(got.data, dtype="int4"), x)


# ---- import errors -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,match", [
    ((dp.kDLInt, 8, 1), "whole-byte elements"),
    ((dp.kDLFloat, 4, 1), "code 2, 4 bits, 1 lanes"),
    ((17, 4, 1), "a sub-byte type strided does not read"),     # kDLFloat4_e2m1fn
    ((dp.kDLInt, 4, 2), "code 0, 4 bits, 2 lanes"),
    ((dp.kDLUInt, 2, 1), "a sub-byte type"),
])
def test_import_refuses_other_dtypes(dtype, match):
    p = dp.Producer(np.zeros(8, np.uint8), (4,), dtype=dtype)
    with pytest.raises(ValueError, match=match):
        from_dlpack_subbyte(p)
    gc.collect()
    assert p.deleted == p.exported == 1           # released all the same


def test_import_refuses_device_memory():
    p = dp.Producer(np.zeros(8, np.uint8), (4,), dtype=INT4, device=(dp.kDLCUDA, 0))
    with pytest.raises(ValueError, match=r"device \(2, 0\).*host memory only"):
        from_dlpack_subbyte(p)


def test_import_refuses_non_producers():
    with pytest.raises(TypeError, match="expected a DLPack capsule"):
        from_dlpack_subbyte(np.zeros(3, np.uint8).tolist())
    with pytest.raises(ValueError, match="sizes must be >= 0"):
        from_dlpack_subbyte(dp.Producer(np.zeros(4, np.uint8), (-4,), dtype=INT4))
