"""Sources read zero-copy through numpy: ``__array_interface__`` objects and buffers.

Objects exposing numpy's array interface (protocol version 3: PIL images, hand-made classes)
and buffer-protocol objects (memoryviews, ``array.array``, ``bytearray``, ctypes arrays) are
read by every call that reads arrays (``layout_of``, ``copyto``, ``relayout``, ``to_blocked``,
``from_blocked``, ``stack``, ``view``), through ``strided.interop.describe``.

Oracles, independent of strided: ``np.asarray(img)`` for PIL images (numpy reads the same
interface), ``np.ndarray(shape, dtype, buffer=..., offset=..., strides=...)`` (numpy's own
bounds-checked reading) for hand-made interfaces over buffers, and the numpy views the
hand-made ``(address, readonly)`` interfaces are taken from. Every malformed interface is
refused before any memory is read, with the exception type and a message naming the field.
"""

from __future__ import annotations

import array
import ctypes
import gc
import importlib.util
import mmap
import sys

import numpy as np
import pytest

import strided as st
from strided.interop import describe

HAVE_PIL = importlib.util.find_spec("PIL") is not None
HAVE_TORCH = importlib.util.find_spec("torch") is not None
needs_pil = pytest.mark.skipif(not HAVE_PIL, reason="Pillow is not installed")
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed")
if HAVE_PIL:
    import PIL.Image

NATIVE = "<" if sys.byteorder == "little" else ">"
FOREIGN = ">" if NATIVE == "<" else "<"


class Exposes:
    """An object whose ``__array_interface__`` property returns ``make(reads)`` (``reads``
    counts the accesses, from 1); ``keep`` keeps the memory the interface points to alive."""

    def __init__(self, make, keep=None):
        self.make, self.keep, self.reads = make, keep, 0

    @property
    def __array_interface__(self):
        self.reads += 1
        return self.make(self.reads)


def exposing(interface, keep=None):
    """An :class:`Exposes` returning a fresh copy of ``interface`` at every access."""
    return Exposes(lambda _: dict(interface), keep)


def pointing_at(view, readonly=False):
    """A hand-made interface over a numpy view's memory: ``(address, readonly)``, byte strides."""
    return exposing({"version": 3, "shape": view.shape, "typestr": view.dtype.str,
                     "strides": view.strides, "data": (view.ctypes.data, readonly)}, keep=view)


def over(data, shape, typestr, strides=None, offset=None, **extra):
    """A hand-made interface over a buffer object ``data``."""
    interface = {"version": 3, "shape": shape, "typestr": typestr, "data": data, **extra}
    if strides is not None:
        interface["strides"] = strides
    if offset is not None:
        interface["offset"] = offset
    return exposing(interface)


def c_layout(shape, itemsize):
    return st.Layout(shape, st.packed_strides(shape), itemsize=itemsize)


# ---- PIL images ----------------------------------------------------------------------------

RNG = np.random.default_rng(25)
# mode -> the array it is made from (Image.fromarray picks the mode from the dtype and shape)
PIL_ARRAYS = {
    "L": RNG.integers(0, 256, (5, 7), dtype=np.uint8),
    "RGB": RNG.integers(0, 256, (5, 7, 3), dtype=np.uint8),
    "RGBA": RNG.integers(0, 256, (5, 7, 4), dtype=np.uint8),
    "I;16": RNG.integers(0, 65536, (5, 7)).astype(np.uint16),
    "I": RNG.integers(-2**31, 2**31, (5, 7)).astype(np.int32),
    "F": RNG.standard_normal((5, 7)).astype(np.float32),
}


def image(mode):
    img = PIL.Image.fromarray(PIL_ARRAYS[mode])
    assert img.mode == mode
    return img


@needs_pil
@pytest.mark.parametrize("mode", PIL_ARRAYS)
def test_pil_image_reads_as_its_array(mode):
    img, expected = image(mode), PIL_ARRAYS[mode]
    assert np.array_equal(np.asarray(img), expected)        # the oracle reads the same
    assert st.layout_of(img) == c_layout(expected.shape, expected.itemsize)
    record = describe(img)
    assert (record.library, record.writeable, record.dtype is not None) == ("numpy", False, True)
    out = st.relayout(img, "C")
    assert type(out) is np.ndarray and out.dtype == expected.dtype
    assert np.array_equal(out, expected)
    reverse = tuple(reversed(range(expected.ndim)))
    flipped = st.relayout(img, reverse)
    assert np.array_equal(flipped, expected)
    assert st.layout_of(flipped) == st.Layout.packed(expected.shape, reverse,
                                                     itemsize=expected.itemsize)


