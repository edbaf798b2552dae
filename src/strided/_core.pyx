"""Compiled core of strided: exact int64 stride arithmetic.

Everything here counts in *elements*. The ``c_*`` routines (declared in ``_core.pxd``) take C
arrays, run without the GIL and report failures as status codes; the Python-facing functions
below validate their arguments with the GIL held, call them, and turn a status into an exception
that names the argument and the value. This module knows nothing of numpy or torch, of memory
or of threads: the copy engine (``_copy``) and the DLPack capsules (``interop._capsule``)
cimport what they need from here (``_core.pxd``).
"""
from cpython.buffer cimport (
    PyBUF_RECORDS_RO, PyBuffer_Release, PyObject_CheckBuffer, PyObject_GetBuffer,
)
from cpython.exc cimport PyErr_CheckSignals
from cpython.long cimport PyLong_AsLongLongAndOverflow
from libc.stdint cimport INT64_MAX, INT64_MIN, int64_t
from libc.math cimport sqrt
from libc.stdlib cimport free, malloc, qsort
from libc.string cimport memcpy

import numbers
import operator
import sys
from itertools import islice
from collections.abc import Mapping

cdef extern from *:
    """
    #include <stdint.h>
    #if defined(__GNUC__) || defined(__clang__)
    static inline int strided_add_ovf(int64_t a, int64_t b, int64_t *r) {
        return __builtin_add_overflow(a, b, r);
    }
    static inline int strided_mul_ovf(int64_t a, int64_t b, int64_t *r) {
        return __builtin_mul_overflow(a, b, r);
    }
    #else
    static inline int strided_add_ovf(int64_t a, int64_t b, int64_t *r) {
        if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) return 1;
        *r = a + b;
        return 0;
    }
    static inline int strided_mul_ovf(int64_t a, int64_t b, int64_t *r) {
        if (a == 0 || b == 0) { *r = 0; return 0; }
        if ((a == -1 && b == INT64_MIN) || (b == -1 && a == INT64_MIN)) return 1;
        if (a > 0 ? (b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a)
                  : (b > 0 ? a < INT64_MIN / b : a < INT64_MAX / b)) return 1;
        *r = a * b;
        return 0;
    }
    #endif
    /* (a * b) mod m for 0 <= a, b < m, without overflow. */
    static inline int64_t strided_mulmod(int64_t a, int64_t b, int64_t m) {
    #ifdef __SIZEOF_INT128__
        return (int64_t)(((__int128)a * (__int128)b) % m);
    #else
        int64_t r = 0;
        while (b) {
            if (b & 1) r = (r >= m - a) ? r - (m - a) : r + a;
            b >>= 1;
            a = (a >= m - a) ? a - (m - a) : a + a;
        }
        return r;
    #endif
    }
    """
    int strided_add_ovf(int64_t a, int64_t b, int64_t* r) noexcept nogil
    int strided_mul_ovf(int64_t a, int64_t b, int64_t* r) noexcept nogil
    int64_t strided_mulmod(int64_t a, int64_t b, int64_t m) noexcept nogil


MAX_RANK = MAX_NDIM
"""Largest rank (number of dimensions) a layout may have."""


class LayoutIndexError(IndexError, ValueError):
    """An index or axis outside a layout (both an ``IndexError`` and a ``ValueError``)."""


# --------------------------------------------------------------------------------------------
# Checked scalar arithmetic and small integer helpers (nogil, cannot fail)
# --------------------------------------------------------------------------------------------

cdef int checked_add(int64_t a, int64_t b, int64_t* out) noexcept nogil:
    return strided_add_ovf(a, b, out)


cdef int checked_mul(int64_t a, int64_t b, int64_t* out) noexcept nogil:
    return strided_mul_ovf(a, b, out)


cdef inline int64_t _gcd(int64_t a, int64_t b) noexcept nogil:
    """gcd of two non-negative numbers (gcd(0, b) = b)."""
    cdef int64_t r
    while b:
        r = a % b
        a = b
        b = r
    return a


cdef inline int64_t _floor_div(int64_t a, int64_t b) noexcept nogil:
    """floor(a / b) for b > 0 (C division truncates toward zero)."""
    cdef int64_t q = a // b
    if (a % b) < 0:
        q -= 1
    return q


cdef inline int64_t _ceil_div(int64_t a, int64_t b) noexcept nogil:
    """ceil(a / b) for b > 0."""
    cdef int64_t q = a // b
    if (a % b) > 0:
        q += 1
    return q


cdef inline int64_t _pos_mod(int64_t a, int64_t m) noexcept nogil:
    """a mod m in [0, m) for m > 0."""
    cdef int64_t r = a % m
    if r < 0:
        r += m
    return r


cdef int64_t _mod_inverse(int64_t a, int64_t m) noexcept nogil:
    """Inverse of a modulo m, for gcd(a, m) == 1 and 0 <= a < m (extended Euclid)."""
    cdef int64_t old_r = a, r = m, old_x = 1, x = 0, q, tmp
    while r:
        q = old_r // r
        tmp = old_r - q * r
        old_r = r
        r = tmp
        tmp = old_x - q * x
        old_x = x
        x = tmp
    return _pos_mod(old_x, m)


# --------------------------------------------------------------------------------------------
# Sizes, offsets, spans, packed strides
# --------------------------------------------------------------------------------------------

cdef int c_size(int nd, const int64_t* sizes, int64_t* out) noexcept nogil:
    """Number of elements. A zero size makes 0 even when the other sizes would overflow."""
    cdef int i
    cdef int64_t n = 1
    for i in range(nd):
        if sizes[i] == 0:
            out[0] = 0
            return STATUS_OK
    for i in range(nd):
        if checked_mul(n, sizes[i], &n):
            return STATUS_OVERFLOW
    out[0] = n
    return STATUS_OK


cdef int c_offset_of(int nd, const int64_t* index, const int64_t* strides, int64_t offset,
                     int64_t* out) noexcept nogil:
    cdef int i
    cdef int64_t term, acc = offset
    for i in range(nd):
        if checked_mul(index[i], strides[i], &term) or checked_add(acc, term, &acc):
            return STATUS_OVERFLOW
    out[0] = acc
    return STATUS_OK


cdef int c_span(int nd, const int64_t* sizes, const int64_t* strides, int64_t offset,
                int64_t* lo, int64_t* hi) noexcept nogil:
    """Lowest and highest element offset reached. Empty: (offset, offset - 1).

    STATUS_OVERFLOW unless lo, hi and the count hi - lo + 1 are all int64. A span that passes
    bounds every |stride| * (size - 1), and their sum, by INT64_MAX - 1: the predicates and
    the overlap search below rely on it (no |INT64_MIN| on a dim of more than one element).
    """
    cdef int i
    cdef int64_t ext
    for i in range(nd):
        if sizes[i] == 0:
            if offset == INT64_MIN:
                return STATUS_OVERFLOW
            lo[0] = offset
            hi[0] = offset - 1
            return STATUS_OK
    lo[0] = offset
    hi[0] = offset
    for i in range(nd):
        if checked_mul(sizes[i] - 1, strides[i], &ext):
            return STATUS_OVERFLOW
        if ext >= 0:
            if checked_add(hi[0], ext, hi):
                return STATUS_OVERFLOW
        elif checked_add(lo[0], ext, lo):
            return STATUS_OVERFLOW
    # The number of offsets hi - lo + 1 must be an int64 too: buffer sizes, overlap tests and
    # the padding predicate use it. It is computed as (hi - (lo + 1)) + 2 because -(lo + 1)
    # never overflows (-lo does at INT64_MIN), and hi >= lo keeps the first sum above -2.
    if checked_add(hi[0], -(lo[0] + 1), &ext) or checked_add(ext, 2, &ext):
        return STATUS_OVERFLOW
    return STATUS_OK


cdef int c_packed_strides(int nd, const int64_t* sizes, const int* order,
                          const unsigned char* broadcast, int64_t* out) noexcept nogil:
    """Packed strides for a physical order (outermost first).

    A broadcast dimension (``broadcast[axis]`` non-zero; ``broadcast`` may be NULL) gets stride
    0 and counts as size 1 for the others (DirectML's CalculateStrides). A size-0 dimension
    counts as size 1 too, as numpy and torch do, so that no stride collapses to 0.
    """
    cdef int k, ax
    cdef int64_t acc = 1
    cdef bint pending_overflow = False   # acc left int64: fine unless another stride needs it
    for k in range(nd - 1, -1, -1):
        ax = order[k]
        if broadcast != NULL and broadcast[ax]:
            out[ax] = 0
            continue
        if pending_overflow:
            return STATUS_OVERFLOW
        out[ax] = acc
        if sizes[ax] > 1 and checked_mul(acc, sizes[ax], &acc):
            pending_overflow = True
    return STATUS_OK


# --------------------------------------------------------------------------------------------
# Predicates
# --------------------------------------------------------------------------------------------

cdef void sort_by(int d, int64_t* key, int64_t* a, int64_t* b) noexcept nogil:
    """Insertion sort of key ascending, a and b (either may be NULL) moved alongside; d is at
    most 2 * MAX_NDIM + 1, where this is the fastest choice."""
    cdef int i, j
    cdef int64_t k, ka = 0, kb = 0
    for i in range(1, d):
        k = key[i]
        if a != NULL:
            ka = a[i]
        if b != NULL:
            kb = b[i]
        j = i - 1
        while j >= 0 and key[j] > k:
            key[j + 1] = key[j]
            if a != NULL:
                a[j + 1] = a[j]
            if b != NULL:
                b[j + 1] = b[j]
            j -= 1
        key[j + 1] = k
        if a != NULL:
            a[j + 1] = ka
        if b != NULL:
            b[j + 1] = kb


cdef inline void _sort_ascending(int d, int64_t* s, int64_t* u) noexcept nogil:
    """(s, u) pairs sorted by s."""
    sort_by(d, s, u, NULL)


cdef inline int64_t _abs_saturated(int64_t v) noexcept nogil:
    """|v|, with |INT64_MIN| (which int64 cannot hold: negating it is undefined) as INT64_MAX.
    Only a layout whose span leaves int64 has such a stride on a dim of several elements, and
    every caller refuses those; the predicates still get an order-preserving magnitude."""
    if v >= 0:
        return v
    return INT64_MAX if v == INT64_MIN else -v


