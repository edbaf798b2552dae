"""The one element-type table (strided._dtypes): the compiled kernels, numpy and DLPack agree
with it, and its casting rules are numpy's (bfloat16 aside, which numpy has not)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from strided import _convert, _dtypes
from strided.interop import _record

NUMPY_NAMES = [name for name in _dtypes.TYPE_NAMES if name != "bfloat16"]


def test_the_kernels_table_is_the_python_table():
    # _kernels/types.h's st_type_size, read through the engine, code by code
    assert _convert._type_sizes() == tuple(_dtypes.ITEMSIZES[n] for n in _dtypes.TYPE_NAMES)
    assert [t.code for t in _dtypes.TYPES] == list(range(len(_dtypes.TYPES)))
    assert _dtypes.CODES == {name: code for code, name in enumerate(_dtypes.TYPE_NAMES)}


@pytest.mark.parametrize("name", NUMPY_NAMES)
def test_numpy_agrees_on_size_and_kind(name):
    dtype = np.dtype(name)
    row = _dtypes.TYPES[_dtypes.CODES[name]]
    assert (row.itemsize, row.kind) == (dtype.itemsize, dtype.kind)
    assert row.dlpack == (row.dlpack[0], 8 * dtype.itemsize, 1)


def test_dlpack_codes_are_dlpacks():
    # DLPack's DLDataTypeCode: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLComplex 5, kDLBool 6
    want = {"b": 6, "i": 0, "u": 1, "f": 2, "c": 5}
    for row in _dtypes.TYPES:
        assert row.dlpack[0] == (4 if row.name == "bfloat16" else want[row.kind]), row
    assert _record.DLPACK_TYPES is _dtypes.DLPACK_TYPES   # the adapters read the one table


@pytest.mark.parametrize("casting", _dtypes.CASTINGS)
def test_can_cast_is_numpys(casting):
    for src, dst in itertools.product(NUMPY_NAMES, repeat=2):
        want = bool(np.can_cast(np.dtype(src), np.dtype(dst), casting))
        assert _dtypes.can_cast(src, dst, casting) == want, (src, dst, casting)


def test_bfloat16_rules():
    assert _dtypes.can_cast("uint8", "bfloat16", "safe")
    assert not _dtypes.can_cast("int16", "bfloat16", "safe")
    assert _dtypes.can_cast("bfloat16", "float32", "safe")
    assert not _dtypes.can_cast("bfloat16", "float16", "safe")
    assert _dtypes.can_cast("bfloat16", "float16", "same_kind")
    assert _dtypes.can_cast("float64", "bfloat16", "same_kind")
    assert not _dtypes.can_cast("bfloat16", "int8", "same_kind")


def test_compute_type_is_numpys_result_type_with_float32():
    for name in NUMPY_NAMES:
        if np.dtype(name).kind != "c":   # (no affine step for complex values: check_pair)
            want = np.result_type(np.dtype(name), np.float32).name
            assert _dtypes.compute_type(name) == want, name
    assert _dtypes.compute_type("bfloat16") == "float32"


def test_bad_names_and_castings_are_named():
    with pytest.raises(TypeError, match=r"src_type must be one of bool, int8.*got 'float128'"):
        _dtypes.can_cast("float128", "int8", "safe")
    with pytest.raises(TypeError, match=r"dst_type must be one of .*got 3"):
        _dtypes.check_pair(3, "int8")
    with pytest.raises(ValueError, match=r"casting must be one of 'no', .*got 'sometimes'"):
        _dtypes.can_cast("int8", "int8", "sometimes")
    with pytest.raises(TypeError, match="imaginary parts"):
        _dtypes.check_pair("float32", "complex64")
    with pytest.raises(TypeError, match="bool destination"):
        _dtypes.check_pair("bool", "float32", affine=True)


def test_the_engine_re_exports_the_table():
    assert _convert.TYPE_NAMES is _dtypes.TYPE_NAMES
    assert _convert.can_cast is _dtypes.can_cast
    assert _convert.CASTINGS is _dtypes.CASTINGS
