"""Copies from several Python threads at once: exact results, a shared budget of cores.

* The stress test runs, in a fresh interpreter with a tiny switch interval, threads that copy
  interleaved slices of one buffer (their byte ranges meet, so every copy runs the exact
  sharing test, which releases the GIL), threads that copy many small unrelated layouts (their
  plans collide in the plan cache's slots), and threads that convert, every destination inside
  guard bytes, every result checked against numpy. On main before the fix, 83-218 of 1-2 x 10^5
  copies came out wrong: a plan was read from a cache slot after the GIL was released, when
  another thread could have replaced it.
* Teams: several calls with the default thread count share the cores (strided._copy.team_enter);
  an explicit ``num_threads`` is honoured and counted.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from isolated import run_isolated

import strided as st
from strided import _copy

# One thread (pytest --parallel-threads): these tests start their own threads and read the
# process-wide count of team threads.
pytestmark = pytest.mark.thread_unsafe(reason="reads the process-wide team count")

STRESS = r"""
import sys, threading
import numpy as np
import strided as st

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else {seconds}
sys.setswitchinterval(1e-6)
GUARD = 0x5A
stop = threading.Event()
counts = {{}}
lock = threading.Lock()


def tally(name, wrong, done):
    with lock:
        w, d = counts.get(name, (0, 0))
        counts[name] = (w + wrong, d + done)


def guarded(shape, dtype, rng):
    # a destination view inside a bigger buffer of guard bytes: (buffer, view, where)
    n = int(np.prod(shape))
    item = np.dtype(dtype).itemsize
    buf = np.full((n + 32) * item, GUARD, np.uint8)
    flat = buf[16 * item:(16 + n) * item].view(dtype)
    view = flat.reshape(shape)
    if len(shape) > 1 and rng.random() < 0.5:
        view = flat.reshape(shape[::-1]).T
    return buf, view, item


def guards_ok(buf, item):
    return (buf[:16 * item] == GUARD).all() and (buf[-16 * item:] == GUARD).all()


def interleaved(seed):
    rng = np.random.default_rng(seed)
    done = wrong = 0
    while not stop.is_set():
        n = int(rng.integers(2, 3000))
        a = rng.integers(0, 1 << 30, 2 * n).astype(np.int32)
        want = a[1::2].copy()
        st.copyto(a[0::2], a[1::2])
        wrong += not np.array_equal(a[0::2], want) or not np.array_equal(a[1::2], want)
        done += 1
    tally("interleaved", wrong, done)


def small_layouts(seed):
    rng = np.random.default_rng(seed)
    done = wrong = 0
    while not stop.is_set():
        shape = tuple(int(v) for v in rng.integers(1, 12, int(rng.integers(1, 4))))
        dtype = (np.int8, np.int16, np.float32, np.float64)[int(rng.integers(4))]
        x = rng.integers(-100, 100, shape).astype(dtype)
        if rng.random() < 0.5:
            x = x.T
        if rng.random() < 0.3:
            x = x[::-1]
        buf, dst, item = guarded(x.shape, dtype, rng)
        st.copyto(dst, x)
        wrong += not np.array_equal(dst, x) or not guards_ok(buf, item)
        done += 1
    tally("small_layouts", wrong, done)


def conversions(seed):
    rng = np.random.default_rng(seed)
    done = wrong = 0
    while not stop.is_set():
        h, w = (int(v) for v in rng.integers(1, 40, 2))
        img = rng.integers(0, 256, (h, w, 3)).astype(np.uint8)
        scale = rng.random(3) + 0.5
        shift = rng.random(3) - 0.5
        buf, dst, item = guarded((3, h, w), np.float32, rng)
        st.copyto(dst.transpose(1, 2, 0), img, scale=scale, shift=shift, axis=2)
        want = (img.astype(np.float32) * scale.astype(np.float32)
                + shift.astype(np.float32)).transpose(2, 0, 1)
        wrong += not np.array_equal(dst, want) or not guards_ok(buf, item)
        done += 1
    tally("conversions", wrong, done)


def large(seed):
    # big enough for a team (the default thread count): exact, and the teams share the cores
    rng = np.random.default_rng(seed)
    done = wrong = 0
    while not stop.is_set():
        x = rng.integers(0, 1 << 20, (1, 32, 96, 96)).astype(np.float32)
        y = st.relayout(x, "NHWC")
        wrong += not np.array_equal(x, y)
        done += 1
    tally("large", wrong, done)


workers = [interleaved, interleaved, small_layouts, small_layouts, conversions, large]
threads = [threading.Thread(target=f, args=(i,)) for i, f in enumerate(workers)]
for t in threads:
    t.start()
stop.wait(SECONDS)
stop.set()
for t in threads:
    t.join()
