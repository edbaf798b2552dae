"""No input may crash the process, and every accepted input is normalised (issue 11, section 4).

Three kinds of checks:

* each crash class, in a fresh interpreter (:mod:`isolated`): a sequence argument whose item's
  ``__index__`` empties the list being read segfaulted the core, for every argument read by
  ``_core._load`` (sizes, strides, index, axes, order, broadcast flags, reshape sizes);
* the forms an argument may take (tuple, list, range, numpy array, ``torch.Size``, one integer)
  all give the same tuple of Python ints, and the rest is a ``TypeError`` naming the argument;
  the int64 edges of spans are exact against Python's big integers; names are strict;
* a seeded differential fuzz, also in a subprocess: hostile objects in every argument of the
  public API must give the result of the same call with plain Python values, or an error.
"""

from __future__ import annotations

import array
import itertools
import random
import reprlib
import sys
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hst
from isolated import probe_results, run_isolated

import strided as st
from strided import formats

BIG = 2**63
ALLOWED = (TypeError, ValueError, OverflowError)


class Boom(Exception):
    """Raised by a hostile object's own method: it must come out of the call unchanged."""


# ---- hostile objects (also used by the subprocess checks, which import this module) -----------


class Index:
    """An integer that only has ``__index__`` (an object of a foreign integer type)."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"Index({self.value})"


class ShrinkingIndex(Index):
    """``__index__`` empties the list it is an item of, then answers: the read must not care."""

    def __init__(self, value: int, victim: list[Any]) -> None:
        super().__init__(value)
        self.victim = victim

    def __index__(self) -> int:
        self.victim.clear()
        return self.value


class GrowingIndex(ShrinkingIndex):
    """``__index__`` appends 100 items to its list (a reallocation under the reader)."""

    def __index__(self) -> int:
        self.victim.extend([1] * 100)
        return self.value


class ShrinkingBool(ShrinkingIndex):
    """A broadcast flag (its type is named ``bool``) whose truth test empties its list."""

    def __bool__(self) -> bool:
        self.victim.clear()
        return bool(self.value)


ShrinkingBool.__name__ = "bool"


class RaisingIndex:
    def __index__(self) -> int:
        raise Boom("__index__")


class FloatIndex:
    """``__index__`` returning a float: Python itself refuses it (TypeError)."""

    def __index__(self) -> float:
        return 2.5


class LyingSequence:
    """Says it has 1000 items; ``__getitem__`` knows 3 (and says so with IndexError)."""

    def __init__(self, items: tuple[int, ...]) -> None:
        self.items = items

    def __len__(self) -> int:
        return 1000

    def __getitem__(self, i: int) -> int:
        return self.items[i]


class UnknownLengthVector:
    """A 1-D array-API array whose length is not known yet (``shape == (None,)``)."""

    ndim = 1
    shape = (None,)

    def __getitem__(self, i: int) -> int:
        return 2


def shrinking(values: tuple[int, ...], kind: type[ShrinkingIndex] = ShrinkingIndex) -> list[Any]:
    """``list(values)`` whose first item empties (or grows) the list when converted."""
    items: list[Any] = list(values)
    items[0] = kind(values[0], items)
    return items


# ---- every crash class, in a fresh interpreter ---------------------------------------------

CRASH_PROBES = """
import numpy as np
import strided as st
from strided import formats
from isolated import probe, report
from test_hostile_inputs import GrowingIndex, ShrinkingBool, shrinking

