"""Writes that would break another library's contract (issue 11, section 5).

- numpy views whose elements alias each other are read-only, as ``np.broadcast_to``'s;
- destinations that their library declares immutable (jax) are refused, untouched;
- two torch tensors that torch copies itself (one off the CPU) keep every rule of copyto. The
  device path is selected by one predicate, ``interop._torch.copies_itself``; the tests replace
  it to run that very path on CPU tensors, and run it for real on CUDA where there is a GPU.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import strided as st
from strided import _core
from strided.interop import _torch as torch_adapter

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
    old = _core._overlap_tuning(max_work=0)
    try:
        assert st.view(base, layout).flags.writeable is False
    finally:
        _core._overlap_tuning(*old)
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


@pytest.fixture
def device_path(monkeypatch):
    """Send every torch pair down the device path (torch's own copy); count its copies."""
    calls = []
    real = torch_adapter.device_copy

    def spy(dst, src, share_memory):
        calls.append(share_memory)
        real(dst, src, share_memory)

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
        "dtype": (torch.zeros(3), torch.ones(3, dtype=torch.float64), "dtype"),
    }[case]
    before = dst.detach().clone()
    with pytest.raises((ValueError, TypeError), match=match):
        st.copyto(dst, src)
    assert torch.equal(dst.detach().resolve_conj().resolve_neg(),
                       before.resolve_conj().resolve_neg())
    assert device_path == []


@needs_torch
def test_cpu_pairs_take_the_host_path_by_default():
    calls = []
    real = torch_adapter.device_copy
    torch_adapter.device_copy = lambda *a: calls.append(a) or real(*a)
    try:
        st.copyto(torch.zeros(3), torch.ones(3))
    finally:
        torch_adapter.device_copy = real
    assert calls == []


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
