"""The compiled fast paths of the adapters agree with the checked paths, or step aside.

``copyto`` and ``layout_of`` first try ``strided.interop._ndarray`` (plain ndarrays, read from
numpy's C struct) and ``strided.interop._tensor`` (plain CPU torch tensors, read through
DLPack's C exchange API). Each either gives exactly what the checked path (``describe``, the
interop layer) gives, or declines and leaves the case to it. These tests hold them to that:

- ``layout_of_array`` / ``layout_of_tensor`` equal ``describe(x).layout`` on random layouts
  (size-0 and size-1 dims, permuted, sliced, padded, stride 0, numpy's negative strides), and
  return None for what they do not read (subclasses, non-arrays, unstrided tensors);
- a torch copy by the fast path writes what torch's own ``copy_`` would (the oracle is torch),
  bumps the version counter once, and leaves every other byte of the storage alone, also when
  source and destination share memory;
- whatever the fast path must not copy (a destination that requires grad, lazy bits, a
  subclass, another dtype or shape, a destination overlapping itself) reaches the checked path,
  which refuses it with its own message or copies it by value;
- tensors the exchange API refuses (sparse, quantized, meta, nested, mkldnn) are decided by
  the checked path, in a subprocess in case a torch build crashes on them.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst
from strategies import copy_sizes, layouts, nonoverlapping_strides, source_strides

import strided as st
from strided.interop import _ndarray, _tensor, describe
from strided.interop._record import check_view

HAVE_TORCH = importlib.util.find_spec("torch") is not None
if HAVE_TORCH:
    import torch

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed")


def _numpy_view(layout, dtype=np.int16):
    """An ndarray over a fresh buffer laid out as ``layout`` (its offset moved to 0)."""
    lo, hi = layout.span if layout.size else (0, 0)
    base = np.arange(max(hi - lo + 1, 1), dtype=dtype)
    first = layout.offset - lo if layout.size else 0     # element (0, ..., 0) in base
    byte_strides = tuple(s * base.itemsize for s in layout.strides)
    return np.lib.stride_tricks.as_strided(base[first:], layout.sizes, byte_strides,
                                           writeable=False)


# ---- layout_of -------------------------------------------------------------------------------


@settings(max_examples=300)
@given(layouts(itemsizes=(1, 2, 4, 8)))
def test_layout_of_array_equals_describes_layout(layout):
    dtype = {1: np.uint8, 2: np.int16, 4: np.float32, 8: np.complex64}[layout.itemsize]
    a = _numpy_view(layout, dtype)
    fast = _ndarray.layout_of_array(a)
    assert fast == describe(a).layout
    assert st.layout_of(a) == fast
    assert fast.sizes == a.shape and fast.itemsize == a.itemsize


@pytest.mark.parametrize("x", [
    np.zeros((2, 3)).view(np.matrix),        # a subclass: its own rules, the checked path's
    np.ma.masked_array(np.zeros(3)),
    b"abc", bytearray(4), memoryview(b"ab"), [1, 2], 3.0, None,
], ids=lambda x: type(x).__name__)
def test_layout_of_array_declines_what_it_does_not_read(x):
    assert _ndarray.layout_of_array(x) is None


def test_layout_of_array_declines_unusual_numpy_arrays():
    assert _ndarray.layout_of_array(np.zeros(3, dtype="V0")) is None      # no bytes per item
    odd = np.lib.stride_tricks.as_strided(np.zeros(8, np.int32), (2,), (6,))
    assert _ndarray.layout_of_array(odd) is None        # byte strides not whole elements
    with pytest.raises(ValueError, match="multiple"):
        st.layout_of(odd)                                # the checked path explains


# ---- view ------------------------------------------------------------------------------------


def _checked_view(base, layout):
    """The checked path of strided.view (describe, check_view, the adapter's view)."""
    record = describe(base)
    check_view(layout, record)
    return record.adapter.view(base, record, layout, None)


@settings(max_examples=300)
@given(layouts(itemsizes=(1, 2, 4, 8)), layouts(itemsizes=(1,)), hst.booleans())
def test_view_array_equals_the_checked_view_or_declines(base_layout, wanted, readonly):
    """On random bases (any strides) and random layouts: the same array as the checked path
    (values, strides, writeability) whenever the layout fits base's span, else None and the
    checked path's error."""
    dtype = {1: np.uint8, 2: np.int16, 4: np.float32, 8: np.complex64}[base_layout.itemsize]
    base = np.array(_numpy_view(base_layout, dtype))      # a writeable copy, C order...
    base = _numpy_view(base_layout, dtype) if readonly else base
    layout = st.Layout(wanted.sizes, wanted.strides, offset=wanted.offset,
                       itemsize=base.itemsize)
    fast = _ndarray.view_array(base, layout)
    try:
        checked = _checked_view(base, layout)
    except ValueError:
        assert fast is None
        with pytest.raises(ValueError):
            st.view(base, layout)
        return
    if fast is None:        # declined: an empty base or layout, which the checked path takes
        assert base.size == 0 or layout.size == 0
        return
    assert fast.shape == checked.shape and fast.strides == checked.strides
    assert fast.dtype == checked.dtype and np.array_equal(fast, checked)
    assert fast.flags.writeable == checked.flags.writeable
    assert fast.__array_interface__["data"][0] == checked.__array_interface__["data"][0]


def test_view_array_keeps_base_alive_and_writes_through():
    base = np.arange(12, dtype=np.float64)
    v = st.view(base, st.Layout((2, 3), (-6, 2), offset=7, itemsize=8))
    assert v.base is base and v.flags.writeable
    v[1, 2] = -1
    assert base[5] == -1
    del base
    assert v[0].tolist() == [7.0, 9.0, 11.0]


def test_view_array_of_ml_dtypes_bfloat16_is_the_checked_view():
    """ml_dtypes' bfloat16 (a numpy user type the fast path knows by name) keeps its dtype."""
    ml = pytest.importorskip("ml_dtypes")
    base = np.arange(12, dtype=np.float32).astype(ml.bfloat16)
    layout = st.Layout((2, 3), (-6, 2), offset=7, itemsize=2)
    fast = _ndarray.view_array(base, layout)
    checked = _checked_view(base, layout)
    assert fast is not None and fast.dtype == checked.dtype == base.dtype
    assert fast.strides == checked.strides and np.array_equal(fast, checked)
    assert fast.base is base


def test_view_array_marks_aliasing_views_and_views_of_read_only_bases_read_only():
    base = np.arange(6, dtype=np.int32)
    assert not st.view(base, st.Layout((2, 3), (0, 1), itemsize=4)).flags.writeable
    windows = st.view(base, st.Layout((4, 3), (1, 1), itemsize=4))     # sliding windows
    assert not windows.flags.writeable
    base.flags.writeable = False
    assert not st.view(base, st.Layout((6,), itemsize=4)).flags.writeable


@settings(max_examples=200)
@given(layouts(itemsizes=(1,)), hst.sampled_from([bytes, bytearray]))
def test_views_of_bytes_are_the_checked_views(wanted, kind):
    """bytes and bytearray are viewed as numpy's uint8 over them (the fast path of view):
    the values, the address, the writeability and the errors of the checked path."""
    data = kind(range(40))
    base = np.frombuffer(data, np.uint8)
    try:
        checked = _checked_view(base, wanted)
    except ValueError as e:
        with pytest.raises(ValueError, match=re.escape(str(e)[:30])):
            st.view(data, wanted)
        return
    fast = st.view(data, wanted)
    assert fast.dtype == np.uint8 and fast.shape == checked.shape
    assert np.array_equal(fast, checked)
    assert fast.flags.writeable == (kind is bytearray and not wanted.overlaps)
    if wanted.size:
        assert fast.__array_interface__["data"][0] == checked.__array_interface__["data"][0]
    if kind is bytearray and fast.size and fast.flags.writeable:
        fast[(0,) * fast.ndim] = 255                 # element 0 lies at the offset
        assert data[wanted.offset] == 255


@pytest.mark.parametrize("base", [
    np.zeros((2, 3)).view(np.matrix),
    np.zeros(6, dtype=object),
    np.zeros(6, dtype=">i4"),                 # byte-swapped: the checked path's
    np.zeros(0, dtype=np.int32),
    bytearray(6),
], ids=lambda x: f"{type(x).__name__}-{getattr(x, 'dtype', '')}")
def test_view_array_declines_what_the_checked_path_decides(base):
    itemsize = getattr(base, "itemsize", 1)
    assert _ndarray.view_array(base, st.Layout((1,), itemsize=itemsize)) is None
    assert _ndarray.view_array(np.zeros(4, np.int8), (4,)) is None        # not a Layout
    assert _ndarray.view_array(np.zeros(4, np.int8), st.Layout((4,), itemsize=2)) is None
    assert _ndarray.view_array(np.zeros(4, np.int8), st.Layout((4,), bits=4)) is None


@needs_torch
@settings(max_examples=200)
@given(layouts(itemsizes=(4,)), layouts(itemsizes=(1,)))
def test_quick_torch_view_is_the_checked_views_call_or_declines(base_layout, wanted):
    from strided.interop import _tensor

    base = torch.from_numpy(np.array(_numpy_view(base_layout, np.float32)))
    layout = st.Layout(wanted.sizes, wanted.strides, offset=wanted.offset, itemsize=4)
    fast = _tensor.view_tensor(base, layout)
    try:
        checked = _checked_view(base, layout)
    except ValueError:
        assert fast is None
        return
    if fast is None:    # declined: empty, negative strides, outside base's span: the checked
        lo, hi = st.layout_of(base).span        # path's
        assert layout.size == 0 or min(layout.strides) < 0 or not lo <= layout.span[0] \
            <= layout.span[1] <= hi
        return
    assert fast.shape == checked.shape and fast.stride() == checked.stride()
    assert fast.storage_offset() == checked.storage_offset()
    assert fast.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
    assert torch.equal(fast, checked)


@needs_torch
def test_quick_torch_view_declines_what_needs_the_checked_paths_care():
    from strided.interop import _tensor

    L = st.Layout((2,), itemsize=4)
    leaf = torch.zeros(4, requires_grad=True)
    assert _tensor.view_tensor(torch.nn.Parameter(torch.zeros(4)), L) is None   # a subclass
    assert _tensor.view_tensor(leaf[1:], L) is None       # a view in a graph: its root's grads
    assert _tensor.view_tensor(torch.zeros(4, device="meta"), L) is None
    with warnings.catch_warnings():     # "nested tensors are in prototype stage"
        warnings.simplefilter("ignore", UserWarning)
        nested = torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)])
    assert _tensor.view_tensor(nested, L) is None
    assert _tensor.view_tensor(torch.zeros(4), st.Layout((2,), (-1,), offset=1, itemsize=4)) \
        is None
    assert _tensor.view_tensor(torch.zeros(4), st.Layout((2,), itemsize=8)) is None
    assert _tensor.view_tensor(torch.zeros(4)[1:], st.Layout((4,), itemsize=4)) is None
    assert _tensor.view_tensor(np.zeros(4, np.float32), L) is None
    # a base starting inside its storage: the view's storage offset counts from the storage
    base = torch.arange(20.0)[5:15]
    v = _tensor.view_tensor(base, st.Layout((2, 3), (4, 2), offset=1, itemsize=4))
    assert v.storage_offset() == 6 and v.stride() == (4, 2)
    assert v.tolist() == [[6.0, 8.0, 10.0], [10.0, 12.0, 14.0]]
    v[0, 0] = -1.0
    assert base[1].item() == -1.0
    v = _tensor.view_tensor(base, st.Layout((3,), (3,), itemsize=4))   # no offset: base's
    assert v.storage_offset() == 5 and v.tolist() == [5.0, 8.0, 11.0]
    # a leaf requiring grad is viewed in the graph, as the checked path's as_strided is
    v = _tensor.view_tensor(leaf, L)
    assert v is not None and v.requires_grad
    (v * torch.tensor([2.0, 3.0])).sum().backward()
    assert leaf.grad.tolist() == [2.0, 3.0, 0.0, 0.0]


