"""Callers that change the arrays while strided reads the other arguments of a copy.

The rule (DESIGN.md, "Guarantees"): no caller code runs between taking an array's address and
the kernel. Every argument that can run the caller's code (``__float__`` of a scale,
``__index__`` of an axis or a thread count, ``__eq__`` of a casting name, the items and
``tolist`` of a parameter vector) is read first, into plain values; what can still run code
after an array was read (another array's ``__dlpack__``, a tensor subclass's
``__torch_function__``) is followed by a second read of the addresses, by compiled code that
runs none, checked against the first.

Each probe resizes, frees or reshapes an array from such a callback (torch ``resize_``, numpy
``resize(refcheck=False)``, both of which free the old memory) and must end in a clear error
or in exactly the values of the arrays as they are when the kernel runs, never in a write to
or a read from freed memory. On main before this was fixed, the scale callback wrote 256 KiB
into freed memory, and the vector-element variant segfaulted. The probes run in a fresh
interpreter (:mod:`isolated`), so a crash fails a test rather than pytest; the sanitizer build
of ``.ci/run`` reports any access to freed memory they make.
"""

from __future__ import annotations

import pytest
from isolated import probe_results, run_isolated

torch = pytest.importorskip("torch")

PROBES = r"""
import numpy as np
import torch
import strided as st
from isolated import probe, report

N = 1 << 16


def refused(call, *words):
    try:
        call()
    except (TypeError, ValueError) as exc:
        text = str(exc)
        assert all(w in text for w in words), text
        return
    raise AssertionError("accepted")


class Resizing(float):
    # a float whose value, when read, runs `action` first
    def __new__(cls, value, action):
        self = super().__new__(cls, value)
        self.action = action
        return self

    def __float__(self):
        self.action()
        return float.__float__(self)


class ResizingIndex:
    def __init__(self, value, action):
        self.value, self.action = value, action

    def __index__(self):
        self.action()
        return self.value


@probe
def scale_resizes_torch_dst():
    t = torch.zeros(N)
    scale = Resizing(2.0, lambda: t.resize_(1 << 24))
    refused(lambda: st.copyto(t, np.ones(N, np.float32), scale=scale),
            "dst has shape (16777216,)")


@probe
def scale_resizes_numpy_dst():
    d = np.zeros(N, np.float32)
    refused(lambda: st.copyto(d, np.ones(N, np.float32),
                              scale=Resizing(2.0, lambda: d.resize(1 << 22, refcheck=False))),
            "dst has shape (4194304,)")


@probe
def scale_resizes_numpy_src():
    s = np.ones(N, np.float32)
    d = np.zeros(N, np.float64)
    refused(lambda: st.copyto(d, s, scale=Resizing(2.0, lambda: s.resize(8, refcheck=False))),
            "src has shape (8,)")


@probe
def scale_moves_torch_dst_to_the_same_shape():
    # resized away and back: a new buffer of the same shape; the copy lands in it, exactly
    t = torch.zeros(N)
    def away_and_back():
        t.resize_(1 << 22)
        t.resize_(N)
    st.copyto(t, np.arange(N, dtype=np.float32), scale=Resizing(2.0, away_and_back))
    assert torch.equal(t, torch.arange(N, dtype=torch.float32) * 2)


@probe
def vector_item_resizes_dst():
    t = torch.zeros(N, 3)
    scale = [1.0, Resizing(2.0, lambda: t.resize_(1 << 22, 3)), 3.0]
    refused(lambda: st.copyto(t, np.ones((N, 3), np.float32), scale=scale, axis=1), "dst has shape")


@probe
def vector_item_empties_the_vector():
    t = torch.zeros(4, 3)
    scale = [1.0, 2.0, 3.0]
    scale[1] = Resizing(2.0, scale.clear)
    st.copyto(t, np.ones((4, 3), np.float32), scale=scale, axis=1)
    assert t[0].tolist() == [1.0, 2.0, 3.0]


@probe
def axis_resizes_dst():
    t = torch.zeros(N, 3)
    refused(lambda: st.copyto(t, np.ones((N, 3), np.float32), scale=[1.0, 2.0, 3.0],
                              axis=ResizingIndex(1, lambda: t.resize_(1 << 22, 3))),
            "dst has shape")


@probe
def num_threads_resizes_dst():
    d = np.zeros(N, np.float32)
    refused(lambda: st.copyto(d, np.ones(N, np.float32),
                              num_threads=ResizingIndex(1, lambda: d.resize(8, refcheck=False))),
            "dst has shape (8,)")


@probe
def casting_name_resizes_dst():
    # the name is read as a plain str once: the subclass's __eq__ may run then, or never
    d = np.zeros(N, np.float32)

    class Casting(str):
        def __eq__(self, other):
            d.resize(8, refcheck=False)
            return str.__eq__(self, other)

        __hash__ = str.__hash__

    try:
        st.copyto(d, np.ones(N, np.float64), casting=Casting("unsafe"))
    except ValueError as exc:
        assert "dst has shape (8,)" in str(exc), exc
    else:
        assert d.shape == (N,) and (d == 1).all()


@probe
def relayout_scale_resizes_x():
    x = np.ones((64, 64, 3), np.uint8)
    refused(lambda: st.relayout(x, (2, 0, 1), dtype=np.float32,
                                scale=Resizing(2.0, lambda: x.resize(8, refcheck=False))),
            "layout must list each of the 1 axes")


@probe
def to_blocked_shift_resizes_x():
    x = torch.ones(1, 8, 16, 16)
    refused(lambda: st.to_blocked(x, "NCHW4", dtype=torch.int8,
                                  shift=Resizing(1.0, lambda: x.resize_(2))),
            "x has shape (2,)")


@probe
def from_blocked_channels_resizes_y():
    y = np.ones((1, 2, 4, 4, 4), np.float32)
    refused(lambda: st.from_blocked(y, "NCHW4",
                                    channels=ResizingIndex(8, lambda: y.resize(3, refcheck=False))),
            "y has shape (3,)")


class Producer:
    # a DLPack source whose __dlpack__ resizes the destination, read after it
    def __init__(self, victim, action):
        self.data = np.ones(N, np.float32)
        self.victim, self.action = victim, action

    def __dlpack__(self, **kwargs):
        self.action(self.victim)
        return self.data.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.data.__dlpack_device__()


@probe
def dlpack_source_moves_numpy_dst():
    d = np.zeros(N, np.float32)
    src = Producer(d, lambda v: (v.resize(1 << 22, refcheck=False), v.resize(N, refcheck=False)))
    refused(lambda: st.copyto(d, src), "dst changed")


@probe
def dlpack_source_moves_torch_dst():
    t = torch.zeros(N)
    src = Producer(t, lambda v: (v.resize_(1 << 22), v.resize_(N)))
    refused(lambda: st.copyto(t, src), "dst changed")


@probe
def dlpack_source_reshapes_torch_dst():
    t = torch.zeros(N)
    src = Producer(t, lambda v: v.resize_(N // 2))
    refused(lambda: st.copyto(t, src), "shape")


@probe
def torch_function_moves_dst():
    # a tensor subclass as the source: its __torch_function__ runs while it is described
    t = torch.zeros(N)

    class Hostile(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if getattr(func, "__name__", "") == "untyped_storage":
                t.resize_(1 << 22)
                t.resize_(N)
            return super().__torch_function__(func, types, args, kwargs or {})

    src = torch.ones(N).as_subclass(Hostile)
    refused(lambda: st.copyto(t, src), "dst changed")


report()
"""


@pytest.fixture(scope="module")
def results() -> dict[str, str]:
    return probe_results(run_isolated(PROBES, timeout=300))


NAMES = [line.split("def ", 1)[1].split("(")[0] for line in PROBES.splitlines()
         if line.startswith("def ") and "refused" not in line and "__" not in line]


def test_every_probe_ran(results):
    assert set(results) == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_caller_code_cannot_move_memory_under_a_copy(results, name):
    assert results[name] == "ok"
