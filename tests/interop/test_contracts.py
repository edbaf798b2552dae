"""Writes that would break another library's contract (issue 11, section 5).

- views whose elements alias each other are read-only, as ``np.broadcast_to``'s, wherever the
  library can say so (numpy; DLPack's read-only flag, which array-api-strict honours);
- destinations that their library declares immutable (jax) are refused, untouched;
- two torch tensors that torch copies itself (one off the CPU) keep every rule of copyto. The
  device path is selected by one predicate, ``interop._torch.copies_itself``; the tests replace
  it to run that very path on CPU tensors, and run it for real on CUDA where there is a GPU.
  The ``either_path`` tests run each case on both paths and expect one outcome (written
  outside autograd, lazy sources by value, any two views of one buffer).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst
from strategies import brute_offsets

import strided as st
from strided import _copy
from strided import copy as strided_copy
from strided.interop import _torch as torch_adapter
from strided.interop import describe

HAVE_TORCH = importlib.util.find_spec("torch") is not None
if HAVE_TORCH:
    import torch

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed")


# ---- numpy views of aliasing layouts ------------------------------------------------------------


@pytest.mark.parametrize("layout", [
    st.Layout((3,), itemsize=8).broadcast_to((2, 3)),     # a stride 0
    st.Layout((3, 3), (1, 1), itemsize=8),                # sliding windows of a ramp
    st.Layout((2, 2), (2, 2), offset=1, itemsize=8),      # (0, 1) and (1, 0) meet
])
def test_aliasing_numpy_views_are_read_only(layout):
    base = np.arange(16, dtype=np.float64)
    v = st.view(base, layout)
    assert v.flags.writeable is False
    with pytest.raises(ValueError, match="read-only"):
        v[(0,) * layout.ndim] = -1
    assert np.array_equal(base, np.arange(16))
    base[layout.offset] = 99                       # the memory is still shared
    assert v[(0,) * layout.ndim] == 99
    copied = st.view(base, layout, copy=True)      # a copy is independent and writeable
    copied[(0,) * layout.ndim] = -5
    assert copied.flags.writeable and base[layout.offset] == 99


def test_non_aliasing_views_stay_writeable():
    base = np.arange(16, dtype=np.float64)
    for layout in (st.Layout((2, 3), (5, 1), itemsize=8), st.Layout((4,), (-3,), offset=12,
                                                                    itemsize=8)):
        v = st.view(base, layout)
        assert v.flags.writeable
        v[(1,) * layout.ndim] = -1
        assert base[layout.offset_of((1,) * layout.ndim)] == -1


def test_views_whose_aliasing_cannot_be_decided_are_read_only():
    base = np.zeros(16, np.uint8)
    layout = st.Layout((2, 2, 2), (3, 5, 7))       # decided only by the exact search
    old = _copy._tune(max_work=0)
    try:
        assert st.view(base, layout).flags.writeable is False
    finally:
        _copy._tune(**old)
    assert st.view(base, layout).flags.writeable is True   # decided: it does not overlap


# ---- immutable destinations -------------------------------------------------------------------


def test_jax_destinations_are_refused_and_left_alone():
    jnp = pytest.importorskip("jax.numpy")
    dst = jnp.zeros(4, dtype=jnp.float32)
    with pytest.raises(ValueError, match="dst is an immutable jax"):
        st.copyto(dst, np.ones(4, np.float32))
    assert np.array_equal(np.asarray(dst), np.zeros(4))
    out = np.zeros(4, np.float32)                  # a jax *source* is fine
    st.copyto(out, jnp.arange(4, dtype=jnp.float32))
    assert np.array_equal(out, np.arange(4))


def test_array_api_strict_destinations_are_still_written():
    xp = pytest.importorskip("array_api_strict")
    dst = xp.zeros(3, dtype=xp.float64)
    st.copyto(dst, np.arange(3.0))
    assert np.array_equal(np.asarray(dst), np.arange(3.0))


# ---- torch pairs copied by torch ----------------------------------------------------------------


def _force_checked_path(monkeypatch):
    """Turn off copyto's compiled fast path (plain CPU tensors), so every pair is decided by
    the interop layer's checked path: copyto's compiled entry serves plain copies with the fast
    path it was given at import, so calls go to the documented function instead, which reads
    the module's."""
    monkeypatch.setattr(st, "copyto", st.copyto.__wrapped__)
    monkeypatch.setattr(strided_copy, "_fast_copy", lambda *args: False)
    monkeypatch.setattr(strided_copy, "_fast_convert", lambda *args: False)