def test_view_fast_is_the_array_or_the_tensor_fast_path_or_declines():
    """``strided.view``'s one compiled call: an ndarray's view from numpy's C API, anything
    else to the tensor path, which declines what is not a plain CPU tensor."""
    base = np.arange(12, dtype=np.float32)
    layout = st.Layout((2, 3), (4, 2), offset=1, itemsize=4)
    v = _ndarray.view_fast(base, layout)
    assert v.base is base and v.tolist() == [[1.0, 3.0, 5.0], [5.0, 7.0, 9.0]]
    assert v.strides == (16, 8)
    for other in ([1.0] * 12, b"x" * 48, bytearray(48), memoryview(base), base.view(np.matrix)):
        assert _ndarray.view_fast(other, layout) is None
    assert _ndarray.view_fast(base, layout.sizes) is None          # not a Layout
    if HAVE_TORCH:
        t = torch.arange(12.0)
        v = _ndarray.view_fast(t, layout)
        assert v.stride() == (4, 2) and v.tolist() == [[1.0, 3.0, 5.0], [5.0, 7.0, 9.0]]
        assert v.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()


class _SubLayout(st.Layout):
    """A Layout subclass: the fast paths leave it to the checked path (which may read a
    property where Layout has a slot)."""

    __slots__ = ()