@needs_pil
@pytest.mark.parametrize("mode", PIL_ARRAYS)
def test_pil_image_copied_into_numpy_with_a_dtype_change(mode):
    img, expected = image(mode), PIL_ARRAYS[mode]
    dst = np.full(expected.shape, -1.0)
    st.copyto(dst, img)
    assert np.array_equal(dst, expected.astype(np.float64))
    # a strided destination (every second column of a wider array) and a narrowing cast
    wide = np.zeros((*expected.shape[:1], 2 * expected.shape[1], *expected.shape[2:]),
                    np.float32)
    st.copyto(wide[:, ::2], img)
    assert np.array_equal(wide[:, ::2], expected.astype(np.float32))
    assert not wide[:, 1::2].any()


@needs_pil
@needs_torch
@pytest.mark.parametrize("mode", PIL_ARRAYS)
def test_pil_image_copied_into_torch(mode):
    import torch
    img, expected = image(mode), PIL_ARRAYS[mode]
    dst = torch.zeros(expected.shape, dtype=torch.float64)
    st.copyto(dst, img)
    assert np.array_equal(dst.numpy(), expected.astype(np.float64))
    # channels-last tensor into which the planar values go: relayout's reading of an image
    if expected.ndim == 3:
        planar = torch.zeros((1, expected.shape[2], *expected.shape[:2]), dtype=torch.float32)
        planar = planar.contiguous(memory_format=torch.channels_last)
        st.copyto(planar[0].permute(1, 2, 0), img)
        assert np.array_equal(planar[0].permute(1, 2, 0).numpy(), expected.astype(np.float32))


@needs_pil
def test_pil_image_normalised_on_the_way():
    img, expected = image("RGB"), PIL_ARRAYS["RGB"]
    out = st.relayout(img, "C", dtype=np.float32, scale=1 / 255)
    assert np.array_equal(out, (expected.astype(np.float32) * np.float32(1 / 255)))


@needs_pil
def test_pil_images_stacked_into_a_batch():
    images = [PIL.Image.fromarray(np.roll(PIL_ARRAYS["RGB"], k, axis=0)) for k in range(3)]
    batch = st.stack(images)
    assert type(batch) is np.ndarray
    expected = np.stack([np.asarray(i) for i in images]).transpose(0, 3, 1, 2)
    assert batch.shape == expected.shape and np.array_equal(batch, expected)


@needs_pil
def test_pil_image_to_blocked_through_an_nchw_view():
    """An RGB image's bytes described as a logical (1, C, H, W) array by strides alone (an
    interface over its bytes), packed into NCHW4 and back."""
    img = image("RGB")
    h, w, c = PIL_ARRAYS["RGB"].shape
    nchw = over(img.tobytes(), (1, c, h, w), "|u1", strides=(0, 1, w * c, c))
    expected = PIL_ARRAYS["RGB"].transpose(2, 0, 1)[None]
    blocked = st.to_blocked(nchw, "NCHW4")
    assert blocked.shape == (1, 1, h, w, 4)
    assert np.array_equal(blocked[0, 0, :, :, :3], expected[0].transpose(1, 2, 0))
    assert not blocked[..., 3].any()
    # from_blocked reads an interface too: one over the blocked array's memory
    back = st.from_blocked(pointing_at(blocked, readonly=True), "NCHW4", channels=c)
    assert np.array_equal(back, expected)
    assert nchw.reads == 1


@needs_pil
def test_pil_image_views_are_read_only_and_destinations_refused():
    img = image("RGB")
    v = st.view(img, st.Layout((7,), (3,), offset=1, itemsize=1))
    assert np.array_equal(v, PIL_ARRAYS["RGB"][0, :, 1])
    assert not v.flags.writeable
    with pytest.raises(ValueError, match=r"dst is read-only \(Image\)"):
        st.copyto(img, np.zeros(PIL_ARRAYS["RGB"].shape, np.uint8))


