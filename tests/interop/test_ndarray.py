"""The core's readers of other libraries' memory: buffer_address and element_strides."""

from __future__ import annotations

import array
import mmap

import numpy as np
import pytest

from strided import _core
from strided.interop import _ndarray


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.arange(12.0).reshape(3, 4),
        lambda: np.arange(12.0).reshape(3, 4)[::-1, 1::2],
        lambda: np.arange(12.0).reshape(3, 4).T,
        lambda: np.zeros((0, 3)),
        lambda: np.array(5),
        lambda: np.zeros(3, dtype=[("a", "u1"), ("b", "<f8")]),
    ],
)
@pytest.mark.parametrize("writeable", [True, False])
def test_buffer_address_is_numpy_first_element(make, writeable):
    a = make()
    a.flags.writeable = writeable
    address, readonly = _ndarray.buffer_address(a)
    assert (address, readonly) == a.__array_interface__["data"]


def test_buffer_address_of_builtin_buffers():
    b = bytearray(b"abcdef")
    address, readonly = _ndarray.buffer_address(b)
    assert not readonly
    assert address == np.frombuffer(b, np.uint8).__array_interface__["data"][0]
    assert _ndarray.buffer_address(b"xyz")[1] is True
    assert _ndarray.buffer_address(memoryview(b)[2::2])[0] == address + 2
    assert _ndarray.buffer_address(array.array("d", [1.0]))[1] is False
    m = mmap.mmap(-1, 16)
    assert _ndarray.buffer_address(m)[1] is False
    m.close()


@pytest.mark.parametrize("obj", [None, 3, "text", [1, 2], object()])
def test_buffer_address_refuses_objects_without_a_buffer(obj):
    with pytest.raises(TypeError):
        _ndarray.buffer_address(obj)


def test_buffer_address_reports_numpy_refusal():
    with pytest.raises(ValueError, match="buffer"):
        _ndarray.buffer_address(np.zeros(2, "M8[s]"))


@pytest.mark.parametrize(
    "byte_strides, sizes, itemsize, expected",
    [
        ((16, 4), (3, 4), 4, (4, 1)),
        ((-8, 0), (2, 5), 8, (-1, 0)),
        ((7, 4), (1, 3), 4, (0, 1)),        # a size-1 dim: its stride cannot matter
        ((5, 3), (0, 3), 4, (0, 0)),        # an empty array: no stride matters
        ((), (), 2, ()),
    ],
)
def test_element_strides(byte_strides, sizes, itemsize, expected):
    assert _core.element_strides(byte_strides, sizes, itemsize) == expected


def test_element_strides_refuses_partial_elements():
    with pytest.raises(ValueError, match="byte stride 5 of axis 0 is not a multiple of the "
                                         "itemsize 4"):
        _core.element_strides((5,), (2,), 4)
    with pytest.raises(ValueError, match="itemsize"):
        _core.element_strides((4,), (2,), 0)
    with pytest.raises(ValueError, match="must match"):
        _core.element_strides((4, 4), (2,), 4)