L = st.Layout((2, 3, 4, 5))
CASES = {
    "layout_sizes": (lambda v: st.Layout(v), (2, 3, 4, 5), L),
    "layout_strides": (lambda v: st.Layout((2, 3, 4, 5), v), (60, 20, 5, 1), L),
    "layout_packed_order": (lambda v: st.Layout.packed((2, 3, 4, 5), v), (0, 1, 2, 3), L),
    "layout_packed_sizes": (lambda v: st.Layout.packed(v, "NCHW"), (2, 3, 4, 5), L),
    "blocked_view_sizes": (lambda v: st.Layout.blocked_view(v, "NCHW4"), (1, 4, 2, 2),
                           st.Layout((1, 1, 4, 2, 2), (16, 16, 1, 8, 4))),
    "offset_of_method": (lambda v: L.offset_of(v), (1, 2, 3, 4), 119),
    "offset_of_index": (lambda v: st.offset_of(v, (60, 20, 5, 1)), (1, 2, 3, 4), 119),
    "offset_of_strides": (lambda v: st.offset_of((1, 2, 3, 4), v), (60, 20, 5, 1), 119),
    "permute_axes": (lambda v: L.permute(v), (3, 2, 1, 0),
                     st.Layout((5, 4, 3, 2), (1, 5, 20, 60))),
    "packed_strides_sizes": (lambda v: st.packed_strides(v), (2, 3, 4, 5), (60, 20, 5, 1)),
    "packed_strides_order": (lambda v: st.packed_strides((2, 3), v), (1, 0), (1, 2)),
    "reshape_sizes": (lambda v: L.reshape(v), (6, 20), st.Layout((6, 20))),
    "broadcast_to_sizes": (lambda v: st.Layout((1, 5)).broadcast_to(v), (3, 5),
                           st.Layout((3, 5), (0, 1))),
    "buffer_size_sizes": (lambda v: st.buffer_size(v, itemsize=1, align=1), (2, 3), 6),
    "buffer_size_strides": (lambda v: st.buffer_size((2, 3), v, itemsize=1, align=1), (3, 1), 6),
    "blocked_shape_sizes": (lambda v: formats.blocked_shape(v, "NCHW4"), (1, 5, 2, 2),
                            (1, 2, 2, 2, 4)),
    "matching_labels_strides": (lambda v: formats.matching_labels((2, 3), v), (1, 2), ("WH",)),
    "strides_agree_other": (lambda v: formats.strides_agree((2, 3), (3, 1), v), (3, 1), True),
    "overlaps_strides": (lambda v: st.Layout((2, 2, 2), v).self_overlaps(max_work=None),
                         (3, 5, 7), False),
    "shares_memory_sizes": (lambda v: st._core.shares_memory(v, (4, 1), 1, (2, 2), (1, 2), 1, 0),
                            (2, 2), True),
    "shares_memory_strides": (lambda v: st._core.shares_memory((2, 2), (2, 2), 4, (2, 2), v, 4,
                                                               4), (4, 1), True),
}

for name, (call, values, expected) in CASES.items():
    for kind in ("shrinking", "growing"):
        def check(call=call, values=values, expected=expected, kind=kind):
            arg = shrinking(values) if kind == "shrinking" else shrinking(values, GrowingIndex)
            got = call(arg)
            assert got == expected, (got, expected)
        check.__name__ = f"{name}_{kind}"
        probe(check)

@probe
def packed_strides_broadcast_flags():
    flags = [False, True, False, False]
    flags[0] = ShrinkingBool(0, flags)
    assert st.packed_strides((2, 3, 4, 5), "NHWC", broadcast=flags) == (20, 0, 5, 1)

@probe
def layout_packed_broadcast_flags():
    flags = [False, True]
    flags[0] = ShrinkingBool(0, flags)
    assert st.Layout.packed((2, 3), broadcast=flags).strides == (1, 0)

@probe
def copy_memory_sizes():
    from strided import _copy, _core
    src = np.arange(6, dtype=np.int8)
    dst = np.zeros(6, dtype=np.int8)
    _copy.copy_memory(dst.ctypes.data, src.ctypes.data, shrinking((2, 3)), shrinking((3, 1)),
                      shrinking((3, 1)), 1)
    assert dst.tolist() == list(range(6))