def test_the_fast_paths_read_a_layouts_fields_safely():
    """The fast paths read an exact Layout's fields from its slots (``_slots.pxd``): one never
    initialised reads as an AttributeError, not a NULL; subclasses go to the checked path."""
    empty = object.__new__(st.Layout)
    base = np.zeros(8, np.float32)
    with pytest.raises(AttributeError):
        _ndarray.view_array(base, empty)
    with pytest.raises(AttributeError):
        st.view(base, empty)
    assert _ndarray.view_array(base, _SubLayout((8,), itemsize=4)) is None
    if HAVE_TORCH:
        with pytest.raises(AttributeError):
            _tensor.view_tensor(torch.zeros(8), empty)
        assert _tensor.view_tensor(torch.zeros(8), _SubLayout((8,), itemsize=4)) is None


@needs_torch
@settings(max_examples=300)
@given(layouts(itemsizes=(1, 2, 4, 8)), hst.sampled_from(["uint8", "int16", "float32",
                                                           "float64", "bfloat16", "bool"]))
def test_layout_of_tensor_equals_describes_layout(layout, dtype):
    strides = tuple(abs(s) for s in layout.strides)       # torch holds no negative strides
    size = 1 + sum((n - 1) * s for n, s in zip(layout.sizes, strides)) if layout.size else 0
    base = torch.zeros(size + 3, dtype=getattr(torch, dtype))
    t = torch.as_strided(base, layout.sizes, strides, 3 if layout.size else 0)
    fast = _tensor.layout_of_tensor(t)
    assert fast == describe(t).layout
    assert st.layout_of(t) == fast
    assert fast.sizes == tuple(t.shape) and fast.itemsize == t.element_size()