cdef int _nontrivial(int nd, const int64_t* sizes, const int64_t* strides, bint skip_zero_strides,
                     int64_t* s, int64_t* u) noexcept nogil:
    """Collect (|stride|, size - 1) of the dims of size > 1; return how many."""
    cdef int i, d = 0
    for i in range(nd):
        if sizes[i] > 1 and not (skip_zero_strides and strides[i] == 0):
            s[d] = _abs_saturated(strides[i])
            u[d] = sizes[i] - 1
            d += 1
    return d


cdef bint _is_c_contiguous(int nd, const int64_t* sizes, const int64_t* strides) noexcept nogil:
    cdef int i
    cdef int64_t expected = 1
    for i in range(nd - 1, -1, -1):
        if sizes[i] != 1:
            if strides[i] != expected:
                return False
            expected *= sizes[i]   # cannot overflow: the size is validated
    return True


cdef bint _is_packed(int d, const int64_t* s, const int64_t* u) noexcept nogil:
    """Sorted |strides| must be 1, n0, n0*n1, ...: the offsets tile an interval exactly."""
    cdef int i
    cdef int64_t expected = 1
    for i in range(d):
        if s[i] != expected:
            return False
        # Past int64 no further stride can equal the product: packed only if this dim is last.
        if checked_mul(expected, u[i] + 1, &expected):
            return i == d - 1
    return True


cdef bint _covers_interval(int d, const int64_t* s, const int64_t* u) noexcept nogil:
    """Whether the sums of s[i] * k_i (0 <= k_i <= u[i]) fill [0, sum s*u] without a gap.

    With s sorted ascending this holds iff every s[j] <= 1 + sum_{i<j} s[i] * u[i]: by induction
    the first j dims cover [0, R_j] and a step s[j] <= R_j + 1 extends the cover; if some
    s[j] > R_j + 1, the value R_j + 1 is reached by nothing (smaller dims stop at R_j, any use of
    dim j or a larger one starts at s[j]).
    """
    cdef int i
    cdef int64_t reach = 0, ext
    for i in range(d):
        if s[i] > reach + 1:
            return False
        # A reach past int64 is beyond every stride: the rest cannot leave a gap.
        if checked_mul(s[i], u[i], &ext) or checked_add(reach, ext, &reach):
            return True
    return True


cdef int c_flags(int nd, const int64_t* sizes, const int64_t* strides) noexcept nogil:
    """FLAG_* bits of every cheap exact predicate (overlap is c_overlaps).

    Precondition: c_size and c_span succeeded on these sizes and strides (see c_span).
    """
    cdef int64_t s[MAX_NDIM]
    cdef int64_t u[MAX_NDIM]
    cdef int i, d, flags = 0
    for i in range(nd):
        if sizes[i] == 0:
            return FLAG_EMPTY | FLAG_PACKED | FLAG_CONTIGUOUS
    if _is_c_contiguous(nd, sizes, strides):
        flags |= FLAG_CONTIGUOUS
    for i in range(nd):
        if sizes[i] > 1 and strides[i] == 0:
            flags |= FLAG_BROADCAST
            break
    d = _nontrivial(nd, sizes, strides, False, s, u)
    _sort_ascending(d, s, u)
    if _is_packed(d, s, u):
        flags |= FLAG_PACKED
    # Padding is about gaps in the set of offsets: repeats (stride 0) do not change that set.
    d = _nontrivial(nd, sizes, strides, True, s, u)
    _sort_ascending(d, s, u)
    if not _covers_interval(d, s, u):
        flags |= FLAG_PADDED
    return flags


# ---- exact overlap: an element reached twice, or two layouts sharing memory ------------------
#
# Both questions are one bounded linear Diophantine problem, numpy's mem_overlap.c problem:
#     is there an integer x with  sum_k c_k x_k = t,  lo_k <= x_k <= hi_k?
#     (c_k > 0, lo_k <= 0 <= hi_k)
# * Self-overlap (two distinct indices i != j at one offset): x = i - j != 0, c_k = |stride_k|,
#   |x_k| <= u_k = size_k - 1, t = 0 ("symmetric": x and -x are both solutions).
# * Two layouts A and B sharing a byte (element 0 of B `delta` bytes after A's): one term per dim
#   of A (c = |stride| * itemsize, x in 0..u, or -u..0 for a negative stride), one per dim of B
#   with the opposite sign, and one "slack" term of coefficient 1 for the bytes inside an element
#   (p - q, -(itemsize_B - 1) .. itemsize_A - 1); t = delta.
# With every range -1..1 the problem is EQUAL SUBSET SUM, so it is NP-complete and no exact
# method is polynomial on every input. It is decided exactly, each step cheap and each removing
# work from the next:
#   1. self-overlap: a zero stride on a dim of size > 1 overlaps; a size-0 layout never does;
#      sharing: terms of equal coefficient merge (their ranges add);
#   2. sorted by c, a term whose c equals c * (number of values) of the one below it forms a
#      packed pair with it: every combination is one value of a single term; merge;
#   3. self-overlap: every pair (i, j) is decided exactly by gcd: the pair alone has a solution
#      iff c_j / g <= u_i and c_i / g <= u_j (g = gcd(c_i, c_j)); a pair solution overlaps;
#      the largest term dominates when c_max > sum of the others' c * u: its x must be 0; drop it;
#      (repeat 2-3 to a fixed point; <= 2 dims left means no overlap)
#   4. counting: self-overlap when more indices than offsets in the span (pigeonhole); sharing
#      when t is outside the reachable range (no), not a multiple of the gcd (no), or when the
#      sums cover every integer of their range (yes);
#   5. a depth-first search over x from the largest c down, each x_j bounded by what the smaller
#      terms can still reach (rmin_j <= t - c_j x_j <= rmax_j) and stepped by the congruence
#      c_j x_j = t (mod gcd of the smaller c), with the sign of the first non-zero x fixed in
#      the symmetric case. When that search could exceed 2**18 nodes, the smallest terms are
#      first tabulated (every sum they reach, at most 2**20 of them, sorted: meet in the middle)
#      and the search stops above them with a binary search for the residual.
# Steps 1-4 decide every layout made by slicing, permuting, broadcasting and reshaping a
# non-overlapping buffer, sliding windows, shifts and interleaved slices in O(d^2) for rank d.
# Step 5's worst case is exponential; it is reached only by hand-made strides with no common
# structure. Every search runs under a work budget (`max_work`: nodes visited plus table
# entries; negative means none): past it the answer is OVERLAP_UNDECIDED, never a guess.
# DEFAULT_MAX_WORK keeps a decision under about a second. The search checks for Ctrl-C every
# 2**20 nodes, so even an unbounded one stays interruptible.

cdef enum:
    # Bottom tables (step 5) hold at most this many sums; 8 MiB, built only past SEARCH_SMALL.
    BOTTOM_TABLE_MAX = 1 << 20
    SEARCH_SMALL = 1 << 18

# About 0.3 s of search on this project's 2-core x86-64 machine (measured: 2**24 nodes, its
# table included, take 1.0-1.2 s), so that a copy's fast path and its slow path's check of the
# same destination stay under a second together.
cdef int64_t _DEFAULT_MAX_WORK = 1 << 22
DEFAULT_MAX_WORK = _DEFAULT_MAX_WORK
"""Work budget of every overlap decision that does not name one (nodes of the search)."""


cdef int64_t default_max_work() noexcept nogil:
    return _DEFAULT_MAX_WORK


def _max_work_tuning(max_work=None):
    """Set the budget of the decisions that name none (copies included); return the previous
    one. For tests, which make every decision run out of budget on small layouts."""
    global _DEFAULT_MAX_WORK
    old = _DEFAULT_MAX_WORK
    if max_work is not None:
        _DEFAULT_MAX_WORK = max(0, int(max_work))
    return old


class TooHardError(ValueError, RuntimeError):
    """Deciding an overlap exactly needs more work than the budget allows (numpy's name).

    Raised where the answer matters and cannot be guessed: a check of a destination, or
    `Layout.overlaps`. Copies never raise it for their source: they treat an undecided overlap
    of source and destination as an overlap and go through a buffer, which is always correct.
    """
    __module__ = "strided"


ctypedef struct _Search:
    const int64_t* c          # coefficients, ascending, > 0, divided by their gcd
    const int64_t* lo         # x_i >= lo_i (<= 0)
    const int64_t* hi         # x_i <= hi_i (>= 0)
    const int64_t* rmin       # rmin[j] = sum_{i<j} c_i lo_i: the least the terms below reach
    const int64_t* rmax       # rmax[j] = sum_{i<j} c_i hi_i
    const int64_t* below_gcd  # gcd(c_0 .. c_{j-1}); 0 for j = 0
    bint symmetric            # self-overlap: t = 0, x != 0 wanted, x and -x equivalent
    int bottom                # terms 0 .. bottom-1 are answered by the table
    int64_t* table            # sorted distinct sums of those terms over their ranges
    Py_ssize_t table_len
    bint bottom_zero          # symmetric: some x != 0 of the bottom terms alone sums to 0
    int64_t work
    int64_t max_work          # < 0: no budget


cdef int _cmp_int64(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*>a)[0], y = (<const int64_t*>b)[0]
    return (x > y) - (x < y)


cdef bint _table_has(const _Search* q, int64_t t) noexcept nogil:
    cdef Py_ssize_t lo = 0, hi = q.table_len - 1, mid
    while lo <= hi:
        mid = lo + (hi - lo) // 2
        if q.table[mid] < t:
            lo = mid + 1
        elif q.table[mid] > t:
            hi = mid - 1
        else:
            return True
    return False


cdef inline bint _over_budget(_Search* q, int64_t work) noexcept nogil:
    q.work += work
    return q.max_work >= 0 and q.work > q.max_work


