"""strided._buffers: the reused blocks behind the zarr codecs' large results.

The pool's threshold is lowered to 1 MiB here (``small_pool``) so that the tests move a few MiB,
not the 32 MiB glibc's heap stops at; one test keeps the real threshold.
"""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest
from isolated import run_isolated

from strided import _buffers

MiB = 1 << 20


@pytest.fixture
def small_pool(monkeypatch: pytest.MonkeyPatch):
    """A fresh pool of 8 MiB, pooling arrays from 1 MiB."""
    monkeypatch.setattr(_buffers, "POOLED_FROM", MiB)
    monkeypatch.setattr(_buffers, "_POOL", _buffers._Pool(8 * MiB))
    return _buffers._POOL


def address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def owner(a: np.ndarray) -> object:
    """The first object in ``a``'s chain of bases that is not an array."""
    while isinstance(a, np.ndarray):
        a = a.base
    return a


pytestmark = pytest.mark.thread_unsafe  # the fixture swaps the module's pool


def test_small_arrays_are_numpys_own(small_pool) -> None:
    a = _buffers.empty((1023, 1024), np.uint8)
    assert a.flags.owndata and a.shape == (1023, 1024)
    assert small_pool.free == []


@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.complex128, "V3",
                                   np.dtype([("x", "<i2"), ("y", "<f8")])])