@needs_torch
def test_layout_of_tensor_reads_views_torch_makes():
    x = torch.arange(2 * 3 * 4 * 5, dtype=torch.float32).reshape(2, 3, 4, 5)
    for t in (x, x.permute(0, 2, 3, 1), x[:, 1:, ::2], x[:, :1].expand(2, 7, 4, 5), x[0, 0, 0],
              x[:0], x.contiguous(memory_format=torch.channels_last), x.t() if x.ndim == 2
              else x.transpose(1, 3), torch.tensor(5.0)):
        assert _tensor.layout_of_tensor(t) == describe(t).layout


@needs_torch
def test_layout_of_tensor_declines_subclasses_and_non_tensors():
    assert _tensor.layout_of_tensor(torch.nn.Parameter(torch.zeros(3))) is None
    assert _tensor.layout_of_tensor(np.zeros(3)) is None
    assert _tensor.layout_of_tensor("tensor") is None
    assert st.layout_of(torch.nn.Parameter(torch.zeros(2, 3))) == st.Layout((2, 3), itemsize=4)


# ---- torch copies --------------------------------------------------------------------------


@hst.composite
def torch_copy_cases(draw):
    """(sizes, dst strides, src strides, shared): non-negative strides (torch's), and whether
    the source is another view of the destination's storage."""
    sizes = draw(copy_sizes(max_rank=5))
    dst = tuple(abs(s) for s in draw(nonoverlapping_strides(sizes)))
    src = tuple(abs(s) for s in draw(source_strides(sizes)))
    return sizes, dst, src, draw(hst.booleans())