@pytest.fixture
def device_path(monkeypatch):
    """Send every torch pair down the device path (torch's own copy); count its copies."""
    calls = []
    real = torch_adapter.device_copy

    def spy(dst, src, share_memory):
        calls.append(share_memory)
        real(dst, src, share_memory)

    _force_checked_path(monkeypatch)
    monkeypatch.setattr(torch_adapter, "copies_itself", lambda dst, src: True)
    monkeypatch.setattr(torch_adapter, "device_copy", spy)
    return calls


@needs_torch
def test_device_path_gives_the_source_as_it_was_when_memory_is_shared(device_path):
    t = torch.arange(10.0)
    st.copyto(t[1:], t[:-1])                       # torch's copy_ alone raises here
    assert t.tolist() == [0.0, 0.0, 1, 2, 3, 4, 5, 6, 7, 8]
    m = torch.arange(16.0).reshape(4, 4)
    want = m.t().clone()
    st.copyto(m, m.t())
    assert torch.equal(m, want)
    a, b = torch.zeros(4), torch.arange(4.0)
    st.copyto(a, b)
    assert torch.equal(a, b)
    evens = torch.arange(8.0)
    st.copyto(evens[0::2], evens[1::2])            # interleaved: no shared byte
    assert evens[0::2].tolist() == [1.0, 3.0, 5.0, 7.0]
    assert device_path == [True, True, False, False]


@needs_torch
@pytest.mark.parametrize("case", ["requires grad", "lazy conj", "lazy neg", "self-overlap",
                                  "sizes", "dtype"])
def test_device_path_refuses_what_the_host_path_refuses(device_path, case):
    leaf = torch.zeros(3, requires_grad=True)
    dst, src, match = {
        "requires grad": (leaf * 2, torch.ones(3), "requires grad"),
        "lazy conj": (torch.zeros(3, dtype=torch.complex64).conj(),
                      torch.ones(3, dtype=torch.complex64), "lazy conj bit"),
        "lazy neg": (torch._neg_view(torch.zeros(3, dtype=torch.complex64).conj()
                                     .resolve_conj()),
                     torch.ones(3, dtype=torch.complex64), "lazy neg bit"),
        "self-overlap": (torch.zeros(3).expand(2, 3), torch.ones(2, 3), "overlap each other"),
        "sizes": (torch.zeros(3), torch.ones(4), "same sizes"),
        "dtype": (torch.zeros(3, dtype=torch.int64), torch.ones(3), "casting"),
    }[case]
    before = dst.detach().clone()
    with pytest.raises((ValueError, TypeError), match=match):
        st.copyto(dst, src)
    assert torch.equal(dst.detach().resolve_conj().resolve_neg(),
                       before.resolve_conj().resolve_neg())
    assert device_path == []