report()
"""


@pytest.fixture(scope="module")
def crash_results() -> dict[str, str]:
    return probe_results(run_isolated(CRASH_PROBES, timeout=120))


def test_every_crash_class_is_gone(crash_results):
    # 21 argument kinds, each emptied and grown under the reader, plus 3 single probes
    assert len(crash_results) == 21 * 2 + 3
    assert {name: outcome for name, outcome in crash_results.items() if outcome != "ok"} == {}


# ---- accepted forms: one tuple of Python ints ----------------------------------------------


def _forms(values: tuple[int, ...]) -> list[Any]:
    """Every form a sequence of ints may take, each meaning ``values``."""
    out: list[Any] = [values, list(values), np.array(values, dtype=np.int64),
                      array.array("q", values), tuple(np.int32(v) for v in values),
                      [Index(v) for v in values], LyingSequence(values), memoryview(
                          array.array("q", values))]
    if values and all(b - a == values[1] - values[0] for a, b in itertools.pairwise(values)):
        step = values[1] - values[0] if len(values) > 1 else 1
        if step:
            out.append(range(values[0], values[0] + step * len(values), step))
    try:
        import array_api_strict as xp  # an array-API array: no __len__
    except ImportError:
        pass
    else:
        out.append(xp.asarray(values))
    if "torch" in sys.modules or _have_torch():
        torch = sys.modules["torch"]
        out.append(torch.tensor(values, dtype=torch.int64))
        out.append([torch.tensor(v) for v in values])
        if all(v >= 0 for v in values):
            out.append(torch.Size(values))
    return out


def _have_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def _exact(t: Any) -> bool:
    return type(t) is tuple and all(type(v) is int for v in t)


@pytest.mark.parametrize("form", _forms((2, 3)), ids=lambda f: type(f).__name__)
def test_sizes_forms_normalise(form):
    L = st.Layout(form)
    assert _exact(L.sizes) and L.sizes == (2, 3) and L == st.Layout((2, 3))
    assert hash(L) == hash(st.Layout((2, 3))) and L.ndim == 2
    assert _exact(st.packed_strides(form)) and st.packed_strides(form) == (3, 1)
    assert st.buffer_size(form, itemsize=1, align=1) == 6


@pytest.mark.parametrize("form", _forms((3, 1)), ids=lambda f: type(f).__name__)
def test_strides_and_index_forms_normalise(form):
    L = st.Layout((2, 3), form)
    assert _exact(L.strides) and L == st.Layout((2, 3))
    assert st.Layout((4, 2)).offset_of(form) == 7
    assert st.offset_of((1, 1), form) == 4
    assert formats.strides_agree((2, 3), form, (3, 1))
    assert formats.matching_labels((2, 3), form) == ("HW",)


@pytest.mark.parametrize("form", _forms((1, 0)), ids=lambda f: type(f).__name__)
def test_axes_forms_normalise(form):
    assert st.Layout((2, 3)).permute(form) == st.Layout((3, 2), (1, 3))
    assert st.packed_strides((2, 3), form) == (1, 2)


def test_one_integer_is_one_dimension():
    # numpy's rule for shapes: np.empty(5).shape == (5,), np.empty(np.array(5)).shape == (5,)
    for five in (5, np.int64(5), np.array(5), Index(5)):
        assert st.Layout(five) == st.Layout((5,))
        assert st.Layout((5,), five).strides == (5,)
        assert st.packed_strides(five) == (1,)
    assert st.Layout((6,)).offset_of(4) == 4
    assert st.Layout((6,)).reshape(6) == st.Layout((6,))


def test_layout_keeps_the_callers_exact_tuple():
    # the fast path: a tuple of exact ints is stored as it is (no copy), and only then
    sizes = (2, 3)
    assert st.Layout(sizes).sizes is sizes
    assert st.Layout(list(sizes)).sizes is not sizes


@pytest.mark.parametrize(
    "bad",
    [(n for n in (2, 3)), iter([2, 3]), {2, 3}, frozenset({2}), {2: 3}, "23", b"23",
     bytearray(b"23"), 2.0, None, True, np.True_, np.array(True), (2, 3.0), (2, True),
     (2, np.True_), [np.array([1, 2])], np.array([2.0, 3.0]), (FloatIndex(),), object(),
     UnknownLengthVector()],
    ids=repr,
)
def test_refused_forms_name_the_argument(bad):
    with pytest.raises(TypeError, match="sizes"):
        st.Layout(bad)
    if bad is not None:
        with pytest.raises(TypeError, match="strides"):
            st.Layout((2, 2), bad)
    with pytest.raises(TypeError, match="index"):
        st.offset_of(bad, (1, 1))


@pytest.mark.parametrize(
    "bad",
    [(f for f in (True, False)), {True, False}, {0: True, 1: False}, "ab", 3, True, np.True_,
     (True, 2), (True, 1.0), (True, "x"), (True, None)],
    ids=repr,
)
def test_refused_broadcast_flags_name_the_argument(bad):
    with pytest.raises(TypeError, match="broadcast"):
        st.packed_strides((2, 2), broadcast=bad)


def test_a_consumed_generator_is_not_stored():
    gen = (n for n in (2, 3))
    with pytest.raises(TypeError, match="generator"):
        st.Layout(gen)
    assert list(gen) == [2, 3]        # refused before it was read


def test_bool_tensors_are_not_sizes():
    torch = pytest.importorskip("torch")
    for flag in (torch.tensor(True), torch.tensor([True, False])):
        with pytest.raises(TypeError, match="bool"):
            st.Layout(flag)
        with pytest.raises(TypeError, match="bool"):
            st.Layout((2, 3), offset=flag if flag.ndim == 0 else 0, itemsize=flag.ndim or 1,
                      strides=None if flag.ndim == 0 else flag)
    with pytest.raises(TypeError, match=r"sizes\[0\].*bool"):
        st.Layout((torch.tensor(True), 2))
    assert st.Layout((torch.tensor(3), 2)).sizes == (3, 2)
    # 0-d and 1-D bool tensors are broadcast flags like True and False
    flags = torch.tensor([False, True, False, False])
    assert st.packed_strides((2, 3, 4, 5), "NHWC", broadcast=flags) == (20, 0, 5, 1)
    y = np.zeros((1, 1, 1, 1, 4), np.float32)
    for flag in (torch.tensor(True), np.True_, True):
        with pytest.raises(TypeError, match=r"channels.*bool"):
            st.from_blocked(y, "NCHW4", channels=flag)
    assert st.from_blocked(y, "NCHW4", channels=torch.tensor(1)).shape == (1, 1, 1, 1)


def test_foreign_objects_own_errors_come_out_unchanged():
    with pytest.raises(Boom):
        st.Layout((2, RaisingIndex()))
    with pytest.raises(Boom):
        st.Layout((2,), offset=RaisingIndex())


# ---- the int64 edge: every span is exact or an OverflowError --------------------------------


def _span_oracle(sizes, strides, offset):
    """(lo, hi) in Python integers, or None for an empty layout."""
    if 0 in sizes:
        return None
    lo = offset + sum(min(0, (n - 1) * s) for n, s in zip(sizes, strides, strict=True))
    hi = offset + sum(max(0, (n - 1) * s) for n, s in zip(sizes, strides, strict=True))
    return lo, hi


def _offsets(sizes, strides, offset):
    return {offset + sum(i * s for i, s in zip(index, strides, strict=True))
            for index in itertools.product(*(range(n) for n in sizes))}


def test_the_int64_min_stride_issue_cases():
    with pytest.raises(OverflowError):
        st.buffer_size((2,), (-BIG,), itemsize=1, align=1)
    with pytest.raises(OverflowError):
        st.Layout((2,), (-BIG,))
    with pytest.raises(OverflowError):
        st.buffer_size((2,), (BIG - 1,), itemsize=1, align=1)   # 2**63 bytes
    # the widest spans that fit: 2**63 - 1 offsets
    assert st.buffer_size((2,), (BIG - 2,), itemsize=1, align=1) == BIG - 1
    L = st.Layout((2,), (-(BIG - 2),), offset=BIG - 2)
    assert L.span == (0, BIG - 2) and L.is_padded and not L.is_packed and not L.overlaps
    M = st.Layout((2,), (-(BIG - 2),), offset=-1)
    assert M.span == (-BIG + 1, -1) and M.is_padded


EDGE = hst.sampled_from([0, 1, 2, 3, -1, -2, 2**62, -(2**62), 2**62 - 1, BIG - 1, BIG - 2,
                         -BIG, -BIG + 1, -BIG + 2, 2**32, 2**31 - 1, -(2**31)])


@given(hst.lists(hst.integers(1, 3), min_size=1, max_size=3).flatmap(
    lambda sizes: hst.tuples(hst.just(tuple(sizes)),
                             hst.tuples(*[EDGE | hst.integers(-4, 4)] * len(sizes)), EDGE)))
def test_spans_at_the_int64_edge_are_exact(args):
    sizes, strides, offset = args
    lo, hi = _span_oracle(sizes, strides, offset)
    fits = -BIG <= lo and hi < BIG and hi - lo + 1 < BIG and hi + 1 < BIG
    try:
        L = st.Layout(sizes, strides, offset=offset)
    except OverflowError:
        assert not fits
        return
    assert fits and L.span == (lo, hi)
    offsets = _offsets(sizes, strides, offset)
    assert L.is_padded == (len(offsets) != hi - lo + 1)
    assert L.is_packed == (len(offsets) == L.size == hi - lo + 1)
    assert L.overlaps == (len(offsets) < L.size)
    assert st.buffer_size(sizes, strides, itemsize=1, align=1) == hi - lo + 1


# ---- strict names and arguments ------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["NCHW\u0664", "NCHW\U0001d7dc", "NCHW04", "NCHW0", "nChw08c",
                                 "NCHW 4", "NCHW+4", "NCHW4\n", f"NCHW{BIG}", "NCHW" + "9" * 40])
def test_blocked_names_are_strict(fmt):
    with pytest.raises(ValueError, match="fmt"):
        formats.parse_blocked(fmt)


def test_largest_blocked_name():
    assert formats.parse_blocked(f"NCHW{BIG - 1}").block == BIG - 1


@pytest.mark.parametrize(("block", "exc"), [(0, ValueError), (-4, ValueError),
                                            (True, TypeError), (4.0, TypeError),
                                            ("4", TypeError)])
def test_blocked_format_fields_are_checked(block, exc):
    with pytest.raises(exc, match="block"):
        formats.BlockedFormat("NCHW4", block)


def test_blocked_format_block_is_normalised():
    assert type(formats.BlockedFormat("NCHW4", np.int64(4)).block) is int


def test_strides_agree_checks_its_arguments():
    with pytest.raises(ValueError, match=r"sizes\[0\]"):
        formats.strides_agree((-1, 2), (1, 1), (2, 1))
    with pytest.raises(ValueError, match="other"):
        formats.strides_agree((2, 3), (3, 1), (3, 1, 1))


@pytest.mark.parametrize(("ndim", "exc"), [(2.0, TypeError), (True, TypeError),
                                           (np.float64(2), TypeError), (-1, ValueError),
                                           (65, ValueError), (BIG, OverflowError)])
def test_label_order_ndim_must_be_an_integer(ndim, exc):
    with pytest.raises(exc, match="ndim"):
        formats.label_order("HW", ndim)
    with pytest.raises(exc, match="ndim"):
        formats.physical_order("C", ndim)


def test_label_order_takes_integer_like_ndim():
    assert formats.label_order("WH", np.int64(2)) == (1, 0)
    with pytest.raises(TypeError, match="label"):
        formats.label_order(5, 2)


def test_matching_labels_blames_the_argument_passed():
    with pytest.raises(ValueError, match="strides has 3"):
        formats.matching_labels((2, 3), (3, 1, 1))
    with pytest.raises(TypeError, match=r"strides\[1\]"):
        formats.matching_labels((2, 3), (3, np.array([0, 1])))
    with pytest.raises(TypeError, match=r"strides\[1\]"):
        formats.preferred_label((2, 3), (3, "1"))


def test_absurd_sizes_are_refused_before_any_allocation():
    x = np.zeros((1, 3, 1, 1), np.float32)
    with pytest.raises(ValueError, match=r"fmt 'NCHW1099511627776'.*bytes"):
        st.to_blocked(x, f"NCHW{2**40}")
    with pytest.raises(ValueError, match=r"offset=1099511627776.*bytes"):
        st.relayout(x, st.Layout(x.shape, offset=2**40, itemsize=4))
    with pytest.raises(ValueError, match="block 1099511627776"):
        st.to_blocked(x, formats.BlockedFormat("big", 2**40))


# ---- differential fuzz: hostile arguments give the plain call's result, or an error ---------


class Bad:
    """Marks a value that must be refused (its plain meaning is no value at all)."""


SEQUENCE_WRAPPERS = [
    lambda v: v, list, lambda v: [Index(x) for x in v], lambda v: tuple(np.int64(x) for x in v),
    lambda v: np.array(v, dtype=np.int64), lambda v: array.array("q", v), LyingSequence,
    lambda v: shrinking(v) if v else [], lambda v: shrinking(v, GrowingIndex) if v else [],
]
BAD_SEQUENCES = [
    lambda v: (x for x in v), lambda v: iter(v), set, lambda v: (*v, 1.5), lambda v: (*v, True),
    lambda v: (*v, "1"), lambda v: (*v, None), lambda v: (*v, FloatIndex()),
    lambda v: (*v, RaisingIndex()), lambda v: 2.5, lambda v: b"\x02", lambda v: "xyz",
    lambda v: {0: 1},
]
SCALAR_WRAPPERS = [lambda v: v, Index, np.int64, lambda v: np.array(v, dtype=np.int64)]
BAD_SCALARS = [2.5, True, np.True_, "1", b"1", object(), FloatIndex(), RaisingIndex(), [1]]
INTS = [0, 1, 2, 3, 4, 5, -1, -2, 7, 2**31, 2**40, BIG - 1, -BIG, BIG, 2**70]


def _ints(rng: random.Random, n: int, *, small: bool) -> tuple[int, ...]:
    pool = INTS[:9] if small else INTS
    return tuple(rng.choice(pool) for _ in range(n))


def _hostile_sequence(rng: random.Random, plain: tuple[int, ...]) -> tuple[Any, Any]:
    """(hostile argument, its plain meaning or Bad)."""
    if rng.random() < 0.25:
        return rng.choice(BAD_SEQUENCES)(plain), Bad
    wrap = rng.choice(SEQUENCE_WRAPPERS)
    try:
        return wrap(plain), plain
    except OverflowError:              # numpy or array.array cannot hold a value beyond int64
        return plain, plain


def _hostile_scalar(rng: random.Random, plain: int) -> tuple[Any, Any]:
    if rng.random() < 0.2:
        return rng.choice(BAD_SCALARS), Bad
    try:
        return rng.choice(SCALAR_WRAPPERS)(plain), plain
    except OverflowError:
        return plain, plain


def _call_plan(rng: random.Random) -> tuple[str, Any, list[tuple[Any, Any]], dict[str, Any]]:
    """One random call: (name, function, [(hostile, plain) positional], {kw: (hostile, plain)})."""
    nd = rng.choice([0, 1, 2, 3, 4, 4])
    sizes = _ints(rng, nd, small=rng.random() < 0.8)
    strides = _ints(rng, nd, small=rng.random() < 0.7)
    axes = tuple(rng.sample(range(nd), nd))
    L = st.Layout((2, 3, 4, 5), (60, 1, 15, 3), offset=7, itemsize=2)
    seq = lambda v: _hostile_sequence(rng, v)      # noqa: E731
    num = lambda v: _hostile_scalar(rng, v)        # noqa: E731
    flags = tuple(rng.random() < 0.5 for _ in range(nd))
    plans = [
        ("Layout", st.Layout, [seq(sizes), seq(strides)],
         {"offset": num(rng.choice(INTS)), "itemsize": num(rng.choice([1, 2, 4, 0, -1]))}),
        ("Layout.packed", st.Layout.packed, [seq(sizes), seq(axes)],
         {"broadcast": seq(flags) if rng.random() < 0.5 else (None, None)}),
        ("packed_strides", st.packed_strides, [seq(sizes), seq(axes)],
         {"broadcast": seq(flags) if rng.random() < 0.5 else (None, None)}),
        ("buffer_size", st.buffer_size, [seq(sizes), seq(strides)],
         {"itemsize": num(rng.choice([1, 2, 8, 0])), "align": num(rng.choice([1, 4, 3, 0]))}),
        ("offset_of", st.offset_of, [seq(sizes), seq(strides), num(rng.choice(INTS))], {}),
        ("L.offset_of", L.offset_of, [seq(_ints(rng, 4, small=True))], {}),
        ("L.permute", L.permute, [seq(tuple(rng.sample(range(4), 4)))], {}),
        ("L.reshape", st.Layout((2, 3, 4, 5), offset=7).reshape,
         [seq(rng.choice([(120,), (2, 60), (-1, 5), (6, 20), sizes]))], {}),
        ("L.broadcast_to", L.broadcast_to, [seq(rng.choice([(3, 2, 3, 4, 5), sizes]))], {}),
        ("L.buffer_size", L.buffer_size, [num(rng.choice([1, 4, 0, 64]))], {}),
        ("L[index]", L.__getitem__, [num(rng.choice([0, 1, -1, 2, BIG]))], {}),
        ("strides_agree", formats.strides_agree, [seq(sizes), seq(strides), seq(strides)], {}),
        ("matching_labels", formats.matching_labels, [seq(sizes), seq(strides)], {}),
        ("preferred_label", formats.preferred_label, [seq(sizes), seq(strides)], {}),
        ("label_order", formats.label_order,
         [(rng.choice(["NCHW", "NHWC", "HW", "WH", "DHW"]),) * 2, num(rng.choice([2, 3, 4]))],
         {}),
        ("physical_order", formats.physical_order, [seq(axes), num(nd)], {}),
        ("blocked_shape", formats.blocked_shape,
         [seq(rng.choice([(1, 5, 2, 2), sizes])), (rng.choice(["NCHW4", "CHWN4"]),) * 2], {}),
        ("Layout.blocked_view", st.Layout.blocked_view, [seq(rng.choice([(2, 8, 3, 3), sizes])),
                                                ("NCHW4",) * 2], {}),
        ("Layout.blocked", st.Layout.blocked, [seq(rng.choice([(1, 5, 2, 2), sizes])),
                                                    (rng.choice(FORMATS),) * 2],
         {"itemsize": num(rng.choice([1, 2, 0]))}),
        ("parse_blocked", formats.parse_blocked, [(rng.choice(FORMATS),) * 2], {}),
        ("L[slice]", lambda *bounds: L[slice(*bounds)],
         [_slice_bound(rng, v) for v in (rng.choice([0, 1, -1, None, BIG]),
                                         rng.choice([2, -1, None, 2**70]),
                                         rng.choice([1, 2, -1, None]))], {}),
    ]
    plans += _array_plans(rng, num, seq)
    name, fn, args, kwargs = rng.choice(plans)
    return name, fn, args, kwargs


def _slice_bound(rng: random.Random, plain: int | None) -> tuple[Any, Any]:
    """A slice bound: Python's own rules apply (bools are integers there), so no bools."""
    if rng.random() < 0.2:
        return rng.choice([2.5, "1", FloatIndex(), RaisingIndex()]), Bad
    if plain is None or rng.random() < 0.3:
        return plain, plain
    return rng.choice([Index, np.int64, lambda v: v])(plain) if abs(plain) < BIG else plain, plain