@needs_pil
def test_pil_bilevel_image_reads_as_bool():
    bits = RNG.integers(0, 2, (4, 9)).astype(bool)
    img = PIL.Image.fromarray(bits)
    assert img.mode == "1"
    assert np.array_equal(st.relayout(img, "C"), np.asarray(img))
    out = np.zeros(bits.shape, np.float32)
    st.copyto(out, img)
    assert np.array_equal(out, bits.astype(np.float32))       # PIL's 255 bytes read as True


@needs_pil
def test_pil_big_endian_image_is_refused():
    img = PIL.Image.new("I;16B", (3, 2))
    assert img.__array_interface__["typestr"] == ">u2"
    if NATIVE == ">":
        pytest.skip("big-endian machine: '>u2' is native")
    with pytest.raises(TypeError, match=r"'typestr'\] is '>u2', big-endian"):
        st.relayout(img, "C")


# ---- hand-made interfaces over numpy memory: (address, readonly) ---------------------------


def test_address_interface_with_negative_and_padded_strides():
    base = np.arange(60, dtype=np.float32).reshape(6, 10)
    piece = base[4:0:-2, 1:9:3]                     # first element mid-buffer, negative stride
    obj = pointing_at(piece)
    assert st.layout_of(obj) == st.layout_of(piece) == st.Layout((2, 3), (-20, 3), itemsize=4)
    assert np.array_equal(st.relayout(obj, "C"), piece)
    assert describe(obj).writeable
    assert np.array_equal(np.asarray(obj), piece)
    obj.reads = 3
    # a destination: writes land on the piece's elements and nowhere else
    before = base.copy()
    st.copyto(obj, np.array([[1, 2, 3], [4, 5, 6]], np.int16))
    assert np.array_equal(piece, [[1, 2, 3], [4, 5, 6]])
    mask = np.ones(base.shape, bool)
    mask[4:0:-2, 1:9:3] = False
    assert np.array_equal(base[mask], before[mask])
    assert obj.reads == 4        # layout_of, relayout, describe, copyto: once each


def test_address_interface_read_only_refused_as_destination():
    base = np.arange(6.0)
    obj = pointing_at(base[::-1], readonly=True)
    assert np.array_equal(st.relayout(obj, "C"), base[::-1])
    with pytest.raises(ValueError, match=r"dst is read-only \(Exposes\)"):
        st.copyto(obj, np.zeros(6))
    assert np.array_equal(base, np.arange(6.0))


def test_instance_attribute_interface_and_agreeing_descr():
    class Plain:
        def __init__(self, arr):
            self.arr = arr
            self.__array_interface__ = {**arr.__array_interface__}

    arr = np.arange(12, dtype=np.int16).reshape(3, 4)[:, 1:]
    plain = Plain(arr)
    assert plain.__array_interface__["descr"] == [("", arr.dtype.str)]
    assert np.array_equal(st.relayout(plain, "C"), arr)


def test_empty_interface_at_address_zero():
    obj = exposing({"version": 3, "shape": (0, 3), "typestr": NATIVE + "f8",
                    "data": (0, False)})
    assert st.layout_of(obj) == st.layout_of(np.empty((0, 3)))
    out = st.relayout(obj, "C")
    assert out.shape == (0, 3) and out.dtype == np.float64
    st.copyto(obj, np.zeros((0, 3)))                 # nothing to write, nothing written


# ---- hand-made interfaces over buffer objects ----------------------------------------------


def test_buffer_interface_with_offset_and_strides():
    data = bytes(range(40))
    u2 = NATIVE + "u2"
    obj = over(data, (2, 3), u2, strides=(12, 4), offset=6)
    expected = np.ndarray((2, 3), u2, buffer=data, offset=6, strides=(12, 4))
    assert st.layout_of(obj) == st.Layout((2, 3), (6, 2), itemsize=2)
    assert np.array_equal(st.relayout(obj, "C"), expected)
    assert not describe(obj).writeable
    # negative strides: the first element at the offset, the others below it
    down = over(data, (3,), u2, strides=(-4,), offset=20)
    assert np.array_equal(st.relayout(down, "C"),
                          np.ndarray((3,), u2, buffer=data, offset=20, strides=(-4,)))


def test_buffer_interface_over_bytearray_is_a_writeable_destination():
    data = bytearray(24)
    obj = over(data, (2, 2), NATIVE + "f4", strides=(12, 4), offset=4)
    st.copyto(obj, np.array([[1, 2], [3, 4]], np.int32))
    expected = np.zeros(6, np.float32)
    expected[[1, 2, 4, 5]] = [1, 2, 3, 4]
    assert bytes(data) == expected.tobytes()