cdef int _build_bottom_table(_Search* q, int k) noexcept nogil:
    """Tabulate every sum of terms 0..k-1 (meet in the middle).

    Return 0, -1 out of memory (the search then goes on without a table), or OVERLAP_UNDECIDED
    when the table alone would exceed the work budget.
    """
    cdef Py_ssize_t total = 1, n = 1, m, p, zeros = 0
    cdef int i
    cdef int64_t x, step
    for i in range(k):
        total *= q.hi[i] - q.lo[i] + 1
    if _over_budget(q, total):
        return OVERLAP_UNDECIDED
    q.table = <int64_t*>malloc(total * sizeof(int64_t))
    if q.table == NULL:
        return -1
    q.table[0] = 0
    for i in range(k):
        m = n
        for x in range(q.lo[i], q.hi[i] + 1):
            if x != 0:   # x = 0 keeps the sums already there (every range holds 0)
                step = q.c[i] * x
                for p in range(n):
                    q.table[m] = q.table[p] + step
                    m += 1
        n = m
    # Each x vector was enumerated once, so a second 0 is a non-zero x summing to 0.
    for p in range(n):
        zeros += q.table[p] == 0
    q.bottom_zero = zeros > 1
    qsort(q.table, n, sizeof(int64_t), _cmp_int64)
    m = 1
    for p in range(1, n):
        if q.table[p] != q.table[m - 1]:
            q.table[m] = q.table[p]
            m += 1
    q.table_len = m
    q.bottom = k
    return 0