class FakeDLPack:
    """Claims to be a DLPack array; its ``__dlpack__`` gives garbage or raises."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def __dlpack__(self, **kwargs: Any) -> Any:
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


NOT_ARRAYS = [Index(3), [1, 2], (1, 2), None, "abc", FakeDLPack(42), FakeDLPack(Boom("dlpack")),
              FakeDLPack(b"capsule"), object()]
FORMATS = ["NCHW4", "NCHW\u0664", "NCHW04", "nChw8c", "CHWN4", f"NCHW{2**40}", "NCHW" + "9" * 25,
           4, None, b"NCHW4"]


def _array_plans(rng: random.Random, num: Any, seq: Any) -> list[Any]:
    """Plans for the array functions: hostile layouts, formats, channels, thread counts."""
    x = np.arange(2 * 5 * 2 * 3, dtype=np.float32).reshape(2, 5, 2, 3)
    y = st.to_blocked(x, "NCHW4")
    base = np.arange(10, dtype=np.float32)
    arrays = [(x, x), (y, y), (base, base)] + [(bad, Bad) for bad in NOT_ARRAYS]
    threads = rng.choice([(None, None), num(rng.choice([1, 2, 0, -1, BIG]))])
    layout = rng.choice([
        (st.Layout((2, 3), (4, 1), offset=1, itemsize=4),) * 2,
        (st.Layout((3, 4), itemsize=4),) * 2,
        (st.Layout((2,), (-3,), offset=2**40, itemsize=4),) * 2,
        seq((2, 3)),
    ])

    def copy_into(src: Any, num_threads: Any = None) -> np.ndarray:
        dst = np.zeros(np.shape(src), np.float32)
        st.copyto(dst, src, num_threads=num_threads)
        return dst

    def copy_onto(dst: Any) -> np.ndarray:
        # dst is x itself or a non-array: copying x onto itself leaves x unchanged
        st.copyto(dst, x)
        return np.array(dst)

    def view_copy(base: Any, layout: Any, copy: Any = None) -> np.ndarray:
        return np.array(st.view(base, layout, copy=copy))

    target = rng.choice([("NHWC",) * 2, ("F",) * 2, seq((0, 2, 3, 1)), ("NCHW\u0664",) * 2,
                         (st.Layout(x.shape, offset=2**40, itemsize=4),) * 2])
    fmt = rng.choice(FORMATS)
    return [
        ("layout_of", st.layout_of, [rng.choice(arrays)], {}),
        ("view", view_copy, [rng.choice(arrays), layout],
         {"copy": rng.choice([(None, None), (True, True), (False, False), (Index(1), Bad)])}),
        ("copyto", copy_into, [rng.choice(arrays)], {"num_threads": threads}),
        ("copyto(dst=)", copy_onto, [rng.choice([(x, x), *arrays[3:]])], {}),
        ("relayout", st.relayout, [(x, x), target], {"num_threads": threads}),
        ("to_blocked", st.to_blocked, [(x, x), (fmt, fmt)], {"num_threads": threads}),
        ("from_blocked", st.from_blocked, [(y, y), ("NCHW4", "NCHW4")],
         {"channels": num(rng.choice([5, 4, 8, 9, 0, BIG])), "num_threads": threads}),
    ]


def _same(got: Any, expected: Any) -> bool:
    if isinstance(got, np.ndarray):
        return (isinstance(expected, np.ndarray) and got.shape == expected.shape
                and got.dtype == expected.dtype and got.strides == expected.strides
                and np.array_equal(got, expected))
    return bool(got == expected)


def _outcome(fn, args, kwargs) -> tuple[str, Any]:
    try:
        return "ok", fn(*args, **kwargs)
    except (*ALLOWED, Boom) as exc:
        return type(exc).__name__, exc


def _normalised(result: Any) -> bool:
    """Every tuple in a result holds exact ints (or strs); a Layout's fields are exact."""
    if isinstance(result, st.Layout):
        return _exact(result.sizes) and _exact(result.strides)
    if isinstance(result, formats.BlockedFormat):
        return type(result.block) is int and type(result.name) is str
    if isinstance(result, tuple):
        return type(result) is tuple and all(type(v) in (int, str) for v in result)
    return type(result) in (int, bool, str, type(None), np.ndarray)