def test_buffer_interface_keeps_its_memory_alive():
    data = bytearray(range(8))
    obj = over(data, (4,), "|u1", strides=(2,))
    v = st.view(obj, st.Layout((4,), (2,), itemsize=1))
    del obj
    gc.collect()
    with pytest.raises(BufferError):
        data.extend(b"more")            # numpy holds the buffer export: no resize under it
    assert np.array_equal(v, [0, 2, 4, 6])
    del v
    gc.collect()
    data.extend(b"!")


def test_buffer_interface_over_array_array_and_memoryview():
    floats = array.array("d", [float(i) for i in range(8)])
    obj = over(floats, (2, 2), NATIVE + "f8", strides=(32, 8), offset=8)
    assert np.array_equal(st.relayout(obj, "C"), [[1.0, 2.0], [5.0, 6.0]])
    mv = memoryview(bytearray(range(6)))
    assert np.array_equal(st.relayout(over(mv, (2, 3), "|u1"), "C"),
                          np.arange(6).reshape(2, 3))


# ---- read once ------------------------------------------------------------------------------


def test_interface_is_read_once_per_call():
    """A property that computes a new dict at every access: the first is used, once."""
    base = np.arange(6, dtype=np.uint8)

    def make(reads):
        if reads % 2:
            return {"version": 3, "shape": (2, 3), "typestr": "|u1",
                    "data": (base.ctypes.data, False)}
        return {"version": 3, "shape": (1000, 1000), "typestr": "|u1",    # garbage
                "data": (8, False)}

    calls = [
        lambda o: st.layout_of(o),
        lambda o: st.copyto(np.zeros((2, 3)), o),
        lambda o: st.copyto(o, np.ones((2, 3), np.uint8)),
        lambda o: st.view(o, st.Layout((3,), (2,), itemsize=1)),
        lambda o: st.stack([o], image_layout="HW"),
        lambda o: describe(o),
    ]
    for call in calls:
        obj = Exposes(make, keep=base)
        call(obj)
        assert obj.reads == 1
    # to_blocked / from_blocked: test_pil_image_to_blocked_through_an_nchw_view


@pytest.mark.parametrize("dtype", [None, np.float32])
def test_relayout_reads_the_interface_once(dtype):
    base = np.arange(6, dtype=np.uint8)
    obj = pointing_at(base.reshape(2, 3))
    st.relayout(obj, (1, 0), dtype=dtype)
    assert obj.reads == 1


def test_relayout_of_an_interface_that_changes_between_its_reads():
    """Whatever relayout reads the second time is checked as the first was: the shapes must
    still agree, and no memory outside what the interface gives is touched."""
    base = np.arange(6, dtype=np.uint8)

    def make(reads):
        shape = (2, 3) if reads == 1 else (3, 2)
        return {"version": 3, "shape": shape, "typestr": "|u1",
                "data": (base.ctypes.data, False)}

    obj = Exposes(make, keep=base)
    try:
        out = st.relayout(obj, (1, 0))
    except ValueError as exc:                        # read twice: the shapes disagree
        assert "shape" in str(exc)
    else:                                            # read once: the first interface
        assert np.array_equal(out, base.reshape(2, 3))


def test_interface_dict_subclass_is_read_from_its_own_table():
    base = np.arange(4, dtype=np.int32)

    class Tricky(dict):
        def __getitem__(self, key):
            raise AssertionError("read through a method")

        def get(self, key, default=None):
            raise AssertionError("read through a method")

        def keys(self):
            raise AssertionError("read through a method")

    obj = Exposes(lambda _: Tricky(version=3, shape=(4,), typestr=base.dtype.str,
                                   data=(base.ctypes.data, True)), keep=base)
    assert np.array_equal(st.relayout(obj, "C"), base)


def test_shape_list_is_snapshot():
    """A list shape is copied once: entries are read once each."""
    base = np.arange(6, dtype=np.uint8)
    obj = exposing({"version": 3, "shape": [2, np.int64(3)], "typestr": "|u1",
                    "data": (base.ctypes.data, True)}, keep=base)
    assert st.layout_of(obj) == st.Layout((2, 3), itemsize=1)


# ---- hostile interfaces ---------------------------------------------------------------------

