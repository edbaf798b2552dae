"""``strided.copyto``'s compiled entry (``strided._copy.copyto_entry``).

Calls of ``copyto`` go through a compiled function of the documented signature, which serves
plain copies itself (the keyword-only defaults of a Python function cost a dict lookup each,
about 175 ns of a 400 ns small copy) and hands every other call to the documented Python
function (``copyto.__wrapped__``). Both must be the same function to a caller: the same
parameters, the same results on every route, the same errors.
"""

from __future__ import annotations

import inspect
import pickle
from typing import Any

import numpy as np
import pytest

import strided as st
from strided import copy as copy_module

PYTHON_COPYTO = st.copyto.__wrapped__


def test_the_entry_has_the_documented_signature_and_docstring() -> None:
    own = inspect.signature(st.copyto, follow_wrapped=False)
    documented = inspect.signature(PYTHON_COPYTO)
    assert [(p.name, p.kind, p.default) for p in own.parameters.values()] == [
        (p.name, p.kind, p.default) for p in documented.parameters.values()]
    assert inspect.signature(st.copyto) == documented     # what help() and Sphinx show
    assert st.copyto.__doc__ == PYTHON_COPYTO.__doc__
    assert (st.copyto.__name__, st.copyto.__qualname__, st.copyto.__module__) == (
        "copyto", "copyto", "strided.copy")
    assert copy_module.copyto is st.copyto
    assert pickle.loads(pickle.dumps(st.copyto)) is st.copyto   # by reference (dask tasks)


def _pair(dtype: str = "float32") -> tuple[np.ndarray, np.ndarray]:
    src = (np.arange(24, dtype=np.float64).reshape(2, 3, 4) - 7.25).astype(dtype)
    return np.zeros((2, 4, 3), np.float32).transpose(0, 2, 1), src


#: every route: the entry's fast path, its hand-over to the checked path, and the decorated
#: function (dtype, image and rounding arguments, and a "fused" that is not the interned str)
ROUTES: dict[str, dict[str, Any]] = {
    "plain": {},
    "plain, threads": {"num_threads": 2},
    "converting": {"casting": "unsafe"},
    "scaled": {"scale": 0.5, "shift": 1.0},
    "image form": {"mean": 1.0, "std": 2.0},
    "mean": {"mean": 1.5},
    "std": {"std": 2.0},
    "max_value": {"max_value": 4.0},
    "rounding, equal str": {"rounding": "".join(["fu", "sed"])},
}


@pytest.mark.parametrize("src_dtype", ["float32", "float64", "int16"])
@pytest.mark.parametrize("route", ROUTES)
def test_every_route_gives_the_documented_functions_result(route: str, src_dtype: str) -> None:
    kwargs = ROUTES[route]
    ours, src = _pair(src_dtype)
    theirs, _ = _pair(src_dtype)
    if src_dtype != "float32" and "casting" not in kwargs:
        kwargs = {**kwargs, "casting": "unsafe"}
    st.copyto(ours, src, **kwargs)
    PYTHON_COPYTO(theirs, src, **kwargs)
    assert np.array_equal(ours, theirs)
    assert ours.any()


def test_the_other_routes_of_the_documented_function() -> None:
    """torchvision's rounding, and 4-bit containers (dst_dtype / src_dtype)."""
    src = np.arange(12, dtype=np.uint8).reshape(3, 4) * 20
    ours, theirs = np.zeros((3, 4), np.float32), np.zeros((3, 4), np.float32)
    form = {"mean": 0.25, "std": 0.5, "max_value": 255, "rounding": "torchvision"}
    st.copyto(ours, src, **form)
    PYTHON_COPYTO(theirs, src, **form)
    assert np.array_equal(ours, theirs) and ours.any()
    values = np.array([[-8, -1, 0, 7], [3, -4, 5, 6]], np.int8)
    packed, unpacked = np.zeros((2, 2), np.uint8), np.zeros((2, 4), np.int8)
    st.copyto(packed, values, dst_dtype="int4")
    st.copyto(unpacked, packed, src_dtype="int4")
    assert np.array_equal(unpacked, values)


def test_the_entry_raises_what_the_checked_path_raises() -> None:
    dst, src = _pair("complex64")
    for kwargs in ({}, {"rounding": "nearest"}, {"num_threads": -2}, {"casting": 3}):
        with pytest.raises((TypeError, ValueError)) as ours:
            st.copyto(dst, src, **kwargs)
        with pytest.raises(type(ours.value)) as theirs:
            PYTHON_COPYTO(dst, src, **kwargs)
        assert str(ours.value) == str(theirs.value)
    assert not dst.any()


def test_bad_calls_are_type_errors_naming_copyto() -> None:
    dst, src = _pair()
    with pytest.raises(TypeError, match="copyto"):
        st.copyto(dst)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"copyto.*'order'"):
        st.copyto(dst, src, order="C")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="copyto"):
        st.copyto(dst, src, "unsafe")  # type: ignore[misc]
    assert not dst.any()


def test_torch_tensors_and_buffers_take_the_entry_too() -> None:
    torch = pytest.importorskip("torch")
    src = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    dst = torch.zeros(4, 3).t()
    st.copyto(dst, src)
    assert torch.equal(dst, src)
    buf = bytearray(12)
    st.copyto(buf, bytes(range(12)))
    assert buf == bytes(range(12))