def _short(value: Any) -> str:
    return reprlib.repr(value)


def fuzz(seed: int, calls: int) -> dict[str, set[str]]:
    """Run ``calls`` random hostile calls; raise AssertionError on the first wrong outcome.

    Returns the outcomes seen for each function ("ok" or an exception's class name).
    """
    rng = random.Random(seed)
    seen: dict[str, set[str]] = {}
    for _ in range(calls):
        name, fn, args, kwargs = _call_plan(rng)
        hostile_args = [h for h, _ in args]
        hostile_kwargs = {k: h for k, (h, _) in kwargs.items()}
        plain_args = [p for _, p in args]
        plain_kwargs = {k: p for k, (_, p) in kwargs.items()}
        kind, got = _outcome(fn, hostile_args, hostile_kwargs)
        where = f"{name}(*{_short(hostile_args)}, **{_short(hostile_kwargs)})"
        if any(p is Bad for p in [*plain_args, *plain_kwargs.values()]):
            assert kind != "ok", f"{where} accepted a refused argument: {_short(got)}"
        else:
            plain_kind, expected = _outcome(fn, plain_args, plain_kwargs)
            if kind == "ok":
                assert plain_kind == "ok" and _same(got, expected), (
                    f"{where}: {_short(got)} != {_short(expected)}")
                assert _normalised(got), f"{where} gave {got!r}"
            else:
                assert kind == plain_kind, f"{where} raised {got!r}; plain: {expected!r}"
        seen.setdefault(name, set()).add(kind)
    return seen