GOOD = {"version": 3, "shape": (2, 3), "typestr": NATIVE + "u2", "data": bytes(12)}


def with_(**changes):
    interface = {**GOOD, **changes}
    return {k: v for k, v in interface.items() if v is not _DROP}


_DROP = object()


def test_property_that_raises():
    def boom(_):
        raise RuntimeError("no pixels today")

    obj = Exposes(boom)
    with pytest.raises(ValueError, match=r"Exposes.__array_interface__ raised RuntimeError: "
                                         r"no pixels today") as info:
        st.layout_of(obj)
    assert isinstance(info.value.__cause__, RuntimeError)
    with pytest.raises(ValueError, match=r"^src: reading Exposes.__array_interface__ raised"):
        st.copyto(np.zeros((2, 3)), obj)


def test_property_that_raises_attribute_error_is_not_taken_for_absence():
    def missing(_):
        raise AttributeError("lazy attribute failed")

    with pytest.raises(ValueError, match=r"raised AttributeError: lazy attribute failed"):
        st.relayout(Exposes(missing), "C")


@pytest.mark.parametrize("value", [[("version", 3)], None, "interface", 3])
def test_property_that_returns_a_non_dict(value):
    with pytest.raises(ValueError, match=r"__array_interface__ must be a dict .* got "
                                         + type(value).__name__):
        st.relayout(Exposes(lambda _: value), "C")


BAD_FIELDS = [
    # (changes, exception, message fragment)
    ({"version": 2}, ValueError, r"\['version'\] must be 3 .* got int 2"),
    ({"version": _DROP}, ValueError, r"\['version'\] must be 3 .* got none"),
    ({"version": "3"}, ValueError, r"\['version'\] must be 3 .* got str '3'"),
    ({"mask": np.zeros((2, 3), bool)}, TypeError, r"\['mask'\] is set"),
    ({"typestr": NATIVE + "f3"}, TypeError, r"\['typestr'\] is '.f3': strided reads bool"),
    ({"typestr": "|O8"}, TypeError, r"\['typestr'\] is '\|O8'"),
    ({"typestr": NATIVE + "U2"}, TypeError, r"\['typestr'\] is '.U2'"),
    ({"typestr": "|b2"}, TypeError, r"\['typestr'\] is '\|b2'"),
    ({"typestr": FOREIGN + "u2"}, TypeError, r"-endian: strided reads elements of more than"),
    ({"typestr": "|u2"}, TypeError, r"'\|' \(byte order not applicable\)"),
    ({"typestr": b"<u2"}, ValueError, r"\['typestr'\] must be a str .* got bytes"),
    ({"typestr": _DROP}, ValueError, r"has no 'typestr'"),
    ({"shape": _DROP}, ValueError, r"has no 'shape'"),
    ({"shape": (2, -3)}, ValueError, r"\['shape'\]\[1\] must be in \[0, 2\*\*63\), got -3"),
    ({"shape": 6}, ValueError, r"\['shape'\] must be a tuple of ints, got int 6"),
    ({"shape": (2.0, 3)}, ValueError, r"\['shape'\]\[0\] must be an int, got float 2.0"),
    ({"shape": (True, 3)}, ValueError, r"\['shape'\]\[0\] must be an int, got bool"),
    ({"shape": (1,) * 65}, ValueError, r"\['shape'\] has 65 entries: at most 64"),
    ({"strides": (6,)}, ValueError, r"\['strides'\] \(6,\) has 1 entries but shape"),
    ({"strides": (6, 3)}, ValueError, r"byte stride 3 of axis 1 is not a multiple of the "
                                      r"itemsize 2"),
    ({"strides": (2**63, 2)}, ValueError, r"\['strides'\]\[0\] must be in \[-2\*\*63 \+ 1, "
                                           r"2\*\*63\), got 9223372036854775808"),
    ({"strides": "C"}, ValueError, r"\['strides'\] must be a tuple of ints, got str"),
    ({"strides": (6, 4)}, ValueError, r"reaches bytes 0..15 of 'data', which holds 12 bytes"),
    ({"strides": (-6, 2)}, ValueError, r"reaches bytes -6..5 of 'data'"),
    ({"offset": 2}, ValueError, r"reaches bytes 2..13 of 'data', which holds 12 bytes"),
    ({"offset": -1}, ValueError, r"\['offset'\] must be in \[0, 2\*\*63\), got -1"),
    ({"offset": "4"}, ValueError, r"\['offset'\] must be an int, got str"),
    ({"strides": (2**63 - 2, 2)}, ValueError, r"reach .* bytes from the first element: outside "
                                          r"int64"),
    ({"data": 1234}, ValueError, r"\['data'\] is a int, which has no buffer protocol"),
    ({"data": _DROP}, ValueError, r"\['data'\] is None \(the object's own buffer\), but the "
                                  r"object has no buffer protocol"),
    ({"data": memoryview(np.zeros(24, np.uint8))[::2]}, ValueError,
     r"\['data'\] \(memoryview\) exports no contiguous buffer"),
    ({"data": (0, False)}, ValueError, r"has address 0 \(NULL\) for shape \(2, 3\)"),
    ({"data": (1, 2, 3)}, ValueError, r"\(address, readonly\) pair .* got a tuple of 3"),
    ({"data": (-8, False)}, ValueError, r"\['data'\]\[0\] \(the address\) must be in \[0, "),
    ({"data": (2**64, False)}, ValueError, r"\(the address\) must be in \[0, 2\*\*64\)"),
    ({"data": (2**64 - 4, False)}, ValueError, r"reaches outside the address space"),
    ({"data": (4096, "no")}, ValueError, r"\['data'\]\[1\] \(readonly\) must be a bool, got str"),
    ({"data": (4096, False), "offset": 8}, ValueError, r"\['offset'\] is 8 but 'data' is an "
                                                       r"\(address, readonly\) tuple"),
    ({"descr": [("a", "<u2"), ("b", "<u2")]}, ValueError, r"\['descr'\] is .* disagrees with "
                                                          r"typestr"),
    ({"descr": [("", FOREIGN + "u2")]}, ValueError, r"disagrees with typestr"),
    ({"descr": "nonsense"}, ValueError, r"disagrees with typestr"),
]


