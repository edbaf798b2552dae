"""``scale``, ``shift`` and ``axis`` are read by one set of rules, whatever the call and the size.

:func:`strided._core.load_parameter` reads every ``scale``/``shift`` (of ``copyto``,
``relayout``, ``to_blocked``, ``from_blocked`` and the raw ``convert_memory``) before any array,
into None, a float or a tuple of floats. The forms it accepts give the value of the same call
with plain Python floats; the rest is refused with an error that names the argument, as
``Layout`` refuses sequences: mappings (a dict gave its keys), sets (no order), iterators (a
generator is consumed by its first reader), bytes (``b'\\x05'`` was read as 5.0), strings,
bools, complex numbers, datetime and timedelta values, masked arrays (a masked entry became
NaN). An ``axis`` is checked even when nothing is converted, and parameters are checked for
empty arrays too.
"""

from __future__ import annotations

import array
import fractions

import numpy as np
import pytest

import strided as st
from strided import _convert, _core

X = np.arange(12, dtype=np.float32).reshape(4, 3) - 5.5


def _reference(scale, shift):
    out = np.empty((4, 3), np.float32)
    st.copyto(out, X, scale=scale, shift=shift, axis=1)
    return out


ACCEPTED_VECTORS = {
    "list": [0.5, 2.0, -1.0],
    "tuple": (0.5, 2.0, -1.0),
    "float32 array": np.array([0.5, 2.0, -1.0], np.float32),
    "float16 array": np.array([0.5, 2.0, -1.0], np.float16),
    "strided array": np.array([0.5, 9, 2.0, 9, -1.0, 9])[::2],
    "object array": np.array([0.5, 2.0, -1.0], object),
    "array.array": array.array("d", [0.5, 2.0, -1.0]),
    "numpy scalars": [np.float64(0.5), np.float32(2.0), np.int8(-1)],
    "fractions": [fractions.Fraction(1, 2), 2, -1],
}


@pytest.mark.parametrize("name", list(ACCEPTED_VECTORS))
def test_vector_forms_give_the_plain_floats_result(name):
    value = ACCEPTED_VECTORS[name]
    assert _core.load_parameter(value, "scale") == (0.5, 2.0, -1.0)
    assert np.array_equal(_reference(value, value), _reference((0.5, 2.0, -1.0),
                                                               (0.5, 2.0, -1.0)))


@pytest.mark.parametrize("value", [2, 2.0, np.float32(2), np.int64(2), np.array(2.0),
                                   np.array(2, np.uint8), fractions.Fraction(4, 2)], ids=repr)
def test_number_forms_give_the_plain_float(value):
    assert _core.load_parameter(value, "shift") == 2.0
    assert type(_core.load_parameter(value, "shift")) is float


def test_torch_parameters():
    torch = pytest.importorskip("torch")
    assert _core.load_parameter(torch.tensor([0.5, 2.0, -1.0]), "scale") == (0.5, 2.0, -1.0)
    assert _core.load_parameter(torch.tensor(2.0, dtype=torch.bfloat16), "scale") == 2.0
    with pytest.raises(TypeError, match="scale must hold real numbers"):
        _core.load_parameter(torch.tensor([1 + 1j]), "scale")
    with pytest.raises(TypeError, match="not a bool"):
        _core.load_parameter(torch.tensor([True]), "scale")


def _one_value():
    yield 2.0