def test_fuzz_hostile_arguments_in_a_subprocess():
    out = run_isolated("""
        import test_hostile_inputs as t
        for name, kinds in sorted(t.fuzz(seed=20261124, calls=10000).items()):
            print(name, *sorted(kinds))
    """, timeout=120)
    seen = {line.split()[0]: set(line.split()[1:]) for line in out.splitlines()}
    # every function was called, and each both succeeded and refused something
    assert len(seen) == 28
    assert {name for name, kinds in seen.items() if "ok" not in kinds or len(kinds) < 2} == set()


def test_endless_and_huge_sequences_are_refused_without_reading_them():
    # A sequence whose __getitem__ never raises IndexError would be read forever, and
    # range(10**12) would be materialised: both must be refused after MAX_NDIM + 1 items.
    out = run_isolated("""
        import strided as st
        from strided import formats
        from isolated import probe, report

        class Endless:
            def __len__(self):
                return 2

            def __getitem__(self, i):
                return 1

        def refused(call):
            try:
                call()
            except ValueError as exc:
                assert "more than 64 entries" in str(exc), exc
            else:
                raise AssertionError("accepted")

        for name, arg in (("endless", Endless()), ("huge_range", range(10**12))):
            for what, call in (("sizes", lambda a=arg: st.Layout(a)),
                               ("strides", lambda a=arg: st.Layout((2,), a)),
                               ("packed_sizes", lambda a=arg: st.packed_strides(a)),
                               ("index", lambda a=arg: st.offset_of(a, (1,)))):
                def check(call=call):
                    refused(call)
                check.__name__ = f"{name}_{what}"
                probe(check)
        report()
    """, timeout=60)
    results = probe_results(out)
    assert len(results) == 8
    assert {name: outcome for name, outcome in results.items() if outcome != "ok"} == {}