@pytest.mark.parametrize(("changes", "error", "fragment"), BAD_FIELDS,
                         ids=[f"{next(iter(c))}-{i}" for i, (c, _, _) in enumerate(BAD_FIELDS)])
def test_malformed_interface_refused(changes, error, fragment):
    obj = exposing(with_(**changes))
    for call in (st.layout_of, lambda o: st.relayout(o, "C"), describe,
                 lambda o: st.view(o, st.Layout((1,), itemsize=2))):
        with pytest.raises(error, match=fragment):
            call(obj)
    with pytest.raises(error, match=r"^src: .*" + fragment):
        st.copyto(np.zeros((2, 3)), obj)
    with pytest.raises(error, match=r"^dst: .*" + fragment):
        st.copyto(obj, np.zeros((2, 3)))
    assert obj.reads == 6


def test_good_baseline_of_the_malformed_cases():
    """The interface the malformed cases start from is read fine."""
    assert np.array_equal(st.relayout(exposing(GOOD), "C"), np.zeros((2, 3), np.uint16))
    agreeing = with_(descr=[("", NATIVE + "u2")], mask=None, offset=0, strides=None)
    assert st.layout_of(exposing(agreeing)) == st.Layout((2, 3), itemsize=2)


def test_huge_shape_leaves_int64():
    """Broadcast strides reach one element of a huge shape: the element count leaves int64,
    which is an OverflowError (DESIGN.md: arithmetic that leaves int64)."""
    with pytest.raises(OverflowError, match="leaves int64"):
        st.layout_of(exposing(with_(shape=(2**40, 2**40), strides=(0, 0))))


def test_unsupported_object_message_names_the_protocols():
    with pytest.raises(TypeError, match=r"builtins.list is not an array strided can read: .*"
                                        r"buffer-protocol .*__array_interface__"):
        st.layout_of([1, 2, 3])
    with pytest.raises(TypeError, match=r"is not an array strided can read"):
        st.layout_of(Exposes)                  # a class, not an object


# ---- the buffer protocol ------------------------------------------------------------------


def test_memoryview_of_a_non_contiguous_slice():
    base = np.arange(48, dtype=np.int32).reshape(6, 8)
    piece = base[5:0:-2, 1::3]
    mv = memoryview(piece)
    assert not mv.contiguous
    assert st.layout_of(mv) == st.layout_of(piece) == st.Layout((3, 3), (-16, 3), itemsize=4)
    assert np.array_equal(st.relayout(mv, "C"), piece)
    out = np.zeros((3, 3), np.float64)
    st.copyto(out, mv)
    assert np.array_equal(out, piece)
    st.copyto(mv, np.full((3, 3), -7.0), casting="unsafe")         # a writeable destination
    assert (piece == -7).all() and (base >= -7).all()
    assert (base == -7).sum() == 9