def _span(sizes, strides):
    return 1 + sum((n - 1) * s for n, s in zip(sizes, strides)) if 0 not in sizes else 0


@needs_torch
@settings(max_examples=300)
@given(torch_copy_cases(), hst.sampled_from(["float32", "int8", "float64", "complex64"]))
def test_torch_fast_copy_writes_what_copy_would(case, dtype):
    sizes, dst_strides, src_strides, shared = case
    dtype = getattr(torch, dtype)
    length = 4 + max(_span(sizes, dst_strides), _span(sizes, src_strides))
    storage = torch.arange(length, dtype=torch.float64).to(dtype)
    other = (torch.arange(length, dtype=torch.float64) * -1 - 1).to(dtype)
    dst = torch.as_strided(storage, sizes, dst_strides, 2)
    src = torch.as_strided(storage if shared else other, sizes, src_strides, 1)
    want = storage.clone()
    torch.as_strided(want, sizes, dst_strides, 2).copy_(src.clone())   # torch is the oracle
    version = dst._version
    assert _tensor.copyto_tensors(dst, src, 1) is True
    assert torch.equal(storage, want)
    assert dst._version == version + (1 if dst.numel() else 0)


@needs_torch
def test_torch_fast_copy_is_taken_for_plain_cpu_pairs(monkeypatch):
    """copyto on two plain CPU tensors never reaches the interop layer."""
    from strided import copy as strided_copy

    def checked(*args):
        raise AssertionError("the checked path was taken")

    monkeypatch.setattr(strided_copy, "_copyto_checked", checked)
    dst = torch.zeros(3, 224, 224)
    src = torch.rand(224, 224, 3).permute(2, 0, 1)
    st.copyto(dst, src)
    assert torch.equal(dst, src)
    small = torch.zeros(16)
    st.copyto(small, torch.arange(16.0), num_threads=1)
    assert small.tolist() == list(range(16))


def _lazy_neg(n=3):
    return torch._neg_view(torch.zeros(n, dtype=torch.complex64))


@needs_torch
@pytest.mark.parametrize("case", ["dst requires grad", "dst is a Parameter", "dst lazy conj",
                                  "dst lazy neg", "dst overlaps itself", "dtypes differ",
                                  "shapes differ", "broadcast needed"])
def test_torch_fast_path_declines_and_the_checked_path_refuses(case):
    dst, src, error, match = {
        "dst requires grad": (torch.zeros(3, requires_grad=True) * 1, torch.ones(3),
                              ValueError, "requires grad"),
        "dst is a Parameter": (torch.nn.Parameter(torch.zeros(3)), torch.ones(3),
                               ValueError, "requires grad"),
        "dst lazy conj": (torch.zeros(3, dtype=torch.complex64).conj(),
                          torch.ones(3, dtype=torch.complex64), ValueError, "lazy conj"),
        "dst lazy neg": (_lazy_neg(), torch.ones(3, dtype=torch.complex64), ValueError,
                         "lazy neg"),
        "dst overlaps itself": (torch.zeros(3).expand(2, 3), torch.ones(2, 3), ValueError,
                                "overlap each other"),
        "dtypes differ": (torch.zeros(3, dtype=torch.int64), torch.ones(3), TypeError,
                          "casting"),
        "shapes differ": (torch.zeros(3), torch.ones(4), ValueError, "same sizes"),
        "broadcast needed": (torch.zeros(2, 3), torch.ones(3), ValueError, "same sizes"),
    }[case]
    before = dst.detach().clone().resolve_conj().resolve_neg()
    version = dst._version
    assert _tensor.copyto_tensors(dst, src, 1) is False
    with pytest.raises(error, match=match):
        st.copyto(dst, src)
    assert torch.equal(dst.detach().resolve_conj().resolve_neg(), before)
    assert dst._version == version