from strided import _copy
print("busy", _copy._busy_threads())
for name, (w, d) in sorted(counts.items()):
    print(name, w, d)
"""


def _stress(seconds: float) -> dict[str, tuple[int, int]]:
    out = run_isolated(STRESS.format(seconds=seconds), timeout=seconds * 4 + 120)
    lines = [line.split() for line in out.splitlines()]
    assert lines[0] == ["busy", "0"], out            # every team handed its threads back
    return {name: (int(w), int(d)) for name, w, d in lines[1:]}


def _check(counts: dict[str, tuple[int, int]]) -> None:
    assert set(counts) == {"interleaved", "small_layouts", "conversions", "large"}
    assert all(done > 0 for _, done in counts.values()), counts
    assert {name: w for name, (w, _) in counts.items() if w} == {}, counts


def test_threads_copying_at_once_get_exact_results():
    _check(_stress(4.0))


@pytest.mark.slow
def test_threads_copying_at_once_get_exact_results_long():
    _check(_stress(60.0))


def test_default_teams_share_the_cores():
    """Every call running without the GIL counts its threads against the cores: with the
    default thread count a call takes at most the cores the others leave free (at least its own
    thread); an explicit count is honoured and counted."""
    if not st.openmp_enabled():
        assert _copy._team(None) == (1, 1)
        _copy._team_leave(1)          # (left counted, it failed the next test's count)
        assert _copy._busy_threads() == 0
        return
    cores = _copy._cores()
    default = _copy.resolve_threads(None)
    assert _copy._busy_threads() == 0
    first, a = _copy._team(None)
    assert first == default and a == first
    second, b = _copy._team(None)
    assert second == max(1, min(default, cores - first)) and b == second
    explicit, c = _copy._team(3)
    assert explicit == 3 and c == 3           # honoured, whatever is busy
    third, d = _copy._team(None)
    assert (third, d) == (1, 1)               # nothing left: its own thread, counted
    assert _copy._busy_threads() == a + b + c + d
    for counted in (a, b, c, d):
        _copy._team_leave(counted)
    assert _copy._busy_threads() == 0
    assert _copy._team(None, most=1) == (1, 1)    # serial work counts the calling thread
    _copy._team_leave(1)
    again, e = _copy._team(None)
    assert again == default
    _copy._team_leave(e)
    assert _copy._busy_threads() == 0


def test_a_default_team_gives_cores_back_to_later_calls():
    """A worker of a default-sized team stops claiming work once a later call's threads make
    the count exceed the cores; explicit teams keep theirs."""
    if not st.openmp_enabled() or _copy.resolve_threads(None) < 2:
        pytest.skip("no team to give a core back")
    assert _copy._team_yields(None, later=1)
    assert not _copy._team_yields(None, later=0)
    assert not _copy._team_yields(2, later=1)
    assert _copy._busy_threads() == 0


def test_a_worker_that_gave_its_core_back_takes_one_again_when_free():
    """The earlier call's worker naps while the later call runs, and claims work again once
    a core is free, so the call that ends last runs its tail on all the cores; it stops when
    every block is claimed."""
    if not st.openmp_enabled() or _copy.resolve_threads(None) < 2:
        pytest.skip("no team to give a core back")
    later = _copy._cores() - _copy.resolve_threads(None) + 1    # just past the cores
    gives, early, late, same_count, keeps, stops = _copy._team_rejoins(later)
    assert gives and not early and late and same_count and keeps and stops
    assert _copy._busy_threads() == 0


def test_teams_are_handed_back_after_every_route():
    """Copies, conversions, staged and shifted routes leave nothing counted."""
    x = np.arange(1 << 20, dtype=np.float32).reshape(64, 128, 128)
    st.relayout(x, (2, 0, 1))
    st.relayout(x, (2, 0, 1), dtype=np.float16)
    st.copyto(x[:, 1:], x[:, :-1])
    st.to_blocked(x.reshape(1, 64, 128, 128), "NCHW32", dtype=np.int8, scale=3.0)
    assert _copy._busy_threads() == 0


@pytest.mark.skipif(os.cpu_count() == 1, reason="one core")
def test_process_wide_budget_is_shared_by_both_engines():
    """A conversion's team and a copy's team count against the same cores."""
    if not st.openmp_enabled():
        pytest.skip("serial build")
    _, claimed = _copy._team(None)
    try:
        # a conversion with the default count now finds the cores taken: it still converts
        x = np.random.default_rng(0).random((1, 64, 64, 64)).astype(np.float32)
        y = st.relayout(x, "NHWC", dtype=np.float16)
        assert np.array_equal(y, x.astype(np.float16))
        assert _copy._busy_threads() == claimed
    finally:
        _copy._team_leave(claimed)