def test_array_array_source_and_destination():
    src = array.array("h", [3, -1, 4, -1, 5, -9])
    assert st.layout_of(src) == st.Layout((6,), itemsize=2)
    assert np.array_equal(st.relayout(src, "C", dtype=np.float32),
                          np.array(src, np.float32))
    dst = array.array("f", [0.0] * 6)
    st.copyto(dst, src)
    assert list(dst) == [3.0, -1.0, 4.0, -1.0, 5.0, -9.0]


def test_bytearray_destination_and_bytes_refused():
    dst = bytearray(4)
    st.copyto(dst, np.array([1.9, 2.0, 300.0, -1.0], np.float32), casting="unsafe")
    assert list(dst) == [1, 2, 255, 0]           # float -> uint8: truncated, saturated
    st.copyto(dst, b"\x05\x06\x07\x08")
    assert bytes(dst) == b"\x05\x06\x07\x08"
    with pytest.raises(ValueError, match=r"dst is read-only \(bytes\): copyto cannot write"):
        st.copyto(b"\x00" * 4, np.zeros(4, np.uint8))
    with pytest.raises(ValueError, match=r"dst is read-only \(memoryview\)"):
        st.copyto(memoryview(b"\x00" * 4), np.zeros(4, np.uint8))


def test_ctypes_arrays():
    grid = (ctypes.c_int16 * 3 * 2)(*((ctypes.c_int16 * 3)(*r) for r in ((1, 2, 3), (4, 5, 6))))
    assert st.layout_of(grid) == st.Layout((2, 3), itemsize=2)
    assert np.array_equal(st.relayout(grid, (1, 0)), [[1, 2, 3], [4, 5, 6]])
    dst = (ctypes.c_double * 4)()
    st.copyto(dst, np.arange(4, dtype=np.int32))
    assert list(dst) == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match=r"numpy cannot read the buffer of c_void_p_Array_2 "
                                        r"\(format '<P'"):
        st.layout_of((ctypes.c_void_p * 2)())
    with pytest.raises(TypeError, match=r"^src: numpy cannot read the buffer"):
        st.copyto(np.zeros(2, np.uint64), (ctypes.c_void_p * 2)())


def test_released_or_closed_buffers_refused():
    mv = memoryview(b"abc")
    mv.release()
    with pytest.raises(ValueError, match=r"released memoryview"):
        st.layout_of(mv)
    m = mmap.mmap(-1, 16)
    assert st.layout_of(m) == st.Layout((16,), itemsize=1)
    m.close()
    with pytest.raises(ValueError, match=r"^x: .*closed"):
        st.relayout(m, "C")


def test_buffer_first_when_an_object_has_both():
    """An object with the buffer protocol is read through it, as numpy does, whatever its
    ``__array_interface__`` says; the interface is not read."""

    class Both(array.array):
        reads = 0

        @property
        def __array_interface__(self):
            type(self).reads += 1
            raise AssertionError("not read")

    both = Both("B", b"\x01\x02\x03")
    assert np.array_equal(st.relayout(both, "C"), [1, 2, 3])
    assert Both.reads == 0


def test_error_messages_survive_hostile_values():
    """The caller's values in a message: cut short, and a repr or str that raises is not
    raised from the error path."""

    class BadRepr:
        def __repr__(self):
            raise RuntimeError("no repr")

    with pytest.raises(ValueError, match=r"\['shape'\] must be a tuple of ints, got BadRepr "
                                         r"<BadRepr .*>$"):
        st.layout_of(exposing(with_(shape=BadRepr())))
    with pytest.raises(ValueError, match=r"\['shape'\] must be a tuple of ints, got str") as info:
        st.layout_of(exposing(with_(shape="x" * 10**6)))
    assert len(str(info.value)) < 200

    class Unsayable(Exception):
        def __str__(self):
            raise RuntimeError("no str")

    def boom(_):
        raise Unsayable

    with pytest.raises(ValueError, match=r"raised Unsayable: \(its message could not be read\)"):
        st.layout_of(Exposes(boom))