@needs_torch
def test_torch_fast_path_declines_lazy_sources_and_the_checked_path_copies_values():
    dst = torch.zeros(2, dtype=torch.complex64)
    src = torch.tensor([1 + 2j, 3 - 4j]).conj()
    assert _tensor.copyto_tensors(dst, src, 1) is False
    st.copyto(dst, src)
    assert dst.tolist() == [1 - 2j, 3 + 4j]
    negated = torch._neg_view(torch.tensor([1 + 1j, 2 + 0j]))
    st.copyto(dst, negated)
    assert dst.tolist() == [-1 - 1j, -2 + 0j]


@needs_torch
def test_torch_parameter_without_grad_is_written_by_the_checked_path():
    p = torch.nn.Parameter(torch.zeros(3), requires_grad=False)
    version = p._version
    st.copyto(p, torch.arange(3.0))
    assert p.tolist() == [0.0, 1.0, 2.0] and p._version > version


@needs_torch
def test_mixed_numpy_and_torch_pairs_are_copied():
    t = torch.zeros(2, 3, dtype=torch.int32)
    st.copyto(t, np.arange(6, dtype=np.int32).reshape(3, 2).T)
    assert t.tolist() == [[0, 2, 4], [1, 3, 5]]
    a = np.zeros((2, 3), np.int32)
    st.copyto(a, t.t().contiguous().t())
    assert a.tolist() == t.tolist()


# ---- tensors the exchange API does not read: in a subprocess ---------------------------------

_UNREAD = textwrap.dedent("""
    import warnings
    warnings.simplefilter("ignore")
    import torch
    import strided as st
    from strided.interop import _tensor
    cases = {
        "meta": lambda: torch.zeros(3, device="meta"),
        "sparse": lambda: torch.zeros(3).to_sparse(),
        "sparse_csr": lambda: torch.eye(3).to_sparse_csr(),
        "quantized": lambda: torch.quantize_per_tensor(torch.ones(3), 0.5, 0, torch.qint8),
        "nested": lambda: torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)]),
        "mkldnn": lambda: torch.zeros(3).to_mkldnn(),
    }
    for name, make in cases.items():
        try:
            t = make()
        except Exception:
            print(name, "unavailable")
            continue
        fast = (_tensor.layout_of_tensor(t), _tensor.copyto_tensors(t, t, 1))
        try:
            st.copyto(t, make())
            outcome = "copied"
        except (TypeError, ValueError) as exc:
            outcome = type(exc).__name__
        print(name, fast[0], fast[1], outcome)
""")


@needs_torch
def test_tensors_the_exchange_api_refuses_go_to_the_checked_path():
    out = subprocess.run([sys.executable, "-c", _UNREAD], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    results = {line.split()[0]: line.split()[1:] for line in out.stdout.splitlines()}
    for name, result in results.items():
        if result == ["unavailable"]:
            continue
        layout, fast_copy, outcome = result
        assert (layout, fast_copy) == ("None", "False"), name
        # meta tensors are copied by torch (no memory); the rest are refused with an error
        assert outcome == ("copied" if name == "meta" else "ValueError"), (name, outcome)
    assert {"sparse", "quantized"} <= set(results)


def test_torch_loaded_after_strided_is_found():
    """The fast path looks for torch on each call until torch is loaded."""
    if not HAVE_TORCH:
        pytest.skip("torch is not installed")
    code = textwrap.dedent("""
        import sys
        import numpy as np
        import strided as st
        st.copyto(np.zeros(3), np.ones(3))
        assert st.layout_of(np.zeros(2)) == st.Layout((2,), itemsize=8)
        assert "torch" not in sys.modules
        import torch
        from strided.interop import _tensor
        dst = torch.zeros(4)
        assert _tensor.copyto_tensors(dst, torch.ones(4), 1) is True
        print(dst.tolist())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == "[1.0, 1.0, 1.0, 1.0]"