cdef int _search(_Search* q, int j, int64_t t, bint nonzero) except -1 nogil:
    """Is there x_0..x_j, in bounds, with sum c_i x_i == t (and, symmetric, x != 0 overall)?

    0 no, 1 yes, OVERLAP_UNDECIDED when the work budget ran out first.
    """
    cdef int64_t cj, g, lo, hi, tmp, h, m, x, x0
    cdef int found
    if j < q.bottom:
        if q.symmetric and t == 0:
            return nonzero or q.bottom_zero
        return _table_has(q, t)
    cj = q.c[j]
    g = q.below_gcd[j]
    # rmin_j <= t - c_j x <= rmax_j  <=>  (t - rmax_j) / c_j <= x <= (t - rmin_j) / c_j; a bound
    # that leaves int64 is far outside [lo_j, hi_j] and so does not bind.
    lo = q.lo[j] if checked_add(t, -q.rmax[j], &tmp) else max(q.lo[j], _ceil_div(tmp, cj))
    hi = q.hi[j] if checked_add(t, -q.rmin[j], &tmp) else min(q.hi[j], _floor_div(tmp, cj))
    if q.symmetric and not nonzero:
        lo = max(lo, 0)   # x and -x are both solutions: fix the sign of the first non-zero x
    if lo > hi:
        return 0
    if j == 0:
        if t % cj != 0:
            return 0
        x = t // cj
        return lo <= x <= hi and (not q.symmetric or nonzero or x != 0)
    # t - c_j x must be a multiple of g = gcd(c_0 .. c_{j-1}): solve c_j x = t (mod g).
    h = _gcd(cj, g)
    if t % h != 0:
        return 0
    m = g // h
    if m == 1:
        x0 = 0
    else:
        x0 = strided_mulmod(_pos_mod(t // h, m), _mod_inverse(_pos_mod(cj // h, m), m), m)
    x = lo + _pos_mod(x0 - _pos_mod(lo, m), m)
    while x <= hi:
        if _over_budget(q, 1):
            return OVERLAP_UNDECIDED
        if (q.work & 0xFFFFF) == 0:
            with gil:
                PyErr_CheckSignals()
        found = _search(q, j - 1, t - cj * x, nonzero or x != 0)
        if found:
            return found
        if x > INT64_MAX - m:
            break
        x += m
    return 0


cdef void _drop_term(int* dp, int i, int64_t* c, int64_t* lo, int64_t* hi) noexcept nogil:
    cdef int k
    for k in range(i, dp[0] - 1):
        c[k] = c[k + 1]
        lo[k] = lo[k + 1]
        hi[k] = hi[k + 1]
    dp[0] -= 1


cdef int _reduce_overlap(int* dp, int64_t* s, int64_t* u) noexcept nogil:
    """Steps 2-3 of a self-overlap. 1 when an overlap is proven, else 0 with the dims reduced."""
    cdef int i, j, d = dp[0]
    cdef bint changed = True
    cdef int64_t g, nxt, reach
    while changed:
        changed = False
        i = 1
        while i < d:
            if not checked_mul(s[i - 1], u[i - 1] + 1, &nxt) and nxt == s[i]:
                u[i - 1] = (u[i - 1] + 1) * (u[i] + 1) - 1   # <= the layout's size
                for j in range(i, d - 1):
                    s[j] = s[j + 1]
                    u[j] = u[j + 1]
                d -= 1
                changed = True
            else:
                i += 1
        for i in range(d):
            for j in range(i + 1, d):
                g = _gcd(s[i], s[j])
                if s[j] // g <= u[i] and s[i] // g <= u[j]:
                    return 1
        while d > 0:
            reach = 0
            for i in range(d - 1):
                reach += s[i] * u[i]
            if s[d - 1] <= reach:
                break
            d -= 1
            changed = True
    dp[0] = d
    return 0


cdef int _reduce_terms(int* dp, int64_t* c, int64_t* lo, int64_t* hi) noexcept nogil:
    """Steps 1-2 of a sharing problem on sorted terms: merge equal coefficients and packed
    pairs. 0, or 1 when a merged range leaves int64 (the caller gives up: undecided)."""
    cdef int i
    cdef int64_t w, nxt, a, b
    cdef bint changed = True
    while changed:
        changed = False
        i = 1
        while i < dp[0]:
            if c[i] == c[i - 1]:
                if checked_add(lo[i - 1], lo[i], &lo[i - 1]) or checked_add(hi[i - 1], hi[i],
                                                                            &hi[i - 1]):
                    return 1
                _drop_term(dp, i, c, lo, hi)
                changed = True
                continue
            w = hi[i - 1] - lo[i - 1] + 1
            if not checked_mul(c[i - 1], w, &nxt) and nxt == c[i]:
                # x + w y, x over w consecutive values: one range, lo + w lo' .. hi + w hi'
                if (checked_mul(w, lo[i], &a) or checked_add(lo[i - 1], a, &a)
                        or checked_mul(w, hi[i], &b) or checked_add(hi[i - 1], b, &b)):
                    return 1
                lo[i - 1] = a
                hi[i - 1] = b
                _drop_term(dp, i, c, lo, hi)
                changed = True
                continue
            i += 1
    return 0


cdef int _run_search(_Search* q, int d, int64_t* c, const int64_t* lo, const int64_t* hi,
                     int64_t t, bint symmetric, int64_t max_work) except -1 nogil:
    """Step 5 over d >= 1 sorted terms whose partial sums fit int64; c is divided by its gcd
    here (t must be a multiple of it)."""
    cdef int64_t rmin[2 * MAX_NDIM + 2]
    cdef int64_t rmax[2 * MAX_NDIM + 2]
    cdef int64_t below_gcd[2 * MAX_NDIM + 2]
    cdef int64_t g = 0
    cdef int i
    for i in range(d):
        g = _gcd(c[i], g)
    for i in range(d):
        c[i] //= g
    t //= g
    rmin[0] = 0
    rmax[0] = 0
    below_gcd[0] = 0
    for i in range(1, d):
        rmin[i] = rmin[i - 1] + c[i - 1] * lo[i - 1]
        rmax[i] = rmax[i - 1] + c[i - 1] * hi[i - 1]
        below_gcd[i] = _gcd(c[i - 1], below_gcd[i - 1])
    q.c = c
    q.lo = lo
    q.hi = hi
    q.rmin = rmin
    q.rmax = rmax
    q.below_gcd = below_gcd
    q.symmetric = symmetric
    q.bottom = 0
    q.table = NULL
    q.table_len = 0
    q.bottom_zero = False
    q.work = 0
    q.max_work = max_work
    try:
        if _plan_bottom_table(q, d) == OVERLAP_UNDECIDED:
            return OVERLAP_UNDECIDED
        return _search(q, d - 1, t, False)
    finally:
        free(q.table)


cdef int c_overlaps(int nd, const int64_t* sizes, const int64_t* strides,
                    int64_t max_work) except -1 nogil:
    """1 when two distinct indices reach the same offset, 0 when none do (exact), or
    OVERLAP_UNDECIDED when the search needs more than ``max_work`` (< 0: no budget).

    Precondition: the span fits int64 (c_span returned STATUS_OK).
    """
    cdef int64_t s[MAX_NDIM]
    cdef int64_t u[MAX_NDIM]
    cdef int64_t neg[MAX_NDIM]
    cdef int64_t count = 1, width = 1
    cdef bint count_overflow = False
    cdef _Search q
    cdef int i, d
    for i in range(nd):
        if sizes[i] == 0:
            return 0
    for i in range(nd):
        if sizes[i] > 1 and strides[i] == 0:
            return 1
    d = _nontrivial(nd, sizes, strides, False, s, u)
    _sort_ascending(d, s, u)
    if _reduce_overlap(&d, s, u):
        return 1
    if d <= 2:
        return 0   # the pairwise test of _reduce_overlap is exact for two dims
    for i in range(d):
        width += s[i] * u[i]
        if not count_overflow and checked_mul(count, u[i] + 1, &count):
            count_overflow = True
    if count_overflow or count > width:
        return 1
    for i in range(d):
        neg[i] = -u[i]
    return _run_search(&q, d, s, neg, u, 0, True, max_work)


cdef int _add_terms(int nd, const int64_t* sizes, const int64_t* strides, int64_t itemsize,
                    bint negate, int d, int64_t* c, int64_t* lo, int64_t* hi) noexcept nogil:
    """Append a layout's byte terms (see above); return the new count, or -1 past int64."""
    cdef int i
    cdef bint up
    for i in range(nd):
        if sizes[i] > 1 and strides[i] != 0:
            if strides[i] == INT64_MIN or checked_mul(_abs_saturated(strides[i]), itemsize,
                                                      &c[d]):
                return -1
            up = (strides[i] > 0) != negate
            lo[d] = 0 if up else 1 - sizes[i]
            hi[d] = sizes[i] - 1 if up else 0
            d += 1
    return d


cdef int c_shares(int na, const int64_t* asz, const int64_t* ast, int64_t ka,
                  int nb, const int64_t* bsz, const int64_t* bst, int64_t kb,
                  int64_t delta, int64_t max_work) except -1 nogil:
    """Whether layout A (element strides ``ast``, items of ``ka`` bytes, element 0 at byte 0) and
    layout B (items of ``kb`` bytes, element 0 at byte ``delta``) share a byte: 1 yes, 0 no
    (exact), OVERLAP_UNDECIDED past ``max_work`` or when the byte arithmetic leaves int64.
    """
    cdef int64_t c[2 * MAX_NDIM + 1]
    cdef int64_t lo[2 * MAX_NDIM + 1]
    cdef int64_t hi[2 * MAX_NDIM + 1]
    cdef int64_t rmin = 0, rmax = 0, g = 0, term
    cdef int i, d = 0
    cdef _Search q
    for i in range(na):
        if asz[i] == 0:
            return 0
    for i in range(nb):
        if bsz[i] == 0:
            return 0
    d = _add_terms(na, asz, ast, ka, False, 0, c, lo, hi)
    if d >= 0:
        d = _add_terms(nb, bsz, bst, kb, True, d, c, lo, hi)
    if d < 0:
        return OVERLAP_UNDECIDED
    if ka > 1 or kb > 1:   # the bytes inside the two elements: p - q
        c[d] = 1
        lo[d] = 1 - kb
        hi[d] = ka - 1
        d += 1
    sort_by(d, c, lo, hi)
    if _reduce_terms(&d, c, lo, hi):
        return OVERLAP_UNDECIDED
    for i in range(d):
        if (checked_mul(c[i], lo[i], &term) or checked_add(rmin, term, &rmin)
                or checked_mul(c[i], hi[i], &term) or checked_add(rmax, term, &rmax)):
            return OVERLAP_UNDECIDED
        g = _gcd(c[i], g)
    if delta < rmin or delta > rmax:
        return 0
    if d == 0:
        return delta == 0
    if delta % g != 0:
        return 0
    if _covers_range(d, c, lo, hi, g):
        return 1
    return _run_search(&q, d, c, lo, hi, delta, False, max_work)


cdef bint _covers_range(int d, const int64_t* c, const int64_t* lo, const int64_t* hi,
                        int64_t g) noexcept nogil:
    """Whether the sums of sorted terms reach every multiple of g between their least and their
    greatest sum (by induction, as _covers_interval: each c_j <= g + the width below)."""
    cdef int i
    cdef int64_t width = 0
    for i in range(d):
        if c[i] > width + g:
            return False
        width += c[i] * (hi[i] - lo[i])
    return True


cdef int _plan_bottom_table(_Search* q, int d) noexcept nogil:
    """Table the smallest terms when the search space is large (meet in the middle).

    The search then enumerates only the top terms and looks each residual up, so its work is
    the product of the top terms' ranges instead of all of them, for a table of at most
    BOTTOM_TABLE_MAX sums. Small searches skip the table: they are cheaper than its sort.
    Returns OVERLAP_UNDECIDED when the table alone would exceed the work budget, else 0.
    """
    cdef int k = 0, i
    cdef double bound = 1.0, table = 1.0, budget
    for i in range(d):
        # the search tries at most this many x_i per node: x_i within its range, and the
        # residual must stay within what the terms below reach
        bound *= min(<double>(q.hi[i] - q.lo[i]) + 1.0,
                     (<double>q.rmax[i] - <double>q.rmin[i]) / q.c[i] + 1.0)
    if bound <= SEARCH_SMALL:
        return 0
    budget = min(<double>BOTTOM_TABLE_MAX, sqrt(bound))
    while k < d - 1 and table * (<double>(q.hi[k] - q.lo[k]) + 1.0) <= budget:
        table *= <double>(q.hi[k] - q.lo[k]) + 1.0
        k += 1
    if k >= 2:
        if _build_bottom_table(q, k) == OVERLAP_UNDECIDED:   # -1, no memory: search without
            return OVERLAP_UNDECIDED
    return 0


# --------------------------------------------------------------------------------------------
# Order inference, coalescing, reshape
# --------------------------------------------------------------------------------------------

cdef void c_physical_order(int nd, const int64_t* sizes, const int64_t* strides,
                           int* order) noexcept nogil:
    """Physical order, outermost first.

    Dims whose stride matters (size != 1, stride != 0) are sorted by |stride|, largest first
    (ties keep logical order). Size-1 and broadcast dims could sit anywhere; each goes just
    before the first sorted dim with a larger axis number, so that the result is the canonical
    order whenever the canonical order fits.
    """
    cdef int ranked[MAX_NDIM]
    cdef int i, j, n_ranked = 0, n_out = 0, key_axis
    cdef int64_t key
    for i in range(nd):
        if sizes[i] != 1 and strides[i] != 0:
            # insertion sort by |stride| descending, stable
            key = _abs_saturated(strides[i])
            j = n_ranked - 1
            while j >= 0 and _abs_saturated(strides[ranked[j]]) < key:
                ranked[j + 1] = ranked[j]
                j -= 1
            ranked[j + 1] = i
            n_ranked += 1
    j = 0   # every unranked axis below the next ranked one goes before it
    for i in range(n_ranked):
        key_axis = ranked[i]
        while j < key_axis:
            if sizes[j] == 1 or strides[j] == 0:
                order[n_out] = j
                n_out += 1
            j += 1
        order[n_out] = key_axis
        n_out += 1
    while j < nd:
        if sizes[j] == 1 or strides[j] == 0:
            order[n_out] = j
            n_out += 1
        j += 1


cdef int c_coalesce(int nd, const int64_t* sizes, const int64_t* strides,
                    int64_t* sizes_out, int64_t* strides_out) noexcept nogil:
    """Merge neighbouring dims that are contiguous (outer stride == inner stride * inner size)
    and drop size-1 dims, keeping the logical order. Returns the new rank; the C-order sequence
    of offsets is unchanged. An empty layout becomes sizes (0,), strides (1,)."""
    cdef int i, d = 0
    cdef int64_t merged
    for i in range(nd):
        if sizes[i] == 0:
            sizes_out[0] = 0
            strides_out[0] = 1
            return 1
    for i in range(nd):
        if sizes[i] == 1:
            continue
        if (d > 0 and not checked_mul(strides[i], sizes[i], &merged)
                and merged == strides_out[d - 1]):
            sizes_out[d - 1] *= sizes[i]
            strides_out[d - 1] = strides[i]
        else:
            sizes_out[d] = sizes[i]
            strides_out[d] = strides[i]
            d += 1
    return d


cdef int c_reshape_strides(int nd, const int64_t* sizes, const int64_t* strides,
                           int new_nd, const int64_t* new_sizes, int64_t* new_strides,
                           int* blocked_old_axis, int* blocked_new_axis) noexcept nogil:
    """Strides that view the same elements with new sizes (same element count), if any.

    The semantics of torch's computeStride and numpy's no-copy reshape: the old dims split into
    chunks that are contiguous among themselves; every new dim must fall inside one chunk.
    STATUS_NO_VIEW sets the old axis whose boundary with the next one a new dim would cross,
    and that new dim.
    """
    cdef int view_d = new_nd - 1, tensor_d, k
    cdef int64_t chunk_base_stride, tensor_numel = 1, view_numel = 1, expected
    cdef int row_major[MAX_NDIM]
    cdef bint empty = False
    for k in range(nd):
        if sizes[k] == 0:
            empty = True
    if empty or nd == 0:
        # empty (any strides view nothing) or scalar (new sizes are all 1): packed strides
        for k in range(new_nd):
            row_major[k] = k
        return c_packed_strides(new_nd, new_sizes, row_major, NULL, new_strides)
    chunk_base_stride = strides[nd - 1]
    for tensor_d in range(nd - 1, -1, -1):
        tensor_numel *= sizes[tensor_d]
        if tensor_d == 0 or (
            sizes[tensor_d - 1] != 1
            and (checked_mul(tensor_numel, chunk_base_stride, &expected)
                 or strides[tensor_d - 1] != expected)
        ):
            while view_d >= 0 and (view_numel < tensor_numel or new_sizes[view_d] == 1):
                if checked_mul(view_numel, chunk_base_stride, &new_strides[view_d]):
                    return STATUS_OVERFLOW
                view_numel *= new_sizes[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                blocked_old_axis[0] = tensor_d - 1
                blocked_new_axis[0] = view_d + 1
                return STATUS_NO_VIEW
            if tensor_d > 0:
                chunk_base_stride = strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        blocked_old_axis[0] = -1
        blocked_new_axis[0] = view_d
        return STATUS_NO_VIEW
    return STATUS_OK


# --------------------------------------------------------------------------------------------
# Python-facing validation: every argument is checked here, with the GIL, before any C loop
# --------------------------------------------------------------------------------------------

cdef int64_t as_int64(object value, str what) except? -1:
    """`value` as an int64; bools and non-integers are TypeError, too large is OverflowError."""
    cdef int overflow = 0
    cdef long long v
    if type(value) is int:
        v = PyLong_AsLongLongAndOverflow(value, &overflow)
        if not overflow:
            return v
    return as_int64_slow(value, what, -1)


cdef str _show(object value):
    """A short repr for an error message; never raises (a caller's __repr__ may)."""
    cdef str text
    try:
        text = repr(value)
    except Exception:
        return f"<{type(value).__name__} object>"
    return text if len(text) <= 80 else text[:77] + "..."


cdef bint _is_bool(object value) except -1:
    """Python, numpy and array-library booleans: a 0-d torch bool tensor has an __index__ too,
    but True is no more a size than it is in numpy."""
    if isinstance(value, bool) or type(value).__name__ in ("bool", "bool_"):
        return True
    dtype = getattr(value, "dtype", None)
    return dtype is not None and str(dtype).rpartition(".")[2] in ("bool", "bool_")


cdef int64_t as_int64_slow(object value, str what, Py_ssize_t position) except? -1:
    """The general case of _as_int64; `what[position]` names the value when position >= 0."""
    cdef object iv
    if position >= 0:
        what = f"{what}[{position}]"
    if type(value) is not int:
        if _is_bool(value):
            raise TypeError(f"{what} must be an integer, not a bool ({_show(value)})")
        try:
            iv = operator.index(value)
        except TypeError:
            raise TypeError(
                f"{what} must be an integer, got {type(value).__name__} {_show(value)}"
            ) from None
    else:
        iv = value
    if not (INT64_MIN <= iv <= INT64_MAX):
        raise OverflowError(f"{what} = {iv} does not fit in a signed 64-bit integer")
    return <int64_t>iv


cdef bint _is_integer_scalar(object obj) except -1:
    """One integer rather than a sequence: it has __index__ and is a 0-d array (numpy reads
    ``np.empty(np.array(5))`` as shape ``(5,)`` too) or, not being an array, is not sized."""
    cdef object tp = type(obj)
    if not hasattr(tp, "__index__"):
        return False
    ndim = getattr(obj, "ndim", None)
    return ndim == 0 if ndim is not None else not hasattr(tp, "__len__")


cdef bint _is_vector(object obj) except -1:
    """A 1-D array, by the array API's ``ndim`` and ``shape``."""
    return getattr(obj, "ndim", None) == 1 and len(getattr(obj, "shape", ())) == 1


cdef tuple _vector_items(object obj, str name):
    """The items of a 1-D array that is no sized sequence (the array API requires no __len__:
    array_api_strict has none), read by index; more than MAX_NDIM items are not read."""
    cdef Py_ssize_t i
    cdef object n
    try:
        n = operator.index(obj.shape[0])
    except TypeError:   # the array API allows None for a length not known yet
        raise TypeError(
            f"{name} must be a sequence of integers, got an array of unknown length {_show(obj)}"
        ) from None
    if n > MAX_NDIM:
        raise ValueError(f"{name} has {n} entries: a layout has at most {MAX_NDIM} dimensions")
    return tuple([obj[i] for i in range(n)])


cdef tuple _snapshot(object obj, str name, bint one_integer=True):
    """A sequence argument's items as a new tuple, taken before any item is converted.

    Converting an item runs the caller's Python code (``__index__``), which could shrink a list
    under a loop reading it without bounds checks; a tuple of the items cannot change. Accepted:
    tuple and list (and their subclasses, such as ``torch.Size``), ``range``, 1-D integer arrays
    and tensors (array-API arrays without __len__ too), any other sized sequence; with
    `one_integer`, one integer (or 0-d integer array) means one dimension, as numpy reads
    shapes. Refused with a TypeError naming the argument: booleans, strings and bytes,
    mappings, sets, and iterators (a generator would be consumed by the first reader and empty
    for the next).
    """
    cdef object tp = type(obj)
    if tp is list or isinstance(obj, (tuple, list)):
        return tuple(obj)
    if one_integer and _is_integer_scalar(obj):
        if _is_bool(obj):
            raise TypeError(
                f"{name} must be a sequence of integers or one integer, not a bool ({_show(obj)})"
            )
        return (as_int64_slow(obj, name, -1),)
    if not hasattr(tp, "__len__") and hasattr(tp, "__getitem__") and _is_vector(obj):
        return _vector_items(obj, name)
    if (isinstance(obj, (str, bytes, bytearray, Mapping)) or _is_integer_scalar(obj)
            or not (hasattr(tp, "__len__") and hasattr(tp, "__getitem__"))):
        raise TypeError(
            f"{name} must be a sequence (a tuple, list, range or 1-D array) of "
            f"{'integers, or one integer' if one_integer else 'bools, one per axis'}, "
            f"got {tp.__name__} {_show(obj)}"
        )
    # One item more than a layout may have is enough to refuse: a range(10**12) or a sequence
    # whose __getitem__ never raises IndexError is not read to its (absent) end.
    items = tuple(islice(obj, MAX_NDIM + 1))
    if len(items) > MAX_NDIM:
        raise ValueError(
            f"{name} has more than {MAX_NDIM} entries: a layout has at most {MAX_NDIM} "
            f"dimensions"
        )
    return items


cdef int load_ints(object obj, str name, int64_t* out, bint nonnegative,
                   bint* exact_tuple=NULL) except -1:
    """Read a sequence of integers (or one integer, meaning one dim) into out; return its length.

    An exact tuple is read in place (the fast path of every Layout); anything else is first
    copied by _snapshot, so no conversion can change what is being read. `*exact_tuple` (when
    given) tells whether `obj` is a tuple of exact Python ints, which the caller may keep as it
    is instead of building a new tuple.
    """
    cdef Py_ssize_t n, i
    cdef int overflow
    cdef bint exact = type(obj) is tuple
    cdef tuple seq = <tuple>obj if exact else _snapshot(obj, name)
    cdef object v
    n = len(seq)
    if n > MAX_NDIM:
        raise ValueError(
            f"{name} has {n} entries: a layout has at most {MAX_NDIM} dimensions"
        )
    for i in range(n):
        v = seq[i]
        overflow = 1
        if type(v) is int:   # fast path: exact ints need no name unless they fail
            out[i] = PyLong_AsLongLongAndOverflow(v, &overflow)
        if overflow:
            out[i] = as_int64_slow(v, name, i)
            exact = False
        if nonnegative and out[i] < 0:
            raise ValueError(f"{name}[{i}] must be >= 0, got {out[i]}")
    if exact_tuple != NULL:
        exact_tuple[0] = exact
    return <int>n


cdef int _load_flags(object obj, str name, int nd, unsigned char* out) except -1:
    """One bool per axis (Python, numpy or 0-d array bools, or the integers 0 and 1) into out."""
    cdef tuple seq = _snapshot(obj, name, False)
    cdef Py_ssize_t n = len(seq), i
    cdef object flag, value
    if n != nd:
        raise ValueError(
            f"{name} has {entries(n)} but sizes has {entries(nd)}: one flag per axis"
        )
    for i in range(n):
        flag = seq[i]
        if _is_bool(flag):
            out[i] = 1 if flag else 0
            continue
        try:
            value = operator.index(flag)   # an integer's truth is its value, not its __bool__
        except TypeError:
            value = None
        if value is None or not (value == 0 or value == 1):
            raise TypeError(f"{name}[{i}] must be a bool, got {_show(flag)}")
        out[i] = 1 if value else 0
    return 0


cdef str entries(Py_ssize_t n):
    return "1 entry" if n == 1 else f"{n} entries"


cdef tuple tuple_of(int n, const int64_t* values):
    cdef int i
    return tuple([values[i] for i in range(n)])


cdef int load_pair(object sizes, object strides, int64_t* sz, int64_t* st,
                   str strides_name="strides", bint* exact=NULL) except -1:
    """Sizes and strides of equal length; return the rank. `exact[0]`, `exact[1]` (when given):
    whether sizes, strides are tuples of exact ints (see _load)."""
    cdef int nd = load_ints(sizes, "sizes", sz, True, exact)
    load_strides(strides, strides_name, st, nd, exact + 1 if exact != NULL else NULL)
    return nd


cdef int load_strides(object strides, str name, int64_t* out, int nd,
                      bint* exact_tuple=NULL) except -1:
    """Strides of a layout whose sizes have ``nd`` entries: exactly ``nd`` of them."""
    cdef int ns = load_ints(strides, name, out, False, exact_tuple)
    if ns != nd:
        raise ValueError(f"{name} has {entries(ns)} but sizes has {entries(nd)}: they must match")
    return 0


cdef int _load_permutation(object axes, int nd, str name, int* out) except -1:
    """A permutation of range(nd); negative axes count from the end."""
    cdef int64_t raw[MAX_NDIM]
    cdef unsigned char seen[MAX_NDIM]
    cdef int n = load_ints(axes, name, raw, False), i
    cdef int64_t ax
    if n != nd:
        raise ValueError(f"{name} must list each of the {nd} axes once, got {entries(n)}")
    for i in range(nd):
        seen[i] = 0
    for i in range(n):
        ax = raw[i] + nd if raw[i] < 0 else raw[i]
        if not 0 <= ax < nd:
            raise LayoutIndexError(f"{name}[{i}] = {raw[i]} is not an axis of a rank-{nd} layout")
        if seen[ax]:
            raise ValueError(f"{name} repeats axis {ax}: {tuple_of(n, raw)!r} is not a permutation")
        seen[ax] = 1
        out[i] = <int>ax
    return 0


cdef int _load_strides_or_packed(object strides, int nd, const int64_t* sz,
                                 int64_t* st, bint* exact_tuple=NULL) except -1:
    """Strides matching nd sizes; None means packed row-major."""
    cdef int order[MAX_NDIM]
    cdef int i, ns
    if strides is None:
        for i in range(nd):
            order[i] = i
        if c_packed_strides(nd, sz, order, NULL, st):
            raise OverflowError(f"the packed strides of sizes {tuple_of(nd, sz)!r} leave int64")
        return 0
    ns = load_ints(strides, "strides", st, False, exact_tuple)
    if ns != nd:
        raise ValueError(f"strides has {entries(ns)} but sizes has {entries(nd)}: they must match")
    return 0


cdef _raise_overflow(str what, object sizes, object strides):
    raise OverflowError(
        f"{what} of the layout with sizes {tuple(sizes)!r} and strides {tuple(strides)!r} "
        f"leaves the signed 64-bit range"
    )


def normalize(sizes, strides, offset, itemsize):
    """Validate a layout; return (sizes, strides, offset, itemsize, size, lo, hi, flags).

    ``flags`` holds the FLAG_* bits of `c_flags`: they cost little next to the validation and
    are computed here while the C arrays exist.

    ``strides=None`` means packed row-major. Raises TypeError / ValueError / OverflowError
    naming the argument and the value.
    """
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef int nd
    cdef bint sizes_exact = False, strides_exact = False
    nd = load_ints(sizes, "sizes", sz, True, &sizes_exact)
    _load_strides_or_packed(strides, nd, sz, st, &strides_exact)
    # Reuse the caller's tuples when they are already exact: saves two allocations per Layout.
    return normalized(nd, sz, st, as_int64(offset, "offset"), as_int64(itemsize, "itemsize"),
                      sizes if sizes_exact else None, strides if strides_exact else None)


cdef tuple normalized(int nd, const int64_t* sz, const int64_t* st, int64_t off, int64_t isz,
                      object sizes=None, object strides=None):
    """`normalize` of a layout already in C arrays (sizes >= 0): the checks that need the
    whole layout, and the fields of a Layout. ``sizes`` / ``strides``: tuples holding exactly
    those values, reused when given."""
    cdef int i
    cdef int64_t n, lo, hi, tmp
    if isz <= 0:
        raise ValueError(f"itemsize must be >= 1 byte, got {isz}")
    if c_size(nd, sz, &n):
        raise OverflowError(f"the number of elements of sizes {tuple_of(nd, sz)!r} leaves int64")
    if c_span(nd, sz, st, off, &lo, &hi):
        _raise_overflow("the span", tuple_of(nd, sz), tuple_of(nd, st))
    # Byte quantities (numpy's unit) must be representable too.
    for i in range(nd):
        if checked_mul(st[i], isz, &tmp):
            raise OverflowError(
                f"strides[{i}] = {st[i]} times itemsize {isz} leaves the signed 64-bit range"
            )
    if (checked_mul(off, isz, &tmp) or checked_mul(lo, isz, &tmp)
            or checked_add(hi, 1, &tmp) or checked_mul(tmp, isz, &tmp)):
        raise OverflowError(
            f"the byte offsets of the layout (offset {off}, span {lo}..{hi}, itemsize {isz}) "
            f"leave the signed 64-bit range"
        )
    return (tuple_of(nd, sz) if sizes is None else sizes,
            tuple_of(nd, st) if strides is None else strides, off, isz, n, lo, hi,
            c_flags(nd, sz, st))


def as_int(value, name):
    """``value`` validated as an int64 (``operator.index``; bools refused), named ``name``."""
    return as_int64(value, name)


# ---- conversion parameters -------------------------------------------------------------------
# ``scale`` and ``shift`` of a converting copy: one real number, or a 1-D vector of them (one per
# channel). They are read here, once, into values that cannot change and whose reading runs no
# caller code (None, a float, a tuple of floats), before any array of the call is read: reading
# them runs the caller's code (``__float__``, ``__len__``, ``tolist``), which could resize or
# free an array whose address was already taken.

# The most values a parameter vector may have (one per channel of an axis): far beyond any
# channel count, and it keeps an endless or absurd sequence (range(10**12)) from being read.
MAX_PARAMETERS = 1 << 24

# dtype names (numpy's and torch's) of real numbers
_REAL_DTYPES = frozenset({
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
    "bfloat16", "float32", "float64", "longdouble", "float128", "half", "float", "double",
})


def load_parameter(value, name):
    """``value`` as None, one float or a tuple of floats: a ``scale``/``shift`` argument.

    Accepted: None; a real number (int, float, numpy scalar, ``fractions.Fraction``, a 0-d
    array or tensor of a real dtype); a 1-D vector of real numbers: a tuple or list, a 1-D
    array or tensor of a real dtype, or any other sized sequence of them (``range``,
    ``array.array``). The vector is copied before any value is converted, so a value whose
    conversion changes the sequence changes nothing read.

    Raises
    ------
    TypeError
        Bools, complex numbers, strings and bytes, mappings, sets and iterators (an iterator
        is consumed by its first reader), arrays of other dtypes (bool, complex, datetime,
        timedelta, objects) and masked arrays, each naming ``name`` and the value.
    ValueError
        An array of more than one dimension.
    OverflowError
        An integer too large for a float.
    """
    if value is None or type(value) is float:
        return value
    if type(value) is int:
        return _real(value, name)
    if type(value) is tuple or type(value) is list:
        return _reals(tuple(value), name)
    if PyObject_CheckBuffer(value) and not _is_masked(value):
        vector = _float_buffer(value, name)
        if vector is not None:
            return vector
    return _load_parameter_slow(value, name)


cdef bint _is_masked(object value) except -1:
    """A masked array (numpy.ma's, or any whose type has a mask and filled()), by its type,
    asked once per type (_MASKED_TYPES; a lookup that fails costs an AttributeError)."""
    tp = type(value)
    masked = _MASKED_TYPES.get(tp)
    if masked is None:
        masked = hasattr(tp, "mask") and hasattr(tp, "filled")
        _MASKED_TYPES[tp] = masked
    return masked


# type -> whether its instances are masked arrays (types seen as parameters: a handful)
cdef dict _MASKED_TYPES = {}


cdef object _float_buffer(object value, str name):
    """The values of a 1-D buffer of native float32 or float64 items (a numpy vector of means
    or stds) as a tuple of floats, read in C: what ``tolist()`` gives, in a fraction of the
    time (numpy's dtype attributes alone cost microseconds). None, reading nothing, for any
    other buffer: the general path reads those."""
    cdef Py_buffer view
    cdef const char* fmt
    cdef const char* p
    cdef float f
    cdef double d
    cdef Py_ssize_t i, n
    cdef bint single
    try:
        PyObject_GetBuffer(value, &view, PyBUF_RECORDS_RO)
    except Exception:   # the exporter refuses a strided, formatted buffer: the general path
        return None
    try:
        fmt = view.format
        if view.ndim != 1 or fmt == NULL:
            return None
        if fmt[0] == b"@" or fmt[0] == b"=" or (fmt[0] == b"<" and _LITTLE_ENDIAN):
            fmt += 1
        if not (fmt[0] == b"f" or fmt[0] == b"d") or fmt[1] != 0:
            return None
        single = fmt[0] == b"f"
        n = view.shape[0]
        _check_count(n, name)
        out = [None] * n
        p = <const char*>view.buf
        for i in range(n):
            if single:
                memcpy(&f, p + i * view.strides[0], 4)
                out[i] = <double>f
            else:
                memcpy(&d, p + i * view.strides[0], 8)
                out[i] = d
        return tuple(out)
    finally:
        PyBuffer_Release(&view)


cdef bint _LITTLE_ENDIAN = sys.byteorder == "little"   # "<" is then the native order


cdef object _load_parameter_slow(object value, str name):
    cdef object dtype = getattr(value, "dtype", None)
    cdef int kind = _dtype_class(dtype) if dtype is not None else _NO_DTYPE
    if kind == _BOOL_DTYPE or (dtype is None and _is_bool(value)):
        raise TypeError(f"{name} must be a real number or a vector of them, not a bool "
                        f"({_show(value)})")
    if kind == _OTHER_DTYPE:
        raise TypeError(f"{name} must hold real numbers, got {type(value).__name__} of dtype "
                        f"{dtype} ({_show(value)})")
    if _is_masked(value):
        raise TypeError(f"{name} is a masked array: its masked entries have no value; pass "
                        f"{name}.filled(...) or a plain array")
    ndim = getattr(value, "ndim", None)
    if ndim is not None and dtype is not None:   # an array or tensor (numpy scalars: ndim 0)
        if ndim == 0:
            return _real(value, name)
        if ndim != 1:
            raise ValueError(f"{name} must be a number or a 1-D vector, got {ndim} dimensions")
        _check_count(len(value), name)
        if hasattr(value, "tolist"):
            return _reals(tuple(value.tolist()), name)
        return _reals(_sized_items(value, name), name)
    if isinstance(value, numbers.Real):
        return _real(value, name)
    if isinstance(value, (str, bytes, bytearray, Mapping, complex, numbers.Complex)) or not (
            hasattr(type(value), "__len__") and hasattr(type(value), "__getitem__")):
        raise TypeError(
            f"{name} must be a real number or a 1-D vector of them (a tuple, list or 1-D "
            f"array), got {type(value).__name__} {_show(value)}"
        )
    return _reals(_sized_items(value, name), name)


cdef enum:
    _NO_DTYPE = 0
    _REAL_DTYPE = 1
    _BOOL_DTYPE = 2
    _OBJECT_DTYPE = 3   # Python objects: read item by item, each checked to be a real number
    _OTHER_DTYPE = 4    # complex, datetime, timedelta, strings, ...


cdef int _dtype_class(object dtype) except -1:
    """What a dtype (numpy's, torch's or another array library's) holds. numpy's one-letter
    ``kind`` first: its ``name`` and ``str`` cost microseconds (10 us in numpy 2.4)."""
    kind = getattr(dtype, "kind", None)
    if type(kind) is str and kind:
        if kind in ("i", "u", "f"):
            return _REAL_DTYPE
        if kind == "b":
            return _BOOL_DTYPE
        if kind == "O":
            return _OBJECT_DTYPE
        if kind != "V":     # (ml_dtypes' bfloat16 is a "V": named below)
            return _OTHER_DTYPE
    text = getattr(dtype, "name", None)
    if type(text) is not str:
        text = str(dtype)
    text = text.rpartition(".")[2]
    if text in _REAL_DTYPES:
        return _REAL_DTYPE
    return _BOOL_DTYPE if text in ("bool", "bool_") else _OTHER_DTYPE


cdef tuple _sized_items(object value, str name):
    """The items of a sized sequence, read before any is converted: no more than its length
    says (a ``__getitem__`` that never raises IndexError is not read forever)."""
    cdef Py_ssize_t n = len(value)
    _check_count(n, name)
    items = tuple(islice(value, n + 1))
    if len(items) != n:
        raise ValueError(f"{name} has a length of {n} but gave {len(items)} values")
    return items


cdef int _check_count(Py_ssize_t n, str name) except -1:
    if n > MAX_PARAMETERS:
        raise ValueError(f"{name} has {n} values: a per-channel vector holds at most "
                         f"{MAX_PARAMETERS}")
    return 0


cdef tuple _reals(tuple items, str name):
    cdef Py_ssize_t i, n = len(items)
    _check_count(n, name)
    out = [None] * n
    for i in range(n):
        item = items[i]
        out[i] = item if type(item) is float else _real(item, f"{name}[{i}]")
    return tuple(out)


cdef double _real(object value, str name) except? -1.0:
    """One real number as a float: Python's int and float, numpy's real scalars, 0-d arrays of
    a real dtype, any ``numbers.Real``; bools, complex numbers and anything else refused."""
    if type(value) is not float and type(value) is not int:
        dtype = getattr(value, "dtype", None)
        kind = _dtype_class(dtype) if dtype is not None else _NO_DTYPE
        if kind == _BOOL_DTYPE or (dtype is None and _is_bool(value)):
            raise TypeError(f"{name} must be a real number, not a bool ({_show(value)})")
        if kind == _OTHER_DTYPE:
            raise TypeError(f"{name} must be a real number, got {type(value).__name__} of "
                            f"dtype {dtype} ({_show(value)})")
        if kind == _OBJECT_DTYPE:    # a 0-d array of one Python object
            return _real(value.item(), name)
        if dtype is None and not isinstance(value, numbers.Real):
            raise TypeError(f"{name} must be a real number, got {type(value).__name__} "
                            f"{_show(value)}")
        if getattr(value, "ndim", 0) != 0:
            raise TypeError(f"{name} must be a real number, got an array of shape "
                            f"{getattr(value, 'shape', '?')}")
    try:
        return float(value)
    except OverflowError:
        raise OverflowError(f"{name} = {_show(value)} is too large for a float") from None


def as_pair(sizes, strides, strides_name="strides"):
    """``(sizes, strides)`` validated: tuples of int64 of the same length, sizes >= 0."""
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef bint exact[2]
    cdef int nd = load_pair(sizes, strides, sz, st, strides_name, exact)
    return (sizes if exact[0] else tuple_of(nd, sz), strides if exact[1] else tuple_of(nd, st))


def as_sizes(sizes, name="sizes"):
    """``sizes`` validated: a tuple of non-negative int64 (one integer means one dim)."""
    cdef int64_t sz[MAX_NDIM]
    cdef int nd = load_ints(sizes, name, sz, True)
    return tuple_of(nd, sz)


def byte_strides(strides, itemsize):
    """Strides in bytes: each stride times ``itemsize``, checked."""
    cdef int64_t st[MAX_NDIM]
    cdef int nd = load_ints(strides, "strides", st, False), i
    cdef int64_t isz = as_int64(itemsize, "itemsize")
    for i in range(nd):
        if checked_mul(st[i], isz, &st[i]):
            raise OverflowError(f"strides[{i}] times itemsize {isz} leaves int64")
    return tuple_of(nd, st)


def as_permutation(axes, ndim, name="order"):
    """``axes`` validated as a permutation of ``range(ndim)``; negative axes count from the end."""
    cdef int perm[MAX_NDIM]
    cdef int64_t n = as_int64(ndim, "ndim")
    cdef int nd, i
    if not 0 <= n <= MAX_NDIM:
        raise ValueError(f"ndim must be in 0..{MAX_NDIM}, got {n}")
    nd = <int>n
    _load_permutation(axes, nd, name, perm)
    return tuple([perm[i] for i in range(nd)])


def packed_strides(sizes, order=None, broadcast=None):
    """Packed strides of ``sizes`` laid out in ``order`` (axes, outermost first; None: row-major).

    ``broadcast``: one bool per axis (canonical order); a broadcast axis gets stride 0 and
    counts as size 1 for the others.
    """
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t out[MAX_NDIM]
    cdef int perm[MAX_NDIM]
    cdef unsigned char flags[MAX_NDIM]
    cdef int nd = load_ints(sizes, "sizes", sz, True), i
    if order is None:
        for i in range(nd):
            perm[i] = i
    else:
        _load_permutation(order, nd, "order", perm)
    if broadcast is not None:
        _load_flags(broadcast, "broadcast", nd, flags)
    if c_packed_strides(nd, sz, perm, flags if broadcast is not None else NULL, out):
        raise OverflowError(f"the packed strides of sizes {tuple_of(nd, sz)!r} leave int64")
    return tuple_of(nd, out)


def offset_of(index, strides, offset=0, sizes=None):
    """dot(index, strides) + offset, checked; with ``sizes``, each index must lie in range."""
    cdef int64_t ix[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t off = as_int64(offset, "offset"), out
    cdef int n, ns, i
    try:
        n = load_ints(index, "index", ix, False)
    except OverflowError as exc:
        if sizes is None:
            raise
        raise LayoutIndexError(f"{exc}: out of range for sizes {_show(sizes)}") from None
    ns = load_ints(strides, "strides", st, False)
    if n != ns:
        raise ValueError(f"index has {entries(n)} but strides has {entries(ns)}: they must match")
    if sizes is not None:
        ns = load_ints(sizes, "sizes", sz, True)
        if ns != n:
            raise ValueError(f"index has {entries(n)} but sizes has {entries(ns)}: they must match")
        for i in range(n):
            if not 0 <= ix[i] < sz[i]:
                raise LayoutIndexError(
                    f"index[{i}] = {ix[i]} is out of range for axis {i} of size {sz[i]}"
                )
    if c_offset_of(n, ix, st, off, &out):
        raise OverflowError(
            f"the offset of index {tuple_of(n, ix)!r} with strides {tuple_of(n, st)!r} "
            f"and offset {off} leaves the signed 64-bit range"
        )
    return out


def buffer_size(sizes, strides, itemsize, align=4):
    """Bytes from the lowest to the highest element, rounded up to a multiple of ``align``."""
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef int nd
    cdef int64_t lo, hi, isz, al, nbytes, rem, rounded = 0
    nd = load_ints(sizes, "sizes", sz, True)
    _load_strides_or_packed(strides, nd, sz, st)
    isz = as_int64(itemsize, "itemsize")
    if isz <= 0:
        raise ValueError(f"itemsize must be >= 1 byte, got {isz}")
    al = as_int64(align, "align")
    if al <= 0:
        raise ValueError(f"align must be >= 1 byte, got {al}")
    if c_span(nd, sz, st, 0, &lo, &hi):
        _raise_overflow("the span", tuple_of(nd, sz), tuple_of(nd, st))
    if hi < lo:
        return 0
    if checked_mul(hi - lo + 1, isz, &nbytes):
        raise OverflowError(
            f"the buffer size ({hi - lo + 1} elements of {isz} bytes) leaves int64"
        )
    rem = nbytes % al
    if rem and checked_add(nbytes, al - rem, &rounded):
        raise OverflowError(f"rounding {nbytes} bytes up to a multiple of {al} leaves int64")
    return rounded if rem else nbytes


FLAG_BITS = (FLAG_PACKED, FLAG_CONTIGUOUS, FLAG_BROADCAST, FLAG_PADDED, FLAG_EMPTY)
"""The FLAG_* bits returned by `normalize`, in the order Layout unpacks them."""


cdef int byte_span_leaves_int64(int nd, const int64_t* sizes, const int64_t* strides,
                                int64_t itemsize, int64_t* lo, int64_t* hi) noexcept nogil:
    """Set lo..hi to a layout's element span (element 0 at offset 0); return 1 when some byte
    offset of it, or the end of its last element, leaves int64."""
    cdef int64_t b
    return (c_span(nd, sizes, strides, 0, lo, hi) or checked_mul(lo[0], itemsize, &b)
            or checked_mul(hi[0], itemsize, &b) or checked_add(b, itemsize, &b))


cdef int check_byte_span(int nd, const int64_t* sizes, const int64_t* strides, int64_t itemsize,
                         str name) except -1:
    """Check that every byte offset of a layout (element 0 at offset 0) fits int64."""
    cdef int64_t lo, hi
    if byte_span_leaves_int64(nd, sizes, strides, itemsize, &lo, &hi):
        raise OverflowError(
            f"the byte offsets of {name} {tuple_of(nd, strides)!r} with sizes "
            f"{tuple_of(nd, sizes)!r} and itemsize {itemsize} leave the signed 64-bit range"
        )
    return 0


_BUDGET = object()   # "the default budget": whatever _DEFAULT_MAX_WORK is now (tests lower it)


cdef int64_t _load_max_work(object max_work) except? -2:
    """A work budget: None means none (-1), else an integer >= 0."""
    cdef int64_t v
    if max_work is _BUDGET:
        return _DEFAULT_MAX_WORK
    if max_work is None:
        return -1
    v = as_int64(max_work, "max_work")
    if v < 0:
        raise ValueError(f"max_work must be >= 0, or None for no bound, got {v}")
    return v


cdef raise_too_hard(str what, int64_t max_work):
    raise TooHardError(
        f"{what} needs more than max_work={max_work} steps of the exact search (the problem "
        f"is NP-complete in general; these strides have no common structure to exploit); pass "
        f"a larger max_work, or max_work=None to decide it exactly however long it takes"
    )


def overlaps(sizes, strides, max_work=_BUDGET):
    """True when two distinct indices reach the same offset (exact; see the module notes).

    Raises TooHardError when the decision needs more than ``max_work`` search steps (None: no
    bound; the default: DEFAULT_MAX_WORK). The search runs without the GIL.
    """
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef int nd = load_pair(sizes, strides, sz, st), result
    cdef int64_t lo, hi, work = _load_max_work(max_work)
    if c_span(nd, sz, st, 0, &lo, &hi):
        _raise_overflow("the span", tuple_of(nd, sz), tuple_of(nd, st))
    with nogil:
        result = c_overlaps(nd, sz, st, work)
    if result == OVERLAP_UNDECIDED:
        raise_too_hard(f"deciding whether the layout with sizes {tuple_of(nd, sz)!r} and "
                       f"strides {tuple_of(nd, st)!r} overlaps itself", work)
    return bool(result)


def shares_memory(sizes_a, strides_a, itemsize_a, sizes_b, strides_b, itemsize_b, delta,
                  max_work=_BUDGET):
    """True when layout A and layout B share a byte (exact).

    Element 0 of A is at byte 0, element 0 of B at byte ``delta``; strides count elements of
    each layout's own ``itemsize``. Raises TooHardError past ``max_work`` (None: no bound),
    OverflowError when a byte offset leaves int64.
    """
    cdef int64_t asz[MAX_NDIM]
    cdef int64_t ast[MAX_NDIM]
    cdef int64_t bsz[MAX_NDIM]
    cdef int64_t bst[MAX_NDIM]
    cdef int na = load_pair(sizes_a, strides_a, asz, ast)
    cdef int nb = load_pair(sizes_b, strides_b, bsz, bst), result
    cdef int64_t ka = as_int64(itemsize_a, "itemsize_a"), kb = as_int64(itemsize_b, "itemsize_b")
    cdef int64_t d = as_int64(delta, "delta"), work = _load_max_work(max_work)
    if ka < 1 or kb < 1:
        raise ValueError(f"itemsizes must be >= 1 byte, got {ka} and {kb}")
    check_byte_span(na, asz, ast, ka, "strides_a")
    check_byte_span(nb, bsz, bst, kb, "strides_b")
    with nogil:
        result = c_shares(na, asz, ast, ka, nb, bsz, bst, kb, d, work)
    if result == OVERLAP_UNDECIDED:
        # (also when the two byte ranges together leave int64: only made-up strides do that)
        raise_too_hard("deciding whether the two layouts share memory", work)
    return bool(result)


def physical_order(sizes, strides):
    """Axes from outermost to innermost in memory (see c_physical_order for ties)."""
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef int order[MAX_NDIM]
    cdef int nd = load_pair(sizes, strides, sz, st), i
    c_physical_order(nd, sz, st, order)
    return tuple([order[i] for i in range(nd)])


def named_order(sizes, strides):
    """The physical order when the strides are packed in it, else None.

    Size-1 dims are ignored and stride-0 dims count as broadcast: this is the test behind the
    layout labels (a label fits when its order gives these strides).
    """
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef int64_t expected[MAX_NDIM]
    cdef int order[MAX_NDIM]
    cdef unsigned char bcast[MAX_NDIM]
    cdef int nd = load_pair(sizes, strides, sz, st), i
    c_physical_order(nd, sz, st, order)
    for i in range(nd):
        bcast[i] = st[i] == 0
    if c_packed_strides(nd, sz, order, bcast, expected):
        return None
    for i in range(nd):
        if sz[i] != 1 and st[i] != expected[i]:
            return None
    return tuple([order[i] for i in range(nd)])


def coalesce(sizes, strides):
    """(sizes, strides) with contiguous neighbours merged and size-1 dims dropped."""
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef int64_t osz[MAX_NDIM]
    cdef int64_t ost[MAX_NDIM]
    cdef int nd = load_pair(sizes, strides, sz, st)
    cdef int d = c_coalesce(nd, sz, st, osz, ost)
    return tuple_of(d, osz), tuple_of(d, ost)


def permute(sizes, strides, axes):
    """(sizes, strides) with the axes reordered: new axis k is old axis axes[k]."""
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef int perm[MAX_NDIM]
    cdef int nd = load_pair(sizes, strides, sz, st), i
    _load_permutation(axes, nd, "axes", perm)
    return (tuple([sz[perm[i]] for i in range(nd)]), tuple([st[perm[i]] for i in range(nd)]))


def resolve_sizes(new_sizes, int64_t size):
    """Validate reshape sizes, replacing one -1 by the size that keeps ``size`` elements."""
    cdef int64_t ns[MAX_NDIM]
    cdef int nd = load_ints(new_sizes, "sizes", ns, False), i, unknown = -1
    cdef int64_t known = 1
    for i in range(nd):
        if ns[i] == -1:
            if unknown >= 0:
                raise ValueError(f"sizes can hold only one -1, got {tuple_of(nd, ns)!r}")
            unknown = i
        elif ns[i] < 0:
            raise ValueError(f"sizes[{i}] must be >= 0 (or -1 to infer it), got {ns[i]}")
        elif checked_mul(known, ns[i], &known):
            raise OverflowError(
                f"the number of elements of sizes {tuple_of(nd, ns)!r} leaves int64")
    if unknown >= 0:
        if known == 0 or size % known != 0:
            raise ValueError(
                f"cannot infer the -1 in sizes {tuple_of(nd, ns)!r} for a layout of {size} elements"
            )
        ns[unknown] = size // known
        known = size
    if known != size:
        raise ValueError(
            f"cannot reshape a layout of {size} elements to sizes {tuple_of(nd, ns)!r} "
            f"({known} elements)"
        )
    return tuple_of(nd, ns)


def reshape_strides(sizes, strides, new_sizes):
    """Strides viewing the same elements with ``new_sizes`` (same count), else ValueError."""
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef int64_t ns[MAX_NDIM]
    cdef int64_t out[MAX_NDIM]
    cdef int nd = load_pair(sizes, strides, sz, st)
    cdef int new_nd = load_ints(new_sizes, "new_sizes", ns, True)
    cdef int old_axis = -1, new_axis = -1, status
    cdef int64_t n_old, n_new
    if c_size(nd, sz, &n_old) or c_size(new_nd, ns, &n_new):
        raise OverflowError("the number of elements leaves int64")
    if n_old != n_new:
        raise ValueError(
            f"cannot reshape sizes {tuple_of(nd, sz)!r} ({n_old} elements) to "
            f"{tuple_of(new_nd, ns)!r} ({n_new} elements)"
        )
    status = c_reshape_strides(nd, sz, st, new_nd, ns, out, &old_axis, &new_axis)
    if status == STATUS_OVERFLOW:
        _raise_overflow("a reshape stride", tuple_of(nd, sz), tuple_of(nd, st))
    if status == STATUS_NO_VIEW and not 0 <= old_axis < nd - 1:
        raise ValueError(   # unreachable with equal element counts; kept so no index is wild
            f"no view reshapes sizes {tuple_of(nd, sz)!r} with strides {tuple_of(nd, st)!r} to "
            f"{tuple_of(new_nd, ns)!r}"
        )
    if status == STATUS_NO_VIEW:
        raise ValueError(
            f"no view reshapes sizes {tuple_of(nd, sz)!r} with strides {tuple_of(nd, st)!r} to "
            f"{tuple_of(new_nd, ns)!r}: new axis {new_axis} (size {ns[new_axis]}) would span old "
            f"axes {old_axis} and {old_axis + 1}, which are not contiguous "
            f"(strides[{old_axis}] = {st[old_axis]}, but a merge needs "
            f"{st[old_axis + 1]} * {sz[old_axis + 1]}); blocking axes: "
            f"({old_axis}, {old_axis + 1})"
        )
    return tuple_of(new_nd, out)


def broadcast_strides(sizes, strides, new_sizes):
    """Strides of the layout broadcast to ``new_sizes`` (numpy's rules; new axes lead)."""
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef int64_t ns[MAX_NDIM]
    cdef int64_t out[MAX_NDIM]
    cdef int nd = load_pair(sizes, strides, sz, st)
    cdef int new_nd = load_ints(new_sizes, "sizes", ns, True), lead, i
    if new_nd < nd:
        raise ValueError(
            f"cannot broadcast a rank-{nd} layout to rank {new_nd} (sizes {tuple_of(new_nd, ns)!r})"
        )
    lead = new_nd - nd
    for i in range(lead):
        out[i] = 0
    for i in range(nd):
        if sz[i] == ns[lead + i]:
            out[lead + i] = st[i]
        elif sz[i] == 1:
            out[lead + i] = 0
        else:
            raise ValueError(
                f"cannot broadcast axis {i} of size {sz[i]} to size {ns[lead + i]} "
                f"(sizes {tuple_of(nd, sz)!r} -> {tuple_of(new_nd, ns)!r}): only size-1 axes "
                f"stretch"
            )
    return tuple_of(new_nd, out)


def index(sizes, strides, offset, key):
    """(sizes, strides, offset) of ``layout[key]`` with numpy's basic-indexing rules.

    ``key``: integers (negative count from the end), slices (any step), None (new axis of
    size 1, stride 0) and at most one Ellipsis.
    """
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef int nd = load_pair(sizes, strides, sz, st), axis = 0, n_used = 0, n_out = 0
    cdef int64_t off = as_int64(offset, "offset"), i, n, step, start, term, new_stride
    cdef list out_sizes = [], out_strides = []
    cdef tuple items = key if type(key) is tuple else (key,)
    cdef bint seen_ellipsis = False
    for item in items:
        if item is not None and item is not Ellipsis:
            n_used += 1
    if n_used > nd:
        raise LayoutIndexError(f"too many indices: the layout has rank {nd}, got {n_used}")
    for item in items:
        if item is None:
            out_sizes.append(1)
            out_strides.append(0)
        elif item is Ellipsis:
            if seen_ellipsis:
                raise LayoutIndexError("an index can only have a single ellipsis ('...')")
            seen_ellipsis = True
            for _ in range(nd - n_used):
                out_sizes.append(sz[axis])
                out_strides.append(st[axis])
                axis += 1
        elif type(item) is slice:
            start, stop, pystep = item.indices(sz[axis])
            step = as_int64(pystep, "slice step")
            n = len(range(start, stop, step))
            if checked_mul(st[axis], step, &new_stride):
                raise OverflowError(
                    f"slice step {step} times stride {st[axis]} of axis {axis} leaves int64"
                )
            if n > 0:
                if checked_mul(start, st[axis], &term) or checked_add(off, term, &off):
                    raise OverflowError(f"the offset after slicing axis {axis} leaves int64")
            out_sizes.append(n)
            out_strides.append(new_stride)
            axis += 1
        else:
            if isinstance(item, bool) or type(item).__name__ in ("bool", "bool_"):
                raise TypeError(
                    f"a bool ({item!r}) is not a layout index: layouts have no boolean masks"
                )
            try:
                i = as_int64(item, "index")
            except TypeError:
                raise TypeError(
                    "only integers, slices, None and Ellipsis index a layout, "
                    f"got {type(item).__name__}"
                ) from None
            except OverflowError:
                raise LayoutIndexError(
                    f"index {item} is out of range for axis {axis} of size {sz[axis]}"
                ) from None
            if i < 0:
                i += sz[axis]
            if not 0 <= i < sz[axis]:
                raise LayoutIndexError(
                    f"index {item} is out of range for axis {axis} of size {sz[axis]}"
                )
            if checked_mul(i, st[axis], &term) or checked_add(off, term, &off):
                raise OverflowError(f"the offset after indexing axis {axis} leaves int64")
            axis += 1
    while axis < nd:
        out_sizes.append(sz[axis])
        out_strides.append(st[axis])
        axis += 1
    n_out = len(out_sizes)
    if n_out > MAX_NDIM:
        raise ValueError(f"the result would have {n_out} dimensions, more than {MAX_NDIM}")
    return tuple(out_sizes), tuple(out_strides), off


cdef int c_element_strides(int nd, const int64_t* sz, int64_t* st, int64_t isz,
                           int64_t count) noexcept nogil:
    """Divide byte strides by the itemsize in place (the rule of `element_strides`): a stride
    that cannot matter (its dim has at most one element, or `count`, the number of elements,
    is 0) becomes 0. Return 0, or 1 + the first axis whose stride is not whole elements."""
    cdef int i
    for i in range(nd):
        if st[i] % isz == 0:
            st[i] = st[i] // isz
        elif sz[i] <= 1 or count == 0:
            st[i] = 0
        else:
            return i + 1
    return 0


cdef int _to_element_strides(int nd, const int64_t* sz, int64_t* st, int64_t isz) except -1:
    """c_element_strides, raising for a stride that is not whole elements."""
    cdef int bad
    cdef int64_t n
    if c_size(nd, sz, &n):
        raise OverflowError(f"the number of elements of sizes {tuple_of(nd, sz)!r} leaves int64")
    bad = c_element_strides(nd, sz, st, isz, n)
    if bad:
        raise ValueError(
            f"byte stride {st[bad - 1]} of axis {bad - 1} is not a multiple of the itemsize "
            f"{isz}: the array cannot be described in whole elements"
        )
    return 0


def element_strides(byte_strides, sizes, itemsize):
    """Element strides from strides in bytes (numpy's unit).

    A byte stride must be a multiple of ``itemsize``. The one exception is a stride that cannot
    matter, because its dim has at most one element or the array has none: it becomes 0.
    """
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef int nd = load_pair(sizes, byte_strides, sz, st)
    cdef int64_t isz = as_int64(itemsize, "itemsize")
    if isz <= 0:
        raise ValueError(f"itemsize must be >= 1 byte, got {isz}")
    _to_element_strides(nd, sz, st, isz)
    return tuple_of(nd, st)
