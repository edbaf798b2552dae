"""The exact self-overlap and padding decisions of the core, against brute force.

The property tests cover small layouts; these push the solver into its later stages (packed
merges, pairwise gcd test, dominance, pigeonhole, the bounded search) with larger sizes and
strides, structured layouts of rank up to 64, and an equal-subset-sum instance.
"""

from __future__ import annotations

import itertools
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import strided as st
from strided import _core


def brute_offsets(sizes, strides):
    return [
        sum(i * s for i, s in zip(idx, strides))
        for idx in itertools.product(*(range(n) for n in sizes))
    ]


def brute_overlaps(sizes, strides):
    offsets = brute_offsets(sizes, strides)
    return len(set(offsets)) < len(offsets)


def brute_padded(sizes, strides):
    offsets = set(brute_offsets(sizes, strides))
    return bool(offsets) and len(offsets) < max(offsets) - min(offsets) + 1


@pytest.mark.parametrize("seed", range(4))
def test_overlap_and_padding_match_brute_force_on_wide_strides(seed):
    rng = random.Random(seed)
    for _ in range(1500):
        ndim = rng.randint(2, 8)
        sizes = [rng.randint(1, 4) for _ in range(ndim)]
        limit = rng.choice([6, 40, 500, 10**6])
        strides = [rng.randint(-limit, limit) for _ in range(ndim)]
        layout = st.Layout(sizes, strides)
        assert layout.overlaps == brute_overlaps(sizes, strides), (sizes, strides)
        assert layout.is_padded == brute_padded(sizes, strides), (sizes, strides)


@pytest.mark.parametrize(
    ("sizes", "strides", "expected"),
    [
        ((3, 3), (2, 3), False),  # not dominant, yet 2 x = -3 y has no solution in range
        ((4, 4), (3, 2), True),  # 3 * 2 == 2 * 3
        ((2, 2, 2), (4, 6, 10), True),  # 4 + 6 == 10: a three-way tie no pair sees
        ((2, 2, 2), (4, 6, 11), False),
        ((5, 5), (1, 1), True),  # sliding window
        ((4, 4), (5, 1), False),  # diagonal-free padded grid
        ((3, 4), (4, 1), False),  # packed
        ((6,), (7,), False),
        ((2, 3, 4), (0, 4, 1), True),  # broadcast
        ((0, 3), (0, 0), False),  # empty never overlaps
        ((1, 1, 1), (0, 0, 0), False),  # one element
        ((2, 3, 2), (1, 2, 5), True),  # 1 + 2 * 2 == 5
        ((2, 3, 2), (1, 2, 6), False),  # i + 2 j fills 0..5 once, then 6 dominates
        ((3, 3, 3), (1, 3, 8), True),  # 2 * 1 + 2 * 3 == 8
        ((3, 3, 3), (1, 3, 10), False),
    ],
)
def test_hand_made_cases(sizes, strides, expected):
    assert brute_overlaps(sizes, strides) == expected  # the table itself is right
    assert _core.overlaps(sizes, strides) == expected


def test_equal_subset_sum_instance_is_decided_exactly():
    # Every size is 2, so an overlap is two different subsets of strides with equal sums.
    rng = random.Random(7)
    for _ in range(30):
        strides = [rng.randint(1000, 3000) for _ in range(12)]
        sizes = [2] * 12
        assert _core.overlaps(sizes, strides) == brute_overlaps(sizes, strides), strides


def test_rank_64_layouts_are_decided():
    # 62 dims of size 2 packed, two of size 1: no overlap, the largest legal element count.
    sizes = [2] * 62 + [1, 1]
    layout = st.Layout(sizes)
    assert layout.is_packed and not layout.overlaps and not layout.is_padded
    # Swap two strides: still packed (another order), still no overlap.
    strides = list(layout.strides)
    strides[0], strides[61] = strides[61], strides[0]
    assert not st.Layout(sizes, strides).overlaps
    # One stride doubled leaves a gap but no overlap; one halved makes a collision.
    strides = list(layout.strides)
    strides[0] *= 2
    assert st.Layout(sizes, strides).is_padded and not st.Layout(sizes, strides).overlaps
    strides = list(layout.strides)
    strides[1] = strides[2]
    assert st.Layout(sizes, strides).overlaps
    # Pigeonhole: 40 dims of size 2 within a span of 40 * 1000 offsets must collide.
    rng = random.Random(3)
    assert st.Layout([2] * 40, [rng.randint(1, 1000) for _ in range(40)]).overlaps


def test_sliced_views_of_a_packed_buffer_never_overlap():
    rng = random.Random(11)
    base = st.Layout((6, 7, 8, 9))
    for _ in range(300):
        key = tuple(
            slice(rng.randint(0, n - 1), None, rng.choice([1, 2, 3, -1, -2])) for n in base.sizes
        )
        view = base[key].permute(rng.sample(range(4), 4))
        assert not view.overlaps
        assert view.is_padded == brute_padded(view.sizes, view.strides)


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX SIGINT (Windows has no signal to send"
                    " a process that Python turns into KeyboardInterrupt)")
def test_long_search_is_interruptible():
    # A 36-dim equal-subset-sum instance of 56-bit numbers: without a work budget it runs for
    # far more than 30 s on the project's machine, but Ctrl-C must stop it. The SIGINT comes
    # from outside, as a terminal's does, every half second once the search has begun, until
    # the child ends: a search that never looks at its signals ignores all of them. The child
    # installs Python's SIGINT handler itself: a process started in the background by a
    # non-interactive shell (a CI runner's `cmd &`) inherits SIGINT ignored, and Python leaves
    # an ignored SIGINT ignored (the test then hung for 60 s whatever the search did).
    code = textwrap.dedent(
        """
        import random, signal
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from strided import _core
        rng = random.Random(5)
        strides = [rng.randint(2**55, 2**56) for _ in range(36)]
        print("searching", flush=True)
        try:
            _core.overlaps([2] * 36, strides, max_work=None)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        """
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "searching"
        deadline = time.monotonic() + 60
        while child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
            child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=5)
    finally:
        child.kill()
        child.wait()
    assert out.strip() == "interrupted", err