@needs_torch
@pytest.mark.parametrize("fmt", ["NCHW4", "nChw8c", "CHWN4"])
@pytest.mark.parametrize("source", ["plain", "permuted", "lazy conj", "requires grad"])
def test_device_path_blocks_and_unblocks_as_the_host_path(device_path, fmt, source):
    """to_blocked / from_blocked on tensors torch copies itself: the same pieces, each copied
    by torch between views, give the host path's result (outside autograd, by value)."""
    x = torch.arange(2 * 6 * 3 * 5, dtype=torch.float32).reshape(2, 6, 3, 5)
    if source == "permuted":
        x = x.permute(0, 3, 1, 2).contiguous().permute(0, 2, 3, 1)    # NHWC memory
    elif source == "lazy conj":
        x = (x + 1j).conj()
    elif source == "requires grad":
        x.requires_grad_(True)
    y = st.to_blocked(x, fmt)
    pieces = len(device_path)
    assert pieces >= 1 and not any(device_path)            # a new array shares no memory
    back = st.from_blocked(y, fmt, channels=6)
    assert len(device_path) > pieces
    assert not y.requires_grad and not back.requires_grad
    assert torch.equal(back, x.detach().resolve_conj())
    values = x.detach().resolve_conj().numpy()
    spec = st.formats.parse_blocked(fmt)
    want = np.zeros(spec.physical_shape((2, 6, 3, 5)), dtype=values.dtype)
    for c in range(6):                                     # the blocked place of each channel
        if spec.chwn:
            want[c // 4, :, :, :, c % 4] = values[:, c].transpose(1, 2, 0)
        else:
            want[:, c // spec.block, :, :, c % spec.block] = values[:, c]
    assert np.array_equal(y.resolve_conj().numpy(), want)


@needs_torch
def test_cpu_pairs_take_the_host_path_by_default(monkeypatch):
    calls = []
    real = torch_adapter.device_copy
    monkeypatch.setattr(torch_adapter, "device_copy", lambda *a: calls.append(a) or real(*a))
    dst = torch.zeros(3)
    st.copyto(dst, torch.ones(3))
    assert calls == [] and dst.tolist() == [1.0, 1.0, 1.0]


needs_cuda = pytest.mark.skipif(not (HAVE_TORCH and torch.cuda.is_available()),
                                reason="no CUDA device for torch")


@needs_cuda
def test_cuda_pairs_keep_the_contract():
    t = torch.arange(10.0, device="cuda")
    st.copyto(t[1:], t[:-1])
    assert t.tolist() == [0.0, 0.0, 1, 2, 3, 4, 5, 6, 7, 8]
    with pytest.raises(ValueError, match="overlap each other"):
        st.copyto(torch.zeros(3, device="cuda").expand(2, 3), torch.ones(2, 3, device="cuda"))
    with pytest.raises(ValueError, match="requires grad"):
        st.copyto(torch.zeros(3, device="cuda", requires_grad=True) * 2,
                  torch.ones(3, device="cuda"))


# ---- DLPack views of aliasing layouts -------------------------------------------------------


def _aliases_by_brute_force(layout):
    """Two indices reach one offset: listed, not computed by strided."""
    offsets = brute_offsets(layout.sizes, layout.strides, layout.offset)
    return len(set(offsets)) < len(offsets)


XP_LAYOUTS = [
    st.Layout((3, 4), (0, 1), itemsize=8),                 # broadcast rows
    st.Layout((4, 3), (2, 1), itemsize=8),                 # sliding windows
    st.Layout((3, 3), (-1, 1), offset=2, itemsize=8),      # reversed windows
    st.Layout((3, 4), (4, 1), itemsize=8),                 # packed
    st.Layout((2, 3), (6, 2), itemsize=8),                 # padded
    st.Layout((1, 4), (0, 3), itemsize=8),                 # stride 0 on a dim of one element
]


def test_xp_layouts_cover_both_answers():
    assert {_aliases_by_brute_force(L) for L in XP_LAYOUTS} == {True, False}


@pytest.mark.parametrize("layout", XP_LAYOUTS, ids=lambda L: str(L.strides))
def test_dlpack_views_are_read_only_exactly_when_elements_alias(layout):
    xp = pytest.importorskip("array_api_strict")
    base = xp.arange(12, dtype=xp.float64)
    v = st.view(base, layout)
    assert describe(v).ptr == describe(base).ptr + layout.offset * 8      # still zero-copy
    first = (0,) * layout.ndim
    if _aliases_by_brute_force(layout):
        with pytest.raises(ValueError, match="read-only"):
            v[first] = -1.0
        assert np.array_equal(np.asarray(base), np.arange(12.0))
    else:
        v[first] = -1.0
        assert float(base[layout.offset]) == -1.0


def test_jax_arrays_are_immutable_yet_viewed_without_a_copy():
    jnp = pytest.importorskip("jax.numpy")
    src = jnp.arange(6, dtype=jnp.float32)
    record = describe(src)
    assert record.immutable and record.library == "dlpack"
    v = st.view(src, st.Layout((3, 2), itemsize=4), copy=False)
    assert describe(v).ptr == record.ptr
    assert np.array_equal(np.asarray(v), np.arange(6.0).reshape(3, 2))


def test_array_api_compat_is_imported_only_for_dlpack_arrays():
    pytest.importorskip("array_api_strict")
    code = (
        "import sys, numpy as np, strided as st; "
        "st.copyto(np.zeros(3), np.ones(3)); st.view(np.arange(3.0), st.layout_of(np.zeros(3))); "
        "before = 'array_api_compat' in sys.modules; "
        "import array_api_strict as xp; st.copyto(xp.zeros(3, dtype=xp.float64), np.ones(3)); "
        "print(before, 'array_api_compat' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "False"]


# ---- torch pairs: the same outcome on both paths --------------------------------------------


@pytest.fixture(params=["fast", "host", "device"])
def either_path(request, monkeypatch):
    """Two CPU tensors copied by strided's compiled fast path, its checked host path, or
    (forced) torch's device path."""
    if not HAVE_TORCH:
        pytest.skip("torch is not installed")
    calls = []
    if request.param != "fast":
        _force_checked_path(monkeypatch)
    if request.param == "device":
        real = torch_adapter.device_copy
        monkeypatch.setattr(torch_adapter, "copies_itself", lambda dst, src: True)
        monkeypatch.setattr(torch_adapter, "device_copy",
                            lambda *args: calls.append(args) or real(*args))
    return request.param, calls


def _copied_by(path):
    """How many copies torch's device path made: one on the forced path, none on the host."""
    name, calls = path
    return len(calls) == (name == "device")


def test_a_source_requiring_grad_leaves_dst_outside_autograd(either_path):
    src = torch.arange(3.0, requires_grad=True)
    dst = torch.zeros(3)
    version = dst._version
    st.copyto(dst, src)
    assert dst.tolist() == [0.0, 1.0, 2.0]
    assert not dst.requires_grad and dst.grad_fn is None      # copy_ alone would record it
    assert dst._version > version                             # torch sees an in-place write
    assert _copied_by(either_path)


def test_a_lazy_source_is_copied_by_value(either_path):
    dst = torch.zeros(2, dtype=torch.complex64)
    st.copyto(dst, torch.tensor([1 + 2j, 3 - 4j]).conj())
    assert dst.tolist() == [1 - 2j, 3 + 4j]
    assert _copied_by(either_path)


def test_an_empty_copy_writes_nothing(either_path):
    dst = torch.zeros(0, 3)
    version = dst._version
    st.copyto(dst, torch.ones(0, 3))
    assert dst._version == version
    assert not either_path[1]


@pytest.mark.filterwarnings("ignore:.*quantized tensor creation:UserWarning")
def test_quantized_tensors_are_refused_on_both_paths(either_path):
    src = torch.quantize_per_tensor(torch.ones(3), 0.5, 0, torch.qint8)
    dst = torch.quantize_per_tensor(torch.zeros(3), 0.25, 0, torch.qint8)
    with pytest.raises(ValueError, match="quantized"):
        st.copyto(dst, src)
    assert dst.int_repr().tolist() == [0, 0, 0]
    assert not either_path[1]


@hst.composite
def two_views_of_one_buffer(draw):
    """Two layouts of one shape in a 64-element buffer, non-negative strides (torch has no
    others); dst without self-overlap, src with any (a broadcast source is fine)."""
    ndim = draw(hst.integers(1, 3))
    sizes = tuple(draw(hst.lists(hst.integers(1, 4), min_size=ndim, max_size=ndim)))
    strides = hst.lists(hst.integers(0, 6), min_size=ndim, max_size=ndim).map(tuple)
    dst = draw(strides.filter(lambda s: not _aliases_by_brute_force(st.Layout(sizes, s))))
    src = draw(strides)
    reach = max(sum((n - 1) * s for n, s in zip(sizes, t)) for t in (dst, src))
    return (sizes, dst, draw(hst.integers(0, 63 - reach)), src,
            draw(hst.integers(0, 63 - reach)))


@needs_torch
@pytest.mark.parametrize("device", [False, True], ids=["host", "device"])
@settings(max_examples=80, deadline=None)
@given(case=two_views_of_one_buffer())
def test_any_two_views_of_one_buffer_give_the_source_as_it_was(device, case):
    sizes, dst_strides, dst_offset, src_strides, src_offset = case
    buf = torch.arange(64, dtype=torch.int32)
    expected = buf.numpy().copy()
    expected[brute_offsets(sizes, dst_strides, dst_offset)] = expected[
        brute_offsets(sizes, src_strides, src_offset)]
    with pytest.MonkeyPatch.context() as mp:
        if device:
            mp.setattr(torch_adapter, "copies_itself", lambda dst, src: True)
        st.copyto(buf.as_strided(sizes, dst_strides, dst_offset),
                  buf.as_strided(sizes, src_strides, src_offset))
    assert np.array_equal(buf.numpy(), expected)


@pytest.fixture
def device_conversions(monkeypatch):
    """Send torch pairs down the device path while ``on_device[0]`` is True; count the
    conversions torch's ops do."""
    calls, on_device = [], [True]
    real = torch_adapter.device_convert

    def spy(dst, src, share_memory, *args):
        calls.append(args[:2])
        real(dst, src, share_memory, *args)

    _force_checked_path(monkeypatch)
    monkeypatch.setattr(torch_adapter, "copies_itself", lambda dst, src: on_device[0])
    monkeypatch.setattr(torch_adapter, "device_convert", spy)
    return calls, on_device


_DEVICE_VALUES = [0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -1.5, 126.6, 127.5, 128.0, -129.0, 300.0,
                  -300.0, 65504.0, 70000.0, 1e20, -1e20, 3e-8, float("inf"), float("-inf"),
                  float("nan"), 2.0 ** 31, 2.0 ** 63, -(2.0 ** 63), 2.0 ** 64]
_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64} if HAVE_TORCH else {}


@needs_torch
@pytest.mark.parametrize("dst_dtype", ["int8", "uint8", "int16", "int32", "int64", "float16",
                                       "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("src_dtype", ["float32", "float64", "float16", "uint8", "int32"])
@pytest.mark.parametrize("affine", [False, True])
def test_device_path_converts_as_the_host_path(device_conversions, dst_dtype, src_dtype,
                                               affine):
    """Conversions torch does itself (tensors off the CPU) give the host path's values bit for
    bit: forced here on CPU tensors, compared with the host engine on the same values."""
    if src_dtype == dst_dtype and not affine:
        pytest.skip("not a conversion: a plain copy")
    calls, on_device = device_conversions
    values = torch.tensor(_DEVICE_VALUES, dtype=torch.float64)
    if src_dtype in ("uint8", "int32"):
        values = torch.arange(len(_DEVICE_VALUES), dtype=torch.float64) * 37 - 200
    src = values.to(getattr(torch, src_dtype)).reshape(5, 5).t()      # strided source
    kwargs = {"casting": "unsafe"}
    if affine:
        kwargs.update(scale=[0.5, 2.0, 1.0, -1.0, 3.0], shift=0.25, axis=1)
    dst = torch.zeros(5, 5, dtype=getattr(torch, dst_dtype))
    st.copyto(dst, src, **kwargs)
    assert len(calls) == 1
    host = torch.zeros(5, 5, dtype=getattr(torch, dst_dtype))
    on_device[0] = False                                # the host engine, as the oracle
    st.copyto(host, src, **kwargs)
    assert len(calls) == 1
    bits = _BITS[dst.element_size()]
    if dst.is_floating_point():     # a NaN is a NaN: payloads may differ between the paths
        assert torch.equal(torch.isnan(dst), torch.isnan(host))
        dst, host = dst.nan_to_num(0.0), host.nan_to_num(0.0)
    assert torch.equal(dst.view(bits), host.view(bits))


@needs_torch
@pytest.mark.parametrize("fmt", ["NCHW4", "NCHW32", "CHWN4"])
def test_device_path_quantizes_blocked_as_the_host_path(device_conversions, fmt):
    calls, _ = device_conversions
    x = torch.randn(2, 6, 3, 5) * 40
    scale = torch.linspace(0.5, 2.0, 6)
    y = st.to_blocked(x, fmt, dtype=torch.int8, scale=scale, shift=3.0)
    assert calls
    back = st.from_blocked(y, fmt, channels=6, dtype=torch.float32, scale=1 / scale)
    want = st.to_blocked(x.numpy(), fmt, dtype=np.int8, scale=scale.numpy(), shift=3.0)
    assert np.array_equal(y.numpy(), want)
    want_back = st.from_blocked(want, fmt, channels=6, dtype=np.float32,
                                scale=(1 / scale).numpy())
    assert np.array_equal(back.numpy(), want_back)