def test_a_pooled_array_is_a_fresh_c_contiguous_array(small_pool, dtype) -> None:
    dtype = np.dtype(dtype)
    shape = (3, 512, 1024 // dtype.itemsize + 1)
    a = _buffers.empty(shape, dtype)
    assert type(owner(a)) is _buffers._Lease
    assert a.shape == shape and a.dtype == dtype
    assert a.flags.c_contiguous and a.flags.writeable and not a.flags.owndata
    assert address(a) % 64 == 0
    raw = a.view(np.uint8).reshape(-1)
    raw[:] = np.arange(raw.size, dtype=np.uint64).astype(np.uint8)
    assert np.array_equal(raw, np.arange(raw.size, dtype=np.uint64).astype(np.uint8))


def test_a_released_block_is_handed_out_again(small_pool) -> None:
    a = _buffers.empty((2 * MiB,), np.uint8)
    where = address(a)
    del a
    gc.collect()
    assert len(small_pool.free) == 1
    b = _buffers.empty((MiB // 2, 2), np.float16)        # the same bytes, another type
    assert address(b) == where
    assert small_pool.free == []


def test_ragged_requests_reuse_a_larger_block_but_not_a_much_larger_one(small_pool) -> None:
    a = _buffers.empty((4 * MiB,), np.uint8)
    where = address(a)
    del a
    assert address(_buffers.empty((2 * MiB,), np.uint8)) != where   # half: a fresh array
    c = _buffers.empty((3 * MiB + 1,), np.uint8)                     # over 3/4: the block
    assert address(c) == where


def test_live_arrays_and_their_views_never_share_a_block(small_pool) -> None:
    a = _buffers.empty((2 * MiB,), np.uint8)
    a[:] = 7
    view = a[MiB:].reshape(1024, 1024)
    del a
    gc.collect()
    assert small_pool.free == []                       # the view holds the lease
    b = _buffers.empty((2 * MiB,), np.uint8)
    b[:] = 9
    assert np.all(view == 7)
    assert not np.shares_memory(b, view)
    del view
    gc.collect()
    assert len(small_pool.free) == 1


def test_the_oldest_blocks_go_beyond_the_limit(small_pool) -> None:
    arrays = [_buffers.empty((3 * MiB,), np.uint8) for _ in range(3)]
    addresses = [address(a) for a in arrays]
    while arrays:                                      # 9 MiB returned, 8 MiB kept: 2 blocks
        del arrays[0]
    assert len(small_pool.free) == 2
    kept = {b.ctypes.data + -b.ctypes.data % 64 for b in small_pool.free}
    assert kept == set(addresses[1:])


def test_a_limit_of_zero_keeps_nothing(small_pool) -> None:
    a = _buffers.empty((2 * MiB,), np.uint8)
    del a
    assert len(small_pool.free) == 1
    previous = _buffers.reuse_limit(0)
    try:
        assert previous == 8 * MiB
        assert small_pool.free == []
        b = _buffers.empty((2 * MiB,), np.uint8)
        assert b.flags.owndata                          # numpy's own array
        del b
        assert small_pool.free == []
    finally:
        assert _buffers.reuse_limit(previous) == 0
    assert _buffers.reuse_limit() == 8 * MiB


def test_arrays_larger_than_the_limit_are_numpys_own(small_pool) -> None:
    assert _buffers.empty((9 * MiB,), np.uint8).flags.owndata


@pytest.mark.parametrize(("value", "error"), [("1", TypeError), (1.5, TypeError),
                                               (True, TypeError), (-1, ValueError)])
def test_reuse_limit_names_a_bad_value(value, error) -> None:
    with pytest.raises(error, match="nbytes"):
        _buffers.reuse_limit(value)


def test_bad_shapes_raise_as_numpy_does(small_pool) -> None:
    with pytest.raises(ValueError, match="negative"):
        _buffers.empty((-1, 4 * MiB), np.uint8)
    with pytest.raises((ValueError, MemoryError)):
        _buffers.empty((1 << 40, 1 << 40), np.uint8)
    assert _buffers.empty((0, 4 * MiB), np.uint8).size == 0


def test_object_arrays_are_numpys_own(small_pool) -> None:
    a = _buffers.empty((MiB,), object)
    assert a.flags.owndata and a[0] is None


def test_threads_taking_and_returning_blocks_never_share_one(small_pool) -> None:
    failures: list[str] = []
    start = threading.Barrier(4)

    def worker(k: int) -> None:
        start.wait()
        for i in range(40):
            a = _buffers.empty((MiB + 4096 * (i % 3),), np.uint8)
            a[:] = k
            if not np.all(a == k):
                failures.append(f"thread {k}, round {i}")
            del a

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert sum(b.nbytes for b in small_pool.free) <= small_pool.limit


def test_the_real_threshold_is_glibcs_largest_mmap_threshold() -> None:
    assert _buffers.POOLED_FROM == 32 * MiB
    small = _buffers.empty((32 * MiB - 1,), np.uint8)
    large = _buffers.empty((32 * MiB,), np.uint8)
    assert small.flags.owndata and not large.flags.owndata
    del large
    _buffers.reuse_limit(_buffers.reuse_limit(0))       # the test process keeps no block


def test_a_forked_child_starts_with_an_empty_pool_of_the_same_limit() -> None:
    out = run_isolated('''
        import os
        import numpy as np
        from strided import _buffers

        _buffers.reuse_limit(96 << 20)
        a = _buffers.empty((40 << 20,), np.uint8)
        del a
        assert len(_buffers._POOL.free) == 1
        pid = os.fork()
        if pid == 0:
            ok = _buffers._POOL.free == [] and _buffers.reuse_limit() == 96 << 20
            b = _buffers.empty((40 << 20,), np.uint8)
            b[:] = 3
            os._exit(0 if ok and b.sum() == 3 * (40 << 20) else 1)
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status), len(_buffers._POOL.free))
    ''')
    assert out.split() == ["child", "0", "1"]


def test_a_lease_ended_inside_the_pools_own_lock_is_freed_not_waited_for(small_pool) -> None:
    """A garbage collection can end a lease while its thread is inside take or trim, holding
    the pool's lock: the block is then freed instead of deadlocking on the lock."""
    a = _buffers.empty((2 * MiB,), np.uint8)
    done = threading.Event()

    def end_lease_under_the_lock() -> None:
        nonlocal a
        with small_pool.held():
            del a
        done.set()

    worker = threading.Thread(target=end_lease_under_the_lock, daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert done.is_set(), "give_back waited for its own thread's lock"
    assert small_pool.free == []


def test_a_forked_child_frees_the_parents_arrays_even_with_the_old_pool_locked() -> None:
    """A fork while another thread holds the pool's lock: the child's copy of that lock stays
    held forever, so an array made before the fork, dying in the child, must not wait on it."""
    out = run_isolated('''
        import os, threading, time
        import numpy as np
        from strided import _buffers

        a = _buffers.empty((40 << 20,), np.uint8)
        holding, release = threading.Event(), threading.Event()

        def hold():
            with _buffers._POOL.held():
                holding.set()
                release.wait()

        t = threading.Thread(target=hold)
        t.start()
        holding.wait()
        pid = os.fork()
        if pid == 0:
            del a                       # its lease's pool is the parent's, locked here
            b = _buffers.empty((40 << 20,), np.uint8)
            del b
            os._exit(0 if len(_buffers._POOL.free) == 1 else 1)
        release.set()
        t.join()
        for _ in range(400):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                print("child", os.waitstatus_to_exitcode(status))
                break
            time.sleep(0.05)
        else:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            print("child hung")
    ''')
    assert out.split() == ["child", "0"]