REFUSED = {
    "dict": ({0: 5.0, 1: 6.0, 2: 7.0}, TypeError, "got dict"),
    "set": ({5.0, 6.0, 7.0}, TypeError, "got set"),
    "generator": (_one_value(), TypeError, "got generator"),
    "bytes": (b"\x05", TypeError, "got bytes"),
    "bytearray": (bytearray(b"\x05\x06\x07"), TypeError, "got bytearray"),
    "str": ("2", TypeError, "got str"),
    "bool": (True, TypeError, "not a bool"),
    "numpy bool": (np.bool_(True), TypeError, "not a bool"),
    "bool item": ([1.0, True, 2.0], TypeError, r"scale\[1\] must be a real number, not a bool"),
    "bool array": (np.array([True, False, True]), TypeError, "not a bool"),
    "complex": (1 + 2j, TypeError, "got complex"),
    "complex array": (np.ones(3, np.complex64), TypeError, "dtype complex64"),
    "timedelta": (np.timedelta64(5, "s"), TypeError, "dtype timedelta64"),
    "datetime": (np.datetime64("2020-01-01"), TypeError, "dtype datetime64"),
    "datetime array": (np.array(["2020-01-01"] * 3, "M8[D]"), TypeError, "dtype datetime64"),
    "masked array": (np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0]), TypeError, "masked array"),
    "unmasked masked array": (np.ma.array([1.0, 2.0, 3.0]), TypeError, "masked array"),
    "nested": ([[1.0, 2.0, 3.0]], TypeError, r"scale\[0\] must be a real number"),
    "2-D array": (np.ones((1, 3)), ValueError, "got 2 dimensions"),
    "string item": ([1.0, "2", 3.0], TypeError, r"scale\[1\]"),
    "None item": ([1.0, None, 3.0], TypeError, r"scale\[1\]"),
    "huge int": (10**400, OverflowError, "too large for a float"),
    "huge range": (range(10**12), ValueError, "at most"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_forms_name_the_argument(name):
    value, error, words = REFUSED[name]
    with pytest.raises(error, match=words) as info:
        st.copyto(np.zeros((4, 3), np.float32), X, scale=value, axis=1)
    assert "scale" in str(info.value)


@pytest.mark.parametrize("name", ["dict", "set", "bytes", "masked array", "datetime"])
def test_every_entry_refuses_the_same_forms(name):
    value, error, words = REFUSED[name]
    x4 = np.ones((1, 3, 2, 2), np.float32)
    calls = {
        "relayout": lambda: st.relayout(X, "F", dtype=np.int8, shift=value, axis=1),
        "to_blocked": lambda: st.to_blocked(x4, "NCHW4", dtype=np.int8, shift=value),
        "from_blocked": lambda: st.from_blocked(np.ones((1, 1, 2, 2, 4), np.float32), "NCHW4",
                                                channels=3, shift=value),
        "convert_memory": lambda: _convert.convert_memory(
            0, 0, (0,), (1,), (1,), "float32", "float32", shift=value),
    }
    for what, call in calls.items():
        with pytest.raises(error, match=words) as info:
            call()
        assert "shift" in str(info.value), what


def test_parameters_of_empty_arrays_are_checked():
    empty = np.zeros((0, 3), np.float32)
    with pytest.raises(ValueError, match="scale has 2 values but axis 1 has 3"):
        st.copyto(np.zeros((0, 3), np.float32), empty, scale=[1.0, 2.0], axis=1)
    with pytest.raises(TypeError, match="got dict"):
        st.copyto(np.zeros((0, 3), np.float32), empty, scale={1: 2})
    with pytest.raises(ValueError, match="scale has 2 values"):
        st.to_blocked(np.zeros((1, 0, 2, 2), np.float32), "NCHW4", scale=[1.0, 2.0])
    with pytest.raises(TypeError, match="got set"):
        st.relayout(empty, "F", shift={1.0})


@pytest.mark.parametrize("axis", [99, -3, 2])
def test_axis_is_checked_when_nothing_converts(axis):
    a = np.zeros((4, 3), np.float32)
    with pytest.raises(ValueError, match=f"axis {axis} is out of range for arrays of 2"):
        st.copyto(a, X, axis=axis)
    with pytest.raises(ValueError, match=f"axis {axis} is out of range"):
        st.copyto(np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32), axis=axis)


@pytest.mark.parametrize("axis", [True, 1.0, "1", None.__class__])
def test_axis_must_be_an_integer(axis):
    with pytest.raises(TypeError, match="axis"):
        st.copyto(np.zeros((4, 3), np.float32), X, scale=[1.0, 2.0, 3.0], axis=axis)


def test_a_vector_item_that_changes_the_vector_changes_nothing_read():
    class Clearing(float):
        def __float__(self):
            scale.clear()
            return 2.0

    scale = [1.0, 2.0, 3.0]
    scale[1] = Clearing(2.0)
    out = np.zeros((4, 3), np.float32)
    st.copyto(out, X, scale=scale, axis=1)
    assert np.array_equal(out, X * np.float32([1.0, 2.0, 3.0]))


def test_dtype_errors_name_the_argument():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="dtype"):
        st.relayout(X, "F", dtype=torch.float8_e4m3fn)
    with pytest.raises(TypeError, match="dtype"):
        st.relayout(torch.ones(2, 3), "F", dtype="float8")
    # a torch dtype of a type numpy has is the numpy dtype of that name
    assert st.relayout(X, "F", dtype=torch.float16).dtype == np.float16
