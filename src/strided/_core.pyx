"""Compiled core of strided: exact int64 stride arithmetic.

Everything here counts in *elements*. The ``c_*`` routines (declared in ``_core.pxd``) take C
arrays, run without the GIL and report failures as status codes; the Python-facing functions
below validate their arguments with the GIL held, call them, and turn a status into an exception
that names the argument and the value. This module knows nothing of numpy or torch.
"""
from cpython.exc cimport PyErr_CheckSignals, PyErr_Fetch, PyErr_Restore
from cpython.buffer cimport PyBUF_RECORDS_RO, PyBuffer_Release, PyObject_GetBuffer
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_AsVoidPtr
from cpython.pycapsule cimport (
    PyCapsule_CheckExact, PyCapsule_GetName, PyCapsule_GetPointer, PyCapsule_IsValid,
    PyCapsule_New, PyCapsule_SetName,
)
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from libc.stdint cimport (
    INT64_MAX, INT64_MIN, int32_t, int64_t, intptr_t, uint8_t, uint16_t, uint32_t, uint64_t,
    uintptr_t,
)
from libc.math cimport sqrt
from libc.stdlib cimport free, malloc, qsort
from libc.string cimport memcpy, strchr, strcmp
from cpython.mem cimport PyMem_RawFree, PyMem_RawMalloc
from cython.parallel cimport parallel

from strided._openmp cimport STRIDED_OPENMP_ENABLED, strided_omp_max_threads

import operator
import os
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


def openmp_enabled():
    """Return True when this build of the core was compiled with OpenMP."""
    return bool(STRIDED_OPENMP_ENABLED)


def max_threads():
    """Return the number of threads OpenMP would use by default (1 in a serial build)."""
    return strided_omp_max_threads()


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

cdef void _sort_by(int d, int64_t* key, int64_t* a, int64_t* b) noexcept nogil:
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
    _sort_by(d, s, u, NULL)


cdef int _nontrivial(int nd, const int64_t* sizes, const int64_t* strides, bint skip_zero_strides,
                     int64_t* s, int64_t* u) noexcept nogil:
    """Collect (|stride|, size - 1) of the dims of size > 1; return how many."""
    cdef int i, d = 0
    for i in range(nd):
        if sizes[i] > 1 and not (skip_zero_strides and strides[i] == 0):
            s[d] = strides[i] if strides[i] >= 0 else -strides[i]
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
            if checked_mul(strides[i] if strides[i] > 0 else -strides[i], itemsize, &c[d]):
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
    _sort_by(d, c, lo, hi)
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
            key = strides[i] if strides[i] >= 0 else -strides[i]
            j = n_ranked - 1
            while j >= 0 and (strides[ranked[j]] if strides[ranked[j]] >= 0
                              else -strides[ranked[j]]) < key:
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

cdef inline int64_t _as_int64(object value, str what) except? -1:
    """`value` as an int64; bools and non-integers are TypeError, too large is OverflowError."""
    cdef int overflow = 0
    cdef long long v
    if type(value) is int:
        v = PyLong_AsLongLongAndOverflow(value, &overflow)
        if not overflow:
            return v
    return _as_int64_slow(value, what, -1)


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


cdef int64_t _as_int64_slow(object value, str what, Py_ssize_t position) except? -1:
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
        return (_as_int64_slow(obj, name, -1),)
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


cdef int _load(object obj, str name, int64_t* out, bint nonnegative,
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
            out[i] = _as_int64_slow(v, name, i)
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
            f"{name} has {_count(n)} but sizes has {_count(nd)}: one flag per axis"
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


cdef str _count(Py_ssize_t n):
    return "1 entry" if n == 1 else f"{n} entries"


cdef tuple _tuple(int n, const int64_t* values):
    cdef int i
    return tuple([values[i] for i in range(n)])


cdef int _load_pair(object sizes, object strides, int64_t* sz, int64_t* st,
                    str strides_name="strides", bint* exact=NULL) except -1:
    """Sizes and strides of equal length; return the rank. `exact[0]`, `exact[1]` (when given):
    whether sizes, strides are tuples of exact ints (see _load)."""
    cdef int nd = _load(sizes, "sizes", sz, True, exact)
    cdef int ns = _load(strides, strides_name, st, False, exact + 1 if exact != NULL else NULL)
    if ns != nd:
        raise ValueError(
            f"{strides_name} has {_count(ns)} but sizes has {_count(nd)}: they must match"
        )
    return nd


cdef int _load_permutation(object axes, int nd, str name, int* out) except -1:
    """A permutation of range(nd); negative axes count from the end."""
    cdef int64_t raw[MAX_NDIM]
    cdef unsigned char seen[MAX_NDIM]
    cdef int n = _load(axes, name, raw, False), i
    cdef int64_t ax
    if n != nd:
        raise ValueError(f"{name} must list each of the {nd} axes once, got {_count(n)}")
    for i in range(nd):
        seen[i] = 0
    for i in range(n):
        ax = raw[i] + nd if raw[i] < 0 else raw[i]
        if not 0 <= ax < nd:
            raise LayoutIndexError(f"{name}[{i}] = {raw[i]} is not an axis of a rank-{nd} layout")
        if seen[ax]:
            raise ValueError(f"{name} repeats axis {ax}: {_tuple(n, raw)!r} is not a permutation")
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
            raise OverflowError(f"the packed strides of sizes {_tuple(nd, sz)!r} leave int64")
        return 0
    ns = _load(strides, "strides", st, False, exact_tuple)
    if ns != nd:
        raise ValueError(f"strides has {_count(ns)} but sizes has {_count(nd)}: they must match")
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
    cdef int nd, i
    cdef bint sizes_exact = False, strides_exact = False
    cdef int64_t off, isz, n, lo, hi, tmp
    nd = _load(sizes, "sizes", sz, True, &sizes_exact)
    _load_strides_or_packed(strides, nd, sz, st, &strides_exact)
    off = _as_int64(offset, "offset")
    isz = _as_int64(itemsize, "itemsize")
    if isz <= 0:
        raise ValueError(f"itemsize must be >= 1 byte, got {isz}")
    if c_size(nd, sz, &n):
        raise OverflowError(f"the number of elements of sizes {_tuple(nd, sz)!r} leaves int64")
    if c_span(nd, sz, st, off, &lo, &hi):
        _raise_overflow("the span", _tuple(nd, sz), _tuple(nd, st))
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
    # Reuse the caller's tuples when they are already exact: saves two allocations per Layout.
    return (sizes if sizes_exact else _tuple(nd, sz),
            strides if strides_exact else _tuple(nd, st), off, isz, n, lo, hi,
            c_flags(nd, sz, st))


def as_int(value, name):
    """``value`` validated as an int64 (``operator.index``; bools refused), named ``name``."""
    return _as_int64(value, name)


def as_pair(sizes, strides, strides_name="strides"):
    """``(sizes, strides)`` validated: tuples of int64 of the same length, sizes >= 0."""
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef bint exact[2]
    cdef int nd = _load_pair(sizes, strides, sz, st, strides_name, exact)
    return (sizes if exact[0] else _tuple(nd, sz), strides if exact[1] else _tuple(nd, st))


def as_sizes(sizes, name="sizes"):
    """``sizes`` validated: a tuple of non-negative int64 (one integer means one dim)."""
    cdef int64_t sz[MAX_NDIM]
    cdef int nd = _load(sizes, name, sz, True)
    return _tuple(nd, sz)


def byte_strides(strides, itemsize):
    """Strides in bytes: each stride times ``itemsize``, checked."""
    cdef int64_t st[MAX_NDIM]
    cdef int nd = _load(strides, "strides", st, False), i
    cdef int64_t isz = _as_int64(itemsize, "itemsize")
    for i in range(nd):
        if checked_mul(st[i], isz, &st[i]):
            raise OverflowError(f"strides[{i}] times itemsize {isz} leaves int64")
    return _tuple(nd, st)


def as_permutation(axes, ndim, name="order"):
    """``axes`` validated as a permutation of ``range(ndim)``; negative axes count from the end."""
    cdef int perm[MAX_NDIM]
    cdef int64_t n = _as_int64(ndim, "ndim")
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
    cdef int nd = _load(sizes, "sizes", sz, True), i
    if order is None:
        for i in range(nd):
            perm[i] = i
    else:
        _load_permutation(order, nd, "order", perm)
    if broadcast is not None:
        _load_flags(broadcast, "broadcast", nd, flags)
    if c_packed_strides(nd, sz, perm, flags if broadcast is not None else NULL, out):
        raise OverflowError(f"the packed strides of sizes {_tuple(nd, sz)!r} leave int64")
    return _tuple(nd, out)


def offset_of(index, strides, offset=0, sizes=None):
    """dot(index, strides) + offset, checked; with ``sizes``, each index must lie in range."""
    cdef int64_t ix[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t off = _as_int64(offset, "offset"), out
    cdef int n, ns, i
    try:
        n = _load(index, "index", ix, False)
    except OverflowError as exc:
        if sizes is None:
            raise
        raise LayoutIndexError(f"{exc}: out of range for sizes {_show(sizes)}") from None
    ns = _load(strides, "strides", st, False)
    if n != ns:
        raise ValueError(f"index has {_count(n)} but strides has {_count(ns)}: they must match")
    if sizes is not None:
        ns = _load(sizes, "sizes", sz, True)
        if ns != n:
            raise ValueError(f"index has {_count(n)} but sizes has {_count(ns)}: they must match")
        for i in range(n):
            if not 0 <= ix[i] < sz[i]:
                raise LayoutIndexError(
                    f"index[{i}] = {ix[i]} is out of range for axis {i} of size {sz[i]}"
                )
    if c_offset_of(n, ix, st, off, &out):
        raise OverflowError(
            f"the offset of index {_tuple(n, ix)!r} with strides {_tuple(n, st)!r} "
            f"and offset {off} leaves the signed 64-bit range"
        )
    return out


def buffer_size(sizes, strides, itemsize, align=4):
    """Bytes from the lowest to the highest element, rounded up to a multiple of ``align``."""
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef int nd
    cdef int64_t lo, hi, isz, al, nbytes, rem, rounded = 0
    nd = _load(sizes, "sizes", sz, True)
    _load_strides_or_packed(strides, nd, sz, st)
    isz = _as_int64(itemsize, "itemsize")
    if isz <= 0:
        raise ValueError(f"itemsize must be >= 1 byte, got {isz}")
    al = _as_int64(align, "align")
    if al <= 0:
        raise ValueError(f"align must be >= 1 byte, got {al}")
    if c_span(nd, sz, st, 0, &lo, &hi):
        _raise_overflow("the span", _tuple(nd, sz), _tuple(nd, st))
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


_BUDGET = object()   # "the default budget": whatever _DEFAULT_MAX_WORK is now (tests lower it)


cdef int64_t _load_max_work(object max_work) except? -2:
    """A work budget: None means none (-1), else an integer >= 0."""
    cdef int64_t v
    if max_work is _BUDGET:
        return _DEFAULT_MAX_WORK
    if max_work is None:
        return -1
    v = _as_int64(max_work, "max_work")
    if v < 0:
        raise ValueError(f"max_work must be >= 0, or None for no bound, got {v}")
    return v


cdef _too_hard(str what, int64_t max_work):
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
    cdef int nd = _load_pair(sizes, strides, sz, st), result
    cdef int64_t lo, hi, work = _load_max_work(max_work)
    if c_span(nd, sz, st, 0, &lo, &hi):
        _raise_overflow("the span", _tuple(nd, sz), _tuple(nd, st))
    with nogil:
        result = c_overlaps(nd, sz, st, work)
    if result == OVERLAP_UNDECIDED:
        _too_hard(f"deciding whether the layout with sizes {_tuple(nd, sz)!r} and strides "
                  f"{_tuple(nd, st)!r} overlaps itself", work)
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
    cdef int na = _load_pair(sizes_a, strides_a, asz, ast)
    cdef int nb = _load_pair(sizes_b, strides_b, bsz, bst), result
    cdef int64_t ka = _as_int64(itemsize_a, "itemsize_a"), kb = _as_int64(itemsize_b, "itemsize_b")
    cdef int64_t d = _as_int64(delta, "delta"), work = _load_max_work(max_work)
    if ka < 1 or kb < 1:
        raise ValueError(f"itemsizes must be >= 1 byte, got {ka} and {kb}")
    _byte_span(na, asz, ast, ka, "strides_a")
    _byte_span(nb, bsz, bst, kb, "strides_b")
    with nogil:
        result = c_shares(na, asz, ast, ka, nb, bsz, bst, kb, d, work)
    if result == OVERLAP_UNDECIDED:
        # (also when the two byte ranges together leave int64: only made-up strides do that)
        _too_hard("deciding whether the two layouts share memory", work)
    return bool(result)


def physical_order(sizes, strides):
    """Axes from outermost to innermost in memory (see c_physical_order for ties)."""
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef int order[MAX_NDIM]
    cdef int nd = _load_pair(sizes, strides, sz, st), i
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
    cdef int nd = _load_pair(sizes, strides, sz, st), i
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
    cdef int nd = _load_pair(sizes, strides, sz, st)
    cdef int d = c_coalesce(nd, sz, st, osz, ost)
    return _tuple(d, osz), _tuple(d, ost)


def permute(sizes, strides, axes):
    """(sizes, strides) with the axes reordered: new axis k is old axis axes[k]."""
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef int perm[MAX_NDIM]
    cdef int nd = _load_pair(sizes, strides, sz, st), i
    _load_permutation(axes, nd, "axes", perm)
    return (tuple([sz[perm[i]] for i in range(nd)]), tuple([st[perm[i]] for i in range(nd)]))


def resolve_sizes(new_sizes, int64_t size):
    """Validate reshape sizes, replacing one -1 by the size that keeps ``size`` elements."""
    cdef int64_t ns[MAX_NDIM]
    cdef int nd = _load(new_sizes, "sizes", ns, False), i, unknown = -1
    cdef int64_t known = 1
    for i in range(nd):
        if ns[i] == -1:
            if unknown >= 0:
                raise ValueError(f"sizes can hold only one -1, got {_tuple(nd, ns)!r}")
            unknown = i
        elif ns[i] < 0:
            raise ValueError(f"sizes[{i}] must be >= 0 (or -1 to infer it), got {ns[i]}")
        elif checked_mul(known, ns[i], &known):
            raise OverflowError(f"the number of elements of sizes {_tuple(nd, ns)!r} leaves int64")
    if unknown >= 0:
        if known == 0 or size % known != 0:
            raise ValueError(
                f"cannot infer the -1 in sizes {_tuple(nd, ns)!r} for a layout of {size} elements"
            )
        ns[unknown] = size // known
        known = size
    if known != size:
        raise ValueError(
            f"cannot reshape a layout of {size} elements to sizes {_tuple(nd, ns)!r} "
            f"({known} elements)"
        )
    return _tuple(nd, ns)


def reshape_strides(sizes, strides, new_sizes):
    """Strides viewing the same elements with ``new_sizes`` (same count), else ValueError."""
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef int64_t ns[MAX_NDIM]
    cdef int64_t out[MAX_NDIM]
    cdef int nd = _load_pair(sizes, strides, sz, st)
    cdef int new_nd = _load(new_sizes, "new_sizes", ns, True)
    cdef int old_axis = -1, new_axis = -1, status
    cdef int64_t n_old, n_new
    if c_size(nd, sz, &n_old) or c_size(new_nd, ns, &n_new):
        raise OverflowError("the number of elements leaves int64")
    if n_old != n_new:
        raise ValueError(
            f"cannot reshape sizes {_tuple(nd, sz)!r} ({n_old} elements) to "
            f"{_tuple(new_nd, ns)!r} ({n_new} elements)"
        )
    status = c_reshape_strides(nd, sz, st, new_nd, ns, out, &old_axis, &new_axis)
    if status == STATUS_OVERFLOW:
        _raise_overflow("a reshape stride", _tuple(nd, sz), _tuple(nd, st))
    if status == STATUS_NO_VIEW and not 0 <= old_axis < nd - 1:
        raise ValueError(   # unreachable with equal element counts; kept so no index is wild
            f"no view reshapes sizes {_tuple(nd, sz)!r} with strides {_tuple(nd, st)!r} to "
            f"{_tuple(new_nd, ns)!r}"
        )
    if status == STATUS_NO_VIEW:
        raise ValueError(
            f"no view reshapes sizes {_tuple(nd, sz)!r} with strides {_tuple(nd, st)!r} to "
            f"{_tuple(new_nd, ns)!r}: new axis {new_axis} (size {ns[new_axis]}) would span old "
            f"axes {old_axis} and {old_axis + 1}, which are not contiguous "
            f"(strides[{old_axis}] = {st[old_axis]}, but a merge needs "
            f"{st[old_axis + 1]} * {sz[old_axis + 1]}); blocking axes: "
            f"({old_axis}, {old_axis + 1})"
        )
    return _tuple(new_nd, out)


def broadcast_strides(sizes, strides, new_sizes):
    """Strides of the layout broadcast to ``new_sizes`` (numpy's rules; new axes lead)."""
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef int64_t ns[MAX_NDIM]
    cdef int64_t out[MAX_NDIM]
    cdef int nd = _load_pair(sizes, strides, sz, st)
    cdef int new_nd = _load(new_sizes, "sizes", ns, True), lead, i
    if new_nd < nd:
        raise ValueError(
            f"cannot broadcast a rank-{nd} layout to rank {new_nd} (sizes {_tuple(new_nd, ns)!r})"
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
                f"(sizes {_tuple(nd, sz)!r} -> {_tuple(new_nd, ns)!r}): only size-1 axes stretch"
            )
    return _tuple(new_nd, out)


def index(sizes, strides, offset, key):
    """(sizes, strides, offset) of ``layout[key]`` with numpy's basic-indexing rules.

    ``key``: integers (negative count from the end), slices (any step), None (new axis of
    size 1, stride 0) and at most one Ellipsis.
    """
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef int nd = _load_pair(sizes, strides, sz, st), axis = 0, n_used = 0, n_out = 0
    cdef int64_t off = _as_int64(offset, "offset"), i, n, step, start, term, new_stride
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
            step = _as_int64(pystep, "slice step")
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
                i = _as_int64(item, "index")
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
        raise OverflowError(f"the number of elements of sizes {_tuple(nd, sz)!r} leaves int64")
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
    cdef int nd = _load_pair(sizes, byte_strides, sz, st)
    cdef int64_t isz = _as_int64(itemsize, "itemsize")
    if isz <= 0:
        raise ValueError(f"itemsize must be >= 1 byte, got {isz}")
    _to_element_strides(nd, sz, st, isz)
    return _tuple(nd, st)


def buffer_address(obj):
    """``(address, readonly)`` of an object's buffer (PEP 3118), strided buffers included.

    The address is that of the first element. The buffer is released before returning: the
    caller keeps ``obj`` alive while it uses the address. Only the address is taken: exporters
    may report normalised strides for dims of size 1 or empty buffers (numpy does), so the
    layout is read from the object itself. Raises what the exporter raises (BufferError,
    ValueError, TypeError) when ``obj`` has no buffer or refuses a strided one.
    """
    cdef Py_buffer view
    PyObject_GetBuffer(obj, &view, PyBUF_RECORDS_RO)
    address, readonly = <size_t>view.buf, bool(view.readonly)
    PyBuffer_Release(&view)
    return address, readonly


# --------------------------------------------------------------------------------------------
# DLPack capsules (the dlpack.h v1.x ABI): consuming one, and producing one over given memory
# --------------------------------------------------------------------------------------------

cdef extern from *:
    """
    typedef struct { uint32_t major; uint32_t minor; } strided_DLPackVersion;
    typedef struct { int32_t device_type; int32_t device_id; } strided_DLDevice;
    typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } strided_DLDataType;
    typedef struct {
        void *data;
        strided_DLDevice device;
        int32_t ndim;
        strided_DLDataType dtype;
        int64_t *shape;
        int64_t *strides;
        uint64_t byte_offset;
    } strided_DLTensor;
    typedef struct strided_DLManagedTensor {
        strided_DLTensor dl_tensor;
        void *manager_ctx;
        void (*deleter)(struct strided_DLManagedTensor *self);
    } strided_DLManagedTensor;
    typedef struct strided_DLManagedTensorVersioned {
        strided_DLPackVersion version;
        void *manager_ctx;
        void (*deleter)(struct strided_DLManagedTensorVersioned *self);
        uint64_t flags;
        strided_DLTensor dl_tensor;
    } strided_DLManagedTensorVersioned;
    """
    ctypedef struct DLPackVersion "strided_DLPackVersion":
        uint32_t major
        uint32_t minor
    ctypedef struct DLDevice "strided_DLDevice":
        int32_t device_type
        int32_t device_id
    ctypedef struct DLDataType "strided_DLDataType":
        uint8_t code
        uint8_t bits
        uint16_t lanes
    ctypedef struct DLTensor "strided_DLTensor":
        void* data
        DLDevice device
        int32_t ndim
        DLDataType dtype
        int64_t* shape
        int64_t* strides
        uint64_t byte_offset
    ctypedef struct DLManagedTensor "strided_DLManagedTensor":
        DLTensor dl_tensor
        void* manager_ctx
        void (*deleter)(DLManagedTensor*) noexcept nogil
    ctypedef struct DLManagedTensorVersioned "strided_DLManagedTensorVersioned":
        DLPackVersion version
        void* manager_ctx
        void (*deleter)(DLManagedTensorVersioned*) noexcept nogil
        uint64_t flags
        DLTensor dl_tensor

cdef enum:
    DLPACK_FLAG_READ_ONLY = 1
    DLPACK_MAJOR = 1
    DLPACK_MINOR = 1

DLPACK_VERSION = (DLPACK_MAJOR, DLPACK_MINOR)
"""The newest DLPack version this core reads and writes."""

cdef const char* _LEGACY = b"dltensor"
cdef const char* _LEGACY_USED = b"used_dltensor"
cdef const char* _VERSIONED = b"dltensor_versioned"
cdef const char* _VERSIONED_USED = b"used_dltensor_versioned"


cdef class DLPackTensor:
    """A consumed DLPack capsule: what it describes, and ownership of its memory.

    Made by :func:`consume_dlpack`. The producer's deleter runs when this object is garbage
    collected, so holding it keeps the producer's memory alive. Attributes, read once at
    consumption: ``data`` (the pointer, without ``byte_offset``), ``byte_offset``, ``shape``,
    ``strides`` (element strides, or None when the producer gave a NULL pointer: packed
    row-major), ``device`` ``(device_type, device_id)``, ``dtype`` ``(code, bits, lanes)``,
    ``readonly``, ``version`` (``(major, minor)``, or None for a legacy capsule).
    """

    cdef void* _managed
    cdef bint _versioned
    cdef readonly object data, byte_offset, shape, strides, device, dtype, readonly, version

    def __cinit__(self):
        self._managed = NULL

    def __dealloc__(self):
        self._release()

    cdef void _release(self) noexcept:
        cdef DLManagedTensor* legacy
        cdef DLManagedTensorVersioned* versioned
        cdef void* managed = self._managed
        self._managed = NULL
        if managed == NULL:
            return
        if self._versioned:
            versioned = <DLManagedTensorVersioned*>managed
            if versioned.deleter != NULL:
                versioned.deleter(versioned)
        else:
            legacy = <DLManagedTensor*>managed
            if legacy.deleter != NULL:
                legacy.deleter(legacy)

    def __repr__(self):
        kind = "legacy" if self.version is None else f"v{self.version[0]}.{self.version[1]}"
        return (f"<DLPackTensor {kind} shape={self.shape} strides={self.strides} "
                f"dtype={self.dtype} device={self.device} readonly={self.readonly}>")


cdef DLTensor* _take(object capsule, DLPackTensor handle) except NULL:
    """Consume ``capsule`` into ``handle``: rename it as used, so the deleter is ours to call."""
    cdef DLManagedTensorVersioned* versioned
    cdef DLManagedTensor* legacy
    if PyCapsule_IsValid(capsule, _VERSIONED):
        versioned = <DLManagedTensorVersioned*>PyCapsule_GetPointer(capsule, _VERSIONED)
        if versioned.version.major != DLPACK_MAJOR:
            # Not consumed: the producer's capsule destructor still frees it.
            raise ValueError(
                f"DLPack capsule has version {versioned.version.major}."
                f"{versioned.version.minor}; strided reads major version {DLPACK_MAJOR}"
            )
        PyCapsule_SetName(capsule, _VERSIONED_USED)
        handle._managed = versioned
        handle._versioned = True
        handle.version = (versioned.version.major, versioned.version.minor)
        handle.readonly = bool(versioned.flags & DLPACK_FLAG_READ_ONLY)
        return &versioned.dl_tensor
    if PyCapsule_IsValid(capsule, _LEGACY):
        legacy = <DLManagedTensor*>PyCapsule_GetPointer(capsule, _LEGACY)
        PyCapsule_SetName(capsule, _LEGACY_USED)
        handle._managed = legacy
        handle._versioned = False
        handle.version = None
        handle.readonly = False
        return &legacy.dl_tensor
    if PyCapsule_IsValid(capsule, _VERSIONED_USED) or PyCapsule_IsValid(capsule, _LEGACY_USED):
        raise ValueError("this DLPack capsule has already been consumed: a capsule is read once")
    if PyCapsule_CheckExact(capsule):
        name = PyCapsule_GetName(capsule)
        raise TypeError(
            f"expected a DLPack capsule named 'dltensor' or 'dltensor_versioned', "
            f"got a capsule named {None if name == NULL else name.decode('ascii', 'replace')!r}"
        )
    raise TypeError(f"expected a DLPack capsule, got {type(capsule).__name__}")


def consume_dlpack(capsule):
    """Consume a DLPack capsule (versioned or legacy) and return a :class:`DLPackTensor`.

    The capsule is renamed ``used_dltensor[_versioned]`` as the protocol requires; the returned
    object owns the memory from then on. Every field is validated before it is trusted: a
    negative or too large ``ndim``, a NULL ``shape``, a negative size, a NULL ``data`` for a
    non-empty tensor or a zero-width dtype is ValueError (the memory is still released).
    """
    cdef DLPackTensor handle = DLPackTensor.__new__(DLPackTensor)
    cdef DLTensor* t = _take(capsule, handle)
    cdef int i, nd = t.ndim
    cdef int64_t n = 1
    if nd < 0 or nd > MAX_NDIM:
        raise ValueError(f"DLPack tensor has ndim {nd}: it must be between 0 and {MAX_NDIM}")
    if nd > 0 and t.shape == NULL:
        raise ValueError(f"DLPack tensor of ndim {nd} has a NULL shape pointer")
    for i in range(nd):
        if t.shape[i] < 0:
            raise ValueError(f"DLPack tensor has shape[{i}] = {t.shape[i]}: sizes must be >= 0")
    if c_size(nd, t.shape, &n):
        raise OverflowError(f"DLPack tensor shape {_tuple(nd, t.shape)} has more than 2**63 "
                            f"elements")
    if t.dtype.bits == 0 or t.dtype.lanes == 0:
        raise ValueError(f"DLPack tensor has a zero-width dtype (code {t.dtype.code}, "
                         f"bits {t.dtype.bits}, lanes {t.dtype.lanes})")
    if t.data == NULL and n > 0:
        raise ValueError(f"DLPack tensor of {n} elements has a NULL data pointer")
    handle.data = <size_t>t.data
    handle.byte_offset = t.byte_offset
    handle.shape = _tuple(nd, t.shape)
    handle.strides = None if t.strides == NULL else _tuple(nd, t.strides)
    handle.device = (t.device.device_type, t.device.device_id)
    handle.dtype = (t.dtype.code, t.dtype.bits, t.dtype.lanes)
    return handle


cdef extern from "Python.h":
    int Py_IsInitialized() nogil   # safe to call without the GIL (it reads a flag)


cdef void _decref_context(void* context) noexcept nogil:
    """Release the Python object a produced capsule keeps alive (from any thread).

    Consumers may call the deleter, or drop a capsule they refused, with their exception
    already set: the error state is put aside while the owner is released, so it survives.
    """
    cdef PyObject *kind
    cdef PyObject *value
    cdef PyObject *trace
    if context != NULL and Py_IsInitialized():
        with gil:
            PyErr_Fetch(&kind, &value, &trace)
            Py_XDECREF(<PyObject*>context)
            PyErr_Restore(kind, value, trace)


cdef void _delete_legacy(DLManagedTensor* self) noexcept nogil:
    _decref_context(self.manager_ctx)
    free(self)


cdef void _delete_versioned(DLManagedTensorVersioned* self) noexcept nogil:
    _decref_context(self.manager_ctx)
    free(self)


cdef void _legacy_capsule_destructor(object capsule) noexcept:
    """Free a produced capsule that no consumer took (its name is still 'dltensor')."""
    cdef DLManagedTensor* managed
    if PyCapsule_IsValid(capsule, _LEGACY):
        managed = <DLManagedTensor*>PyCapsule_GetPointer(capsule, _LEGACY)
        managed.deleter(managed)


cdef void _versioned_capsule_destructor(object capsule) noexcept:
    cdef DLManagedTensorVersioned* managed
    if PyCapsule_IsValid(capsule, _VERSIONED):
        managed = <DLManagedTensorVersioned*>PyCapsule_GetPointer(capsule, _VERSIONED)
        managed.deleter(managed)


cdef int _fill_tensor(DLTensor* t, int nd, int64_t* dims, object data, object byte_offset,
                      const int64_t* sz, const int64_t* st, object device,
                      object dtype) except -1:
    """Fill a DLTensor; ``dims`` has room for 2 * nd int64 (shape then strides)."""
    cdef int i
    t.data = PyLong_AsVoidPtr(data)
    t.byte_offset = byte_offset
    t.ndim = nd
    t.shape = dims
    t.strides = dims + nd
    for i in range(nd):
        t.shape[i] = sz[i]
        t.strides[i] = st[i]
    t.device.device_type, t.device.device_id = device
    t.dtype.code, t.dtype.bits, t.dtype.lanes = dtype
    return 0


def make_dlpack_capsule(owner, data, byte_offset, sizes, strides, device, dtype, *,
                        readonly=False, version=None):
    """A new DLPack capsule over existing memory; its deleter releases ``owner``.

    ``data`` is the address (an int) and ``byte_offset`` the bytes from it to element
    ``(0, ..., 0)``; ``sizes`` / ``strides`` are in elements. ``version=None`` makes a legacy
    ``dltensor`` capsule, which cannot say read-only (``readonly=True`` is then ValueError);
    ``(1, minor)`` makes a versioned one. ``owner`` stays alive until the consumer calls the
    deleter, or until the capsule is collected unconsumed.
    """
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef int nd = _load_pair(sizes, strides, sz, st)
    cdef size_t header
    cdef void* block
    cdef DLManagedTensor* legacy
    cdef DLManagedTensorVersioned* versioned
    if version is None and readonly:
        raise ValueError("a legacy DLPack capsule cannot mark memory read-only")
    if byte_offset < 0:
        raise ValueError(f"byte_offset must be >= 0, got {byte_offset}")
    header = sizeof(DLManagedTensor) if version is None else sizeof(DLManagedTensorVersioned)
    header = (header + 7) & ~(<size_t>7)     # the int64 arrays that follow stay aligned
    block = malloc(header + 2 * <size_t>max(nd, 1) * sizeof(int64_t))
    if block == NULL:
        raise MemoryError("cannot allocate a DLPack tensor")
    try:
        if version is None:
            legacy = <DLManagedTensor*>block
            _fill_tensor(&legacy.dl_tensor, nd, <int64_t*>(<char*>block + header), data,
                         byte_offset, sz, st, device, dtype)
            legacy.deleter = _delete_legacy
            legacy.manager_ctx = NULL
        else:
            versioned = <DLManagedTensorVersioned*>block
            _fill_tensor(&versioned.dl_tensor, nd, <int64_t*>(<char*>block + header), data,
                         byte_offset, sz, st, device, dtype)
            versioned.version.major, versioned.version.minor = version
            versioned.flags = DLPACK_FLAG_READ_ONLY if readonly else 0
            versioned.deleter = _delete_versioned
            versioned.manager_ctx = NULL
        if version is None:
            capsule = PyCapsule_New(block, _LEGACY, _legacy_capsule_destructor)
        else:
            capsule = PyCapsule_New(block, _VERSIONED, _versioned_capsule_destructor)
    except BaseException:
        free(block)
        raise
    # Only now does the capsule own the block: keep owner alive until the deleter runs.
    Py_INCREF(owner)
    if version is None:
        legacy.manager_ctx = <PyObject*>owner
    else:
        versioned.manager_ctx = <PyObject*>owner
    return capsule


# --------------------------------------------------------------------------------------------
# The copy engine: plan a strided copy once, then run its blocks on an OpenMP team
# --------------------------------------------------------------------------------------------
#
# A copy of `sizes` elements from one strided layout to another is planned as oneDNN's reorder
# and HPTT do (DESIGN §5): drop size-1 dims; flip every dim the destination walks backwards, in
# both layouts at once; sort the dims by the destination's strides; merge neighbours that are
# contiguous in *both* layouts. What is left is an outer loop nest around a 2-D block problem
#     dst[r * dp + c * dq] = src[r * sp + c * sq]
# whose columns are the destination's innermost dim. When that dim is unit-stride in the
# destination and another dim is unit-stride in the source, the block is a transpose (rows =
# the source's unit dim) and is tiled for the cache; otherwise it is a copy of rows (memcpy,
# fill, gather or scatter). Blocks are numbered (outer index, block row, block column); a team
# of threads splits that range statically, each walking its share with an odometer.

cdef extern from "_copy_kernels.h":
    enum:
        ST_BLOCK_COPY
        ST_BLOCK_TRANSPOSE
        ST_BLOCK_TBUF
        ST_TILE_BUF
        ST_NT
        ST_STITCH
        ST_FRESH
        ST_LAST
        ST_STITCH_ROWS
    void st_copy_block(int kind, int itemsize, char* dst, Py_ssize_t dp, Py_ssize_t dq,
                       const char* src, Py_ssize_t sp, Py_ssize_t sq,
                       Py_ssize_t R, Py_ssize_t C, int nt, char* scratch) noexcept nogil
    void st_store_fence() noexcept nogil
    int64_t st_claim(int64_t* next, int64_t n) noexcept nogil
    char* st_scratch() noexcept nogil
    int st_cpu_init() noexcept nogil
    int st_set_simd(int level) noexcept nogil
    int st_get_simd() noexcept nogil


st_cpu_init()   # once, at import, before any thread copies

ctypedef struct CopyPlan:
    int kind                   # ST_BLOCK_COPY, ST_BLOCK_TRANSPOSE or ST_BLOCK_TBUF
    int nt                     # 1: write whole lines with non-temporal stores
    int align                  # 1: block columns start on the destination's 64-byte lines
    int stitch                 # 1: lines straddling two blocks of a strip are finished whole
    int unit                   # bytes moved per element of the plan: 1, 2, 4, 8 or 16
    int nouter                 # outer dims, outermost first (strides in units)
    int64_t n[MAX_NDIM]
    int64_t ds[MAX_NDIM]
    int64_t ss[MAX_NDIM]
    int64_t R, C, dp, dq, sp, sq   # the block problem, in units
    int64_t BR, BC, nbr, nbc       # block extents and block counts per outer index
    int64_t dst_shift, src_shift   # bytes added to the addresses by the flipped dims
    int64_t items                  # blocks in all
    int64_t nbytes                 # bytes written


# Tuning, in bytes (set by _tune for experiments; the defaults were measured on this project's
# 2-core x86-64 machine, see benchmarks/bench_copy.py):
cdef int64_t _TILE_BYTES = 256          # a transpose tile's row, in each layout
cdef int64_t _BLOCK_BYTES = 64 * 1024   # a copy block's bytes
cdef int64_t _THREAD_BYTES = 256 * 1024  # each extra thread needs this many bytes of work
cdef int64_t _NT_BYTES = 32 * 1024 * 1024  # copies this large write with streaming stores
cdef int64_t _NOGIL_BYTES = 16 * 1024   # smaller copies keep the GIL (and one thread)
# transposes through the staging tile: -1 when _staged() says so, 0 never, 1 always
cdef int _STAGED = -1
cdef int64_t _STAGE_BYTES = 131072  # the staging tile's size (at most ST_TILE_BUF) ...
cdef int64_t _STAGE_BIG_FROM = 8 * 1024 * 1024   # ... for copies this large; 16 KiB below
cdef int64_t _NT_RUN_BYTES = 128   # a streamed transpose's destination run per tile row ...
cdef int64_t _NT_STITCH_BYTES = 512   # ... when rows do not share a line alignment
cdef int64_t _CHUNKS_PER_THREAD = 8   # a team's blocks are claimed in this many chunks a thread


def _tune(tile_bytes=None, block_bytes=None, thread_bytes=None, nt_bytes=None, staged=None,
          stage_bytes=None, nt_run_bytes=None, nt_stitch_bytes=None, chunks_per_thread=None):
    """Set the copy engine's tuning constants (bytes, and the chunks a thread's share of the
    blocks is claimed in); return the previous ones. For benchmarks."""
    global _TILE_BYTES, _BLOCK_BYTES, _THREAD_BYTES, _NT_BYTES, _STAGED, _STAGE_BYTES
    global _NT_RUN_BYTES, _NT_STITCH_BYTES, _CHUNKS_PER_THREAD
    old = (_TILE_BYTES, _BLOCK_BYTES, _THREAD_BYTES, _NT_BYTES, _STAGED, _STAGE_BYTES,
           _NT_RUN_BYTES, _NT_STITCH_BYTES, _CHUNKS_PER_THREAD)
    if chunks_per_thread is not None:
        _CHUNKS_PER_THREAD = max(1, int(chunks_per_thread))
    # Runs are clamped so that a tile of a micro-tile's rows (at most 16) of them, or of whole
    # rows of two runs, still fits the staging buffer.
    if nt_run_bytes is not None:
        _NT_RUN_BYTES = min(max(64, int(nt_run_bytes) // 64 * 64), <int64_t>ST_TILE_BUF // 32)
    if nt_stitch_bytes is not None:
        _NT_STITCH_BYTES = min(max(64, int(nt_stitch_bytes) // 64 * 64),
                               <int64_t>ST_TILE_BUF // 16)
    if stage_bytes is not None:
        _STAGE_BYTES = min(max(256, int(stage_bytes)), <int64_t>ST_TILE_BUF)
    if staged is not None:
        _STAGED = -1 if staged == -1 else int(bool(staged))
    if nt_bytes is not None:
        _NT_BYTES = int(nt_bytes)
    if tile_bytes is not None:
        _TILE_BYTES = max(16, int(tile_bytes))
    if block_bytes is not None:
        _BLOCK_BYTES = max(16, int(block_bytes))
    if thread_bytes is not None:
        _THREAD_BYTES = max(1, int(thread_bytes))
    _plan_cache_clear()
    return old


def _overlap_tuning(shift_buffer_bytes=None, max_work=None):
    """Set the shift buffer's size and the copies' overlap work budget; return the previous
    (shift_buffer_bytes, max_work). For tests, which force every buffered route on small
    arrays; not thread-safe against copies running at the same time."""
    global _SHIFT_BUFFER_BYTES, _DEFAULT_MAX_WORK
    old = (_SHIFT_BUFFER_BYTES, _DEFAULT_MAX_WORK)
    if shift_buffer_bytes is not None:
        _SHIFT_BUFFER_BYTES = max(1, int(shift_buffer_bytes))
    if max_work is not None:
        _DEFAULT_MAX_WORK = max(0, int(max_work))
    _plan_cache_clear()   # cached plans hold overlap decisions made under the old budget
    return old


def _simd(level=None):
    """The SIMD level the copy kernels use (0: SSE2, 1: + SSSE3, 2: + AVX2); ``level`` lowers it.

    A level above what the CPU has (or a negative one) means all it has. For tests and
    benchmarks, which run every kernel family on one machine; not thread-safe against copies
    running at the same time.
    """
    if level is None:
        return st_get_simd()
    level = st_set_simd(int(level))
    _plan_cache_clear()   # the planner's choices depend on the level
    return level


cdef inline int64_t _ceil_div_pos(int64_t a, int64_t b) noexcept nogil:
    return (a + b - 1) // b


cdef int _unit_of(int64_t itemsize) noexcept nogil:
    """Bytes per typed move: the itemsize itself when typed, else its largest power-of-2 part."""
    if itemsize == 1 or itemsize == 2 or itemsize == 4 or itemsize == 8 or itemsize == 16:
        return <int>itemsize
    if itemsize % 8 == 0:
        return 8
    if itemsize % 4 == 0:
        return 4
    if itemsize % 2 == 0:
        return 2
    return 1


cdef void _plan_copy(CopyPlan* P, int nd, const int64_t* sizes, const int64_t* dstr,
                     const int64_t* sstr, int64_t itemsize) noexcept nogil:
    """Fill P for a non-empty copy. Precondition: byte spans fit int64 (checked by the caller).

    An itemsize without a typed path (3, 6, 12, ...) becomes `k` units of `unit` bytes: an
    extra innermost dim of k units, unit-stride in both layouts, which then merges with any dim
    contiguous in both.
    """
    cdef int64_t n[MAX_NDIM + 1]
    cdef int64_t ds[MAX_NDIM + 1]
    cdef int64_t ss[MAX_NDIM + 1]
    cdef int64_t tn, td, ts, k
    cdef int unit = _unit_of(itemsize)
    cdef int i, j, d = 0, p = -1, q, m
    k = itemsize // unit
    P.unit = unit
    P.dst_shift = 0
    P.src_shift = 0
    P.nbytes = itemsize
    for i in range(nd):
        P.nbytes *= sizes[i]
        if sizes[i] == 1:
            continue
        n[d] = sizes[i]
        ds[d] = dstr[i] * k
        ss[d] = sstr[i] * k
        if ds[d] < 0:   # walk the destination forwards: flip this dim in both layouts
            P.dst_shift += (n[d] - 1) * ds[d] * unit
            P.src_shift += (n[d] - 1) * ss[d] * unit
            ds[d] = -ds[d]
            ss[d] = -ss[d]
        d += 1
    if k > 1:
        n[d] = k
        ds[d] = 1
        ss[d] = 1
        d += 1
    # sort by destination stride, outermost (largest) first; insertion sort, d is small
    for i in range(1, d):
        tn, td, ts = n[i], ds[i], ss[i]
        j = i - 1
        while j >= 0 and (ds[j] < td or (ds[j] == td and _abs64(ss[j]) < _abs64(ts))):
            n[j + 1], ds[j + 1], ss[j + 1] = n[j], ds[j], ss[j]
            j -= 1
        n[j + 1], ds[j + 1], ss[j + 1] = tn, td, ts
    # merge dims contiguous in both layouts (outer stride == inner stride * inner size)
    m = 0
    for i in range(d):
        if m > 0 and ds[m - 1] == ds[i] * n[i] and ss[m - 1] == ss[i] * n[i]:
            n[m - 1] *= n[i]
            ds[m - 1] = ds[i]
            ss[m - 1] = ss[i]
        else:
            n[m], ds[m], ss[m] = n[i], ds[i], ss[i]
            m += 1
    d = m
    if d == 0:   # a single element
        n[0], ds[0], ss[0] = 1, 1, 1
        d = 1
    q = d - 1
    P.kind = ST_BLOCK_COPY
    if ds[q] == 1 and ss[q] != 1 and ss[q] != 0:
        for i in range(q):
            if ss[i] == 1:
                p = i
                P.kind = ST_BLOCK_TRANSPOSE
                break
    if P.kind == ST_BLOCK_COPY and d >= 2:
        p = d - 2
    P.C, P.dq, P.sq = n[q], ds[q], ss[q]
    if p >= 0:
        P.R, P.dp, P.sp = n[p], ds[p], ss[p]
    else:
        P.R, P.dp, P.sp = 1, 0, 0
    P.nouter = 0
    for i in range(d):
        if i != p and i != q:
            P.n[P.nouter], P.ds[P.nouter], P.ss[P.nouter] = n[i], ds[i], ss[i]
            P.nouter += 1
    _plan_blocks(P)


cdef inline int64_t _abs64(int64_t v) noexcept nogil:
    return -v if v < 0 else v


cdef inline int64_t _nt_run(int unit) noexcept nogil:
    """A streamed transpose's destination run per tile row, in bytes. Measured at 64 MiB:
    128 B (tiles of 1024 x 32 floats) for items of 2 bytes or more, twice that for bytes, whose
    16 x 16 micro-tiles are slower to fill a taller tile."""
    return _NT_RUN_BYTES * 2 if unit == 1 else _NT_RUN_BYTES


cdef inline int64_t _nt_stitch_run(int unit) noexcept nogil:
    """A stitched transpose's destination run per tile row, in bytes: longer than _nt_run, as
    every run costs a carried line (measured at 63 MiB, 4063^2 floats: 0.7x memcpy with runs
    of 128 B, 0.9x with 512 B), except for bytes, whose tiles then grow too short (0.7x with
    256 B, 0.6x with 512 B)."""
    return _NT_STITCH_BYTES // 2 if unit == 1 else _NT_STITCH_BYTES


cdef inline bint _nt_whole_rows(const CopyPlan* P) noexcept nogil:
    """Whether a streamed transpose stages whole destination rows (the block is then one run):
    for rows back to back of up to 2 runs (measured: NCHW -> NHWC with 64 floats, NCHW32 with
    doubles, 1.1-1.2x faster than half rows)."""
    return P.dp == P.C and P.C * P.unit <= 2 * _NT_RUN_BYTES


cdef bint _lines_agree(const CopyPlan* P) noexcept nogil:
    """Whether every destination row, in every outer index, starts at the same offset within a
    64-byte line, so that block columns aligned on the first row's lines are aligned on all.
    """
    cdef int i
    if (P.dp * P.unit) % 64:
        return False
    for i in range(P.nouter):
        if (P.ds[i] * P.unit) % 64:
            return False
    return True


cdef bint _staged(const CopyPlan* P) noexcept nogil:
    """Whether a transpose below the streaming threshold goes through the staging tile, by the
    destination's row bytes.

    Staging wins where the tile holds many whole short rows: rows of one vector (written in
    place, in order), 65-256 B for 4- and 8-byte items (NCHW -> NHWC with C = 64 floats,
    NCHW32) and up to 128 B for 1- and 2-byte items (measured at 64 MiB on the SSE2 tiles).
    Tiling in place wins on long rows (2-D transposes, C = 256) and, measured again at 4 and
    16 MiB in both benchmark harnesses, on rows of 17-64 B for 4-byte items (NHWC with
    C = 16 floats: 1.1-1.3x against 0.7-0.8x memcpy) and of 0.5-2 KiB for bytes (2-D
    transposes: 0.6-0.7x against 0.4-0.5x). Large copies stream through the tile whatever
    this says.
    """
    cdef int64_t row = P.C * P.unit
    if _STAGED >= 0:
        return _STAGED
    if P.unit >= 4:
        return row <= 16 or 64 < row <= 256
    return row <= 128


cdef void _plan_blocks(CopyPlan* P) noexcept nogil:
    """Block extents: cache tiles for transposes, about _BLOCK_BYTES of rows for copies."""
    cdef int64_t tile, micro = 16 // P.unit if P.unit < 16 else 1
    cdef int64_t per = max(<int64_t>1, _BLOCK_BYTES // P.unit)
    # A copy that fits the caches stages through an L1-sized tile; a large one through an
    # L2-sized one (128 KiB), whose longer runs per row suit DRAM better (both measured: 128 KiB
    # was 0-15% faster than 64 KiB at 16 and 64 MiB).
    cdef int64_t room = (_STAGE_BYTES if P.nbytes >= _STAGE_BIG_FROM else
                         min(_STAGE_BYTES, <int64_t>16384)) // P.unit
    cdef int i
    cdef bint stream = _NT_BYTES >= 0 and P.nbytes >= _NT_BYTES
    P.align = 0
    P.stitch = 0
    # Streaming stores skip the read-for-ownership of every destination line: a third of a
    # large copy's memory traffic. They pay off on whole lines written back to back (copies,
    # fills, and transposes staged in a tile whose rows are whole lines), and cost 1.5-3x when
    # lines are left partly written (a tile row starting mid-line): measured.
    P.nt = P.kind == ST_BLOCK_COPY and stream
    if P.kind == ST_BLOCK_TRANSPOSE and P.C >= micro and P.R >= micro and stream:
        # Tiles of whole short rows (the block is one run of the destination), or of short
        # runs of long rows. When every row starts at the same offset in its line, the block
        # columns are shifted onto the lines (_execute finds the shift from the address, and
        # the plan keeps a spare column); otherwise a strip of blocks writes the same rows left
        # to right and the lines straddling two blocks are finished from a carry
        # (st_stitch_row). Either way every line is streamed whole. (Stitching serves both,
        # but costs 2x on aligned rows: numpy's large arrays start 16 bytes into a line, and
        # every run then needs a carry.)
        P.kind = ST_BLOCK_TBUF
        P.nt = ST_NT
        if _nt_whole_rows(P):
            P.BC = P.C
            P.BR = min(P.R, max(micro, room // P.BC))
        elif _lines_agree(P):
            P.BC = _nt_run(P.unit) // P.unit
            P.BR = min(P.R, max(micro, room // P.BC))
            P.align = 1
        else:
            P.BC = _nt_stitch_run(P.unit) // P.unit
            P.BR = min(P.R, max(micro, room // P.BC), <int64_t>ST_STITCH_ROWS)
            P.stitch = 1
    elif P.kind == ST_BLOCK_TRANSPOSE and P.C >= micro and P.R >= micro and not _staged(P):
        tile = max(micro, _TILE_BYTES // P.unit)
        P.BR = min(P.R, tile)
        P.BC = min(P.C, tile)
    elif P.kind == ST_BLOCK_TRANSPOSE and P.C >= micro and P.R >= micro:
        # a staging tile of at most ST_TILE_BUF bytes, square unless one side is short
        P.kind = ST_BLOCK_TBUF
        tile = max(micro, <int64_t>sqrt(<double>room))
        tile -= tile % micro
        P.BC = min(P.C, tile)
        P.BR = min(P.R, room // P.BC)
    elif P.kind == ST_BLOCK_TRANSPOSE and P.C < micro:
        # interleaving a few source planes into short destination rows
        P.BC = P.C
        P.BR = min(P.R, max(<int64_t>1, per // P.C))
    else:
        P.BC = min(P.C, per)
        P.BR = min(P.R, max(<int64_t>1, per // P.BC))
    P.nbr = _ceil_div_pos(P.R, P.BR)
    P.nbc = _ceil_div_pos(P.C, P.BC) + P.align
    P.items = P.nbr * P.nbc
    for i in range(P.nouter):
        P.items *= P.n[i]


cdef void _run_blocks(const CopyPlan* P, char* dst, const char* src, int64_t lo,
                      int64_t hi, int64_t lead) noexcept nogil:
    """Run blocks lo..hi-1 of the plan (dst and src already shifted for flipped dims).

    With P.align, block column 0 is the ``lead`` columns before the destination's first line
    boundary, and column k > 0 starts at lead + (k - 1) * BC; empty blocks are skipped. Block
    columns are the innermost index, so the blocks of one strip (the same rows) run one after
    another; with P.stitch the first block of a strip or of this share is marked ST_FRESH and
    the last ST_LAST (see st_stitch_row).
    """
    cdef int64_t idx[MAX_NDIM]
    cdef int64_t item = lo, rest, br, bc, doff = 0, soff = 0, r0, c0, width
    cdef int flags
    cdef int64_t u = P.unit
    cdef int i
    cdef char* scratch = NULL
    if lo >= hi:
        return
    if P.kind == ST_BLOCK_TBUF:
        scratch = st_scratch()   # this thread's staging tile (thread-local, not on the stack)
    bc = lo % P.nbc
    rest = lo // P.nbc
    br = rest % P.nbr
    rest = rest // P.nbr
    for i in range(P.nouter - 1, -1, -1):
        idx[i] = rest % P.n[i]
        rest = rest // P.n[i]
        doff += idx[i] * P.ds[i]
        soff += idx[i] * P.ss[i]
    while True:
        r0 = br * P.BR
        if not P.align:
            c0 = bc * P.BC
            width = min(P.BC, P.C - c0)
        elif bc == 0:
            c0 = 0
            width = min(lead, P.C)
        else:
            c0 = lead + (bc - 1) * P.BC
            width = min(P.BC, P.C - c0)
        flags = P.nt
        if P.stitch:
            flags |= ST_STITCH
            if bc == 0 or item == lo:
                flags |= ST_FRESH
            if bc == P.nbc - 1 or item + 1 == hi:
                flags |= ST_LAST
        if width > 0:
            st_copy_block(P.kind, P.unit,
                          dst + (doff + r0 * P.dp + c0 * P.dq) * u, P.dp, P.dq,
                          src + (soff + r0 * P.sp + c0 * P.sq) * u, P.sp, P.sq,
                          min(P.BR, P.R - r0), width, flags, scratch)
        item += 1
        if item >= hi:
            if P.nt:
                st_store_fence()
            return
        bc += 1
        if bc < P.nbc:
            continue
        bc = 0
        br += 1
        if br < P.nbr:
            continue
        br = 0
        i = P.nouter - 1   # odometer step over the outer dims
        while i >= 0:
            idx[i] += 1
            doff += P.ds[i]
            soff += P.ss[i]
            if idx[i] < P.n[i]:
                break
            doff -= idx[i] * P.ds[i]
            soff -= idx[i] * P.ss[i]
            idx[i] = 0
            i -= 1


cdef void _run_share(const CopyPlan* P, char* dst, const char* src, int64_t lead,
                     int64_t* next, int64_t chunk) noexcept nogil:
    """Inside a parallel region: claim chunks of ``chunk`` consecutive blocks from the team's
    counter ``next`` and run them, until none is left.

    Not a fixed share per thread: on a machine where another process, or another library's
    OpenMP threads still spinning after their own work, holds a core, the thread that runs
    late claims fewer chunks instead of holding the whole copy back. (_run_blocks takes any
    range of blocks: a chunk starts and ends its stitched strips like a share did.)
    """
    cdef int64_t lo
    while True:
        lo = st_claim(next, chunk)
        if lo >= P.items:
            return
        _run_blocks(P, dst, src, lo, min(lo + chunk, P.items), lead)


cdef void _execute(const CopyPlan* P, char* dst, const char* src, int nthreads) noexcept nogil:
    """Run a plan: on one thread below _THREAD_BYTES of work per thread, else on a team."""
    cdef int64_t useful = P.nbytes // _THREAD_BYTES
    cdef int nt = nthreads
    cdef int64_t lead = 0, next = 0, chunk
    dst += P.dst_shift
    src += P.src_shift
    if P.align and <uintptr_t>dst % P.unit == 0:
        # columns before the first line boundary (rows share it: _lines_agree)
        lead = ((64 - <int64_t>(<uintptr_t>dst % 64)) % 64) // P.unit
    if useful < nt:
        nt = <int>max(<int64_t>1, useful)
    if nt > P.items:
        nt = <int>P.items
    if nt <= 1 or not STRIDED_OPENMP_ENABLED or st_forked_child:
        _run_blocks(P, dst, src, 0, P.items, lead)
        return
    chunk = max(<int64_t>1, P.items // (nt * _CHUNKS_PER_THREAD))
    with parallel(num_threads=nt):
        _run_share(P, dst, src, lead, &next, chunk)


# ---- plan cache ------------------------------------------------------------------------------
# Repeated copies between the same pair of layouts (a data loader's batches) skip the planner
# and the destination's exact overlap test: a direct-mapped table keyed by (sizes, dst strides,
# src strides, itemsize). Read and written with the GIL held; a plan is copied out before the
# GIL is released, so a slot may be replaced while another thread copies.

cdef enum:
    _CACHE_SLOTS = 64
    _CACHE_MAX_ND = 8

ctypedef struct _CacheEntry:
    int nd                      # -1: empty slot
    int dst_overlaps
    int64_t itemsize
    int64_t key[3 * _CACHE_MAX_ND]
    CopyPlan plan

cdef _CacheEntry _cache[_CACHE_SLOTS]


cdef void _plan_cache_clear() noexcept:
    cdef int i
    for i in range(_CACHE_SLOTS):
        _cache[i].nd = -1


_plan_cache_clear()


cdef inline uint64_t _mix(uint64_t h, int64_t v) noexcept nogil:
    h ^= <uint64_t>v
    return h * <uint64_t>0x100000001b3ULL


cdef int _dst_overlaps(int nd, const int64_t* sizes, const int64_t* strides) except -1:
    """0 when no two elements of the destination share memory; 1 when two do, or when that
    cannot be decided within the default work budget (spans fit int64)."""
    cdef int flags = c_flags(nd, sizes, strides), result
    if flags & (FLAG_PACKED | FLAG_EMPTY):
        return 0
    if flags & FLAG_BROADCAST:
        return 1
    with nogil:
        result = c_overlaps(nd, sizes, strides, _DEFAULT_MAX_WORK)
    return result != 0


cdef int _get_plan(int nd, const int64_t* sizes, const int64_t* dstr, const int64_t* sstr,
                   int64_t itemsize, CopyPlan* scratch, const CopyPlan** out) except -1:
    """Plan a non-empty copy; return 1 when the destination overlaps itself, else 0 and set
    *out to the plan: a cache slot (valid until the next call: copy it before releasing the
    GIL) or *scratch for ranks the cache does not hold."""
    cdef uint64_t h = <uint64_t>0xcbf29ce484222325ULL
    cdef _CacheEntry* e
    cdef int i, overlapping
    if nd > _CACHE_MAX_ND:
        if _dst_overlaps(nd, sizes, dstr):
            return 1
        _plan_copy(scratch, nd, sizes, dstr, sstr, itemsize)
        out[0] = scratch
        return 0
    h = _mix(h, nd)
    h = _mix(h, itemsize)
    for i in range(nd):
        h = _mix(_mix(_mix(h, sizes[i]), dstr[i]), sstr[i])
    e = &_cache[(h >> 32) % _CACHE_SLOTS]
    out[0] = &e.plan
    if e.nd == nd and e.itemsize == itemsize:
        for i in range(nd):
            if (e.key[3 * i] != sizes[i] or e.key[3 * i + 1] != dstr[i]
                    or e.key[3 * i + 2] != sstr[i]):
                break
        else:
            return e.dst_overlaps
    overlapping = _dst_overlaps(nd, sizes, dstr)
    if not overlapping:
        _plan_copy(&e.plan, nd, sizes, dstr, sstr, itemsize)
    e.nd = nd
    e.itemsize = itemsize
    e.dst_overlaps = overlapping
    for i in range(nd):
        e.key[3 * i] = sizes[i]
        e.key[3 * i + 1] = dstr[i]
        e.key[3 * i + 2] = sstr[i]
    return overlapping


# ---- running a copy --------------------------------------------------------------------------

cdef int _copy_planned(char* dst, const char* src, int nd, const int64_t* sizes,
                       const int64_t* dstr, const int64_t* sstr, int64_t itemsize,
                       int nthreads, const CopyPlan* plan, int64_t dlo, int64_t dhi,
                       int64_t slo, int64_t shi) except -1:
    """Run a planned, validated, non-empty copy; exact even when the two share memory.

    ``dlo..dhi`` and ``slo..shi`` are the element spans of the two layouts (c_span, element 0
    at 0). Precondition: both byte spans fit int64 and the destination does not overlap itself.
    Layouts whose byte ranges meet but share no byte copy directly; a shift (the same strides
    at another address) copies in memmove's order through a small buffer; only the rest stage
    the whole source in a temporary.
    """
    cdef CopyPlan own
    cdef int shared, a, b
    cdef int64_t delta
    if (dst + (dhi + 1) * itemsize <= src + slo * itemsize
            or src + (shi + 1) * itemsize <= dst + dlo * itemsize):
        shared = 0
    else:
        delta = <int64_t>(<intptr_t>src - <intptr_t>dst)
        with nogil:
            shared = c_shares(nd, sizes, dstr, itemsize, nd, sizes, sstr, itemsize, delta,
                              _DEFAULT_MAX_WORK)
    if shared:   # undecided counts as shared: the buffered paths are right either way
        if _same_strides(nd, sizes, dstr, sstr):
            if dst != src:   # else the copy is the identity
                _copy_shifted(dst, src, nd, sizes, dstr, itemsize, nthreads)
            return 0
        if dst == src and _swapped_pair(nd, sizes, dstr, sstr, &a, &b):
            return _copy_swapped(dst, nd, sizes, dstr, sstr, itemsize, nthreads, a, b)
        return _copy_staged(dst, src, nd, sizes, dstr, sstr, itemsize, nthreads)
    if plan.nbytes < _NOGIL_BYTES:   # a few microseconds: not worth a GIL round trip
        _execute(plan, dst, src, 1)
        return 0
    memcpy(&own, plan, sizeof(CopyPlan))   # the cache slot may change once the GIL is free
    with nogil:
        _execute(&own, dst, src, nthreads)
    return 0


cdef bint _same_strides(int nd, const int64_t* sizes, const int64_t* a,
                        const int64_t* b) noexcept nogil:
    cdef int i
    for i in range(nd):
        if sizes[i] > 1 and a[i] != b[i]:
            return False
    return True


cdef enum:
    _STAGE_READ = 1    # src -> tmp
    _STAGE_WRITE = 2   # tmp -> dst


cdef void _stage(int parts, char* tmp, char* dst, const char* src, int nd, const int64_t* sizes,
                 const int64_t* dstr, const int64_t* sstr, int64_t itemsize,
                 int nthreads) noexcept nogil:
    """Copy through ``tmp``, packed in the destination's order: read the source into it
    (_STAGE_READ), write it to the destination (_STAGE_WRITE), or both in turn. Every buffered
    route (staged, shifted, swapped tiles) goes through here."""
    cdef int64_t tstr[MAX_NDIM]
    cdef int order[MAX_NDIM]
    cdef CopyPlan plan
    c_physical_order(nd, sizes, dstr, order)
    c_packed_strides(nd, sizes, order, NULL, tstr)
    if parts & _STAGE_READ:
        _plan_copy(&plan, nd, sizes, tstr, sstr, itemsize)
        _execute(&plan, tmp, src, nthreads)
    if parts & _STAGE_WRITE:
        _plan_copy(&plan, nd, sizes, dstr, tstr, itemsize)
        _execute(&plan, dst, tmp, nthreads)


cdef int _copy_staged(char* dst, const char* src, int nd, const int64_t* sizes,
                      const int64_t* dstr, const int64_t* sstr, int64_t itemsize,
                      int nthreads) except -1:
    """Stage the whole source in a packed temporary, then write: the result is the source as
    it was. The temporary is had before any byte is written."""
    cdef int64_t count = 0
    cdef char* tmp
    c_size(nd, sizes, &count)
    tmp = <char*>PyMem_RawMalloc(<size_t>(count * itemsize))
    if tmp == NULL:
        raise MemoryError(f"no memory for a {count * itemsize}-byte temporary (the source and "
                          f"destination share memory in an order that no small buffer can "
                          f"copy); nothing was written")
    try:
        with nogil:
            _stage(_STAGE_READ | _STAGE_WRITE, tmp, dst, src, nd, sizes, dstr, sstr, itemsize,
                   nthreads)
    finally:
        PyMem_RawFree(tmp)
    return 0


# ---- in-place transposes: two equal dims whose strides are swapped, over the same memory ------
# Destination tile (I, J) of the two dims occupies exactly the memory that holds the source of
# tile (J, I), and no other tile's: the destination's elements are distinct, and the source
# reads element (i, j) where the destination keeps (j, i). So each pair of tiles goes through a
# small buffer (read both, then write both), and the whole transpose needs two tiles of memory.

cdef bint _swapped_pair(int nd, const int64_t* sizes, const int64_t* dstr, const int64_t* sstr,
                        int* a, int* b) noexcept nogil:
    """Find dims a != b of equal size with dstr[a] == sstr[b] and dstr[b] == sstr[a], the
    strides of every other dim equal; False when there is no such pair."""
    cdef int i
    a[0] = -1
    b[0] = -1
    for i in range(nd):
        if sizes[i] > 1 and dstr[i] != sstr[i]:
            if a[0] < 0:
                a[0] = i
            elif b[0] < 0:
                b[0] = i
            else:
                return False
    return (b[0] >= 0 and sizes[a[0]] == sizes[b[0]] and dstr[a[0]] == sstr[b[0]]
            and dstr[b[0]] == sstr[a[0]])


cdef int _copy_swapped(char* base, int nd, const int64_t* sizes, const int64_t* dstr,
                       const int64_t* sstr, int64_t itemsize, int nthreads, int a,
                       int b) except -1:
    """An in-place transpose of dims a and b (see above), through two tiles of memory."""
    cdef int64_t rest = 1, n = sizes[a], tile, ti, tj, half
    cdef int64_t blk[MAX_NDIM]
    cdef char* tmp
    cdef int i
    for i in range(nd):
        if i != a and i != b:
            rest *= sizes[i]
    half = _SHIFT_BUFFER_BYTES // 2
    if rest * itemsize > half:   # one element pair of tiles would not fit: stage it all
        return _copy_staged(base, base, nd, sizes, dstr, sstr, itemsize, nthreads)
    tile = <int64_t>sqrt(<double>(half // (rest * itemsize)))
    tile = max(<int64_t>1, min(tile, n))
    tmp = <char*>PyMem_RawMalloc(<size_t>(2 * tile * tile * rest * itemsize))
    if tmp == NULL:
        raise MemoryError("no memory for the two tiles of an in-place transpose; nothing was "
                          "written")
    for i in range(nd):
        blk[i] = sizes[i]
    try:
        with nogil:
            ti = 0
            while ti < n:
                tj = ti
                while tj < n:
                    _swap_tiles(tmp, base, nd, blk, dstr, sstr, itemsize, a, b, ti, tj,
                                min(tile, n - ti), min(tile, n - tj), tile * tile * rest)
                    tj += tile
                ti += tile
    finally:
        PyMem_RawFree(tmp)
    return 0


cdef void _swap_tiles(char* tmp, char* base, int nd, int64_t* blk, const int64_t* dstr,
                      const int64_t* sstr, int64_t itemsize, int a, int b, int64_t ti,
                      int64_t tj, int64_t ni, int64_t nj, int64_t tile_items) noexcept nogil:
    """Destination tiles (ti, tj) and (tj, ti): stage both sources, then write both."""
    cdef char* d_ij = base + (ti * dstr[a] + tj * dstr[b]) * itemsize
    cdef char* d_ji = base + (tj * dstr[a] + ti * dstr[b]) * itemsize
    cdef const char* s_ij = base + (ti * sstr[a] + tj * sstr[b]) * itemsize
    cdef const char* s_ji = base + (tj * sstr[a] + ti * sstr[b]) * itemsize
    cdef char* second = tmp + tile_items * itemsize
    blk[a] = ni
    blk[b] = nj
    _stage(_STAGE_READ, tmp, d_ij, s_ij, nd, blk, dstr, sstr, itemsize, 1)
    if ti != tj:   # (tj, ti) is staged and written while (ti, tj) waits in tmp
        blk[a] = nj
        blk[b] = ni
        _stage(_STAGE_READ | _STAGE_WRITE, second, d_ji, s_ji, nd, blk, dstr, sstr, itemsize, 1)
        blk[a] = ni
        blk[b] = nj
    _stage(_STAGE_WRITE, tmp, d_ij, s_ij, nd, blk, dstr, sstr, itemsize, 1)


# ---- shifts: the same strides at another address, copied in memmove's order ------------------
# With every stride made positive (flipping a dim flips both layouts alike) and the dims sorted
# outermost first, split the copy into slabs along the outermost dim. When its stride exceeds
# the extent of the dims below, the slabs are disjoint and ordered in memory, and destination
# slab x is source slab x moved by delta bytes: it can only meet source slabs on delta's side
# (y >= x for delta > 0). Walking the slabs from that side, every source slab a write reaches
# has already been read, except slab x itself. So groups of slabs go through a small buffer
# (read the group, then write it); a slab larger than the buffer is split the same way, one
# level down. Memory: _SHIFT_BUFFER_BYTES, however large the copy.

cdef int64_t _SHIFT_BUFFER_BYTES = 256 * 1024   # L2-sized: both passes stay in cache


ctypedef struct _Shift:
    int d                       # dims of size > 1, outermost first
    int64_t n[MAX_NDIM]
    int64_t s[MAX_NDIM]         # element strides, > 0
    int64_t below[MAX_NDIM]     # elements in a slab of dim i (product of the n below it)
    int64_t itemsize
    int64_t buffer_items        # elements the buffer holds
    bint backward               # delta > 0: walk each dim from its end
    char* tmp
    int nthreads


cdef bint _plan_shift(_Shift* S, int nd, const int64_t* sizes, const int64_t* strides,
                      int64_t itemsize, char** dst, const char** src) noexcept nogil:
    """Fill S (and move dst/src to the flipped origin); False when some dim the copy must be
    split along is interleaved with the dims below it (then only a full temporary is safe)."""
    cdef int i, d = 0
    cdef int64_t extent
    cdef bint disjoint[MAX_NDIM]
    for i in range(nd):
        if sizes[i] > 1:
            S.n[d] = sizes[i]
            S.s[d] = strides[i]
            if strides[i] < 0:
                dst[0] += strides[i] * (sizes[i] - 1) * itemsize
                src[0] += strides[i] * (sizes[i] - 1) * itemsize
                S.s[d] = -strides[i]
            d += 1
    for i in range(d):   # largest stride first: sort the negated strides ascending
        S.s[i] = -S.s[i]
    _sort_by(d, S.s, S.n, NULL)
    for i in range(d):
        S.s[i] = -S.s[i]
    S.d = d
    S.itemsize = itemsize
    S.buffer_items = max(<int64_t>1, _SHIFT_BUFFER_BYTES // itemsize)
    extent = 0   # sum of s * (n - 1) of the dims below i
    for i in range(d - 1, -1, -1):
        S.below[i] = 1 if i == d - 1 else S.below[i + 1] * S.n[i + 1]
        disjoint[i] = S.s[i] > extent
        extent += S.s[i] * (S.n[i] - 1)
    # The levels _shift_level walks: it splits dim i while one of its slabs exceeds the buffer,
    # and groups the slabs of the first dim whose slab fits; both need that dim's slabs apart,
    # unless all of them fit the buffer at once (one group, no order at all).
    for i in range(d):
        if S.below[i] * S.n[i] <= S.buffer_items:
            return True
        if not disjoint[i]:
            return False
        if S.below[i] <= S.buffer_items:
            return True
    return True


cdef void _shift_level(const _Shift* S, int level, char* dst, const char* src) noexcept nogil:
    """Copy the slabs of dim `level` (and everything below it) in the safe order."""
    cdef int64_t n = S.n[level], step = S.s[level] * S.itemsize, group, x0, count, i
    cdef int64_t sizes[MAX_NDIM]
    cdef int nd = S.d - level
    if S.below[level] > S.buffer_items:   # one slab is too big: split it, slab by slab
        for i in range(n):
            x0 = n - 1 - i if S.backward else i
            _shift_level(S, level + 1, dst + x0 * step, src + x0 * step)
        return
    group = max(<int64_t>1, S.buffer_items // S.below[level])
    for i in range(nd):
        sizes[i] = S.n[level + i]
    i = 0
    while i < n:
        count = min(group, n - i)
        x0 = n - i - count if S.backward else i
        sizes[0] = count
        _stage(_STAGE_READ | _STAGE_WRITE, S.tmp, dst + x0 * step, src + x0 * step, nd, sizes,
               &S.s[level], &S.s[level], S.itemsize, S.nthreads)
        i += count


cdef int _copy_shifted(char* dst, const char* src, int nd, const int64_t* sizes,
                       const int64_t* strides, int64_t itemsize, int nthreads) except -1:
    """Copy between two layouts of the same strides whose memory meets (a shift)."""
    cdef _Shift S
    cdef char* d0 = dst
    cdef const char* s0 = src
    if not _plan_shift(&S, nd, sizes, strides, itemsize, &d0, &s0):
        return _copy_staged(dst, src, nd, sizes, strides, strides, itemsize, nthreads)
    dst = d0
    src = s0
    S.backward = dst > src
    S.nthreads = nthreads
    S.tmp = <char*>PyMem_RawMalloc(<size_t>(S.buffer_items * itemsize))
    if S.tmp == NULL:
        raise MemoryError(f"no memory for a {S.buffer_items * itemsize}-byte copy buffer; "
                          f"nothing was written")
    try:
        with nogil:
            if S.d == 0:
                memcpy(S.tmp, src, <size_t>itemsize)
                memcpy(dst, S.tmp, <size_t>itemsize)
            else:
                _shift_level(&S, 0, dst, src)
    finally:
        PyMem_RawFree(S.tmp)
    return 0


# ---- threads, and processes forked after a team ran ------------------------------------------
# libgomp's thread pool does not survive fork(): in the child, the first parallel region waits
# forever for threads that only the parent has (torch's own ops hang the same way). Data loaders
# fork their workers (multiprocessing's default on Linux, torch DataLoader), so a child of a fork
# runs every copy on one thread. pthread_atfork catches every fork (os.fork, multiprocessing, a
# fork from C), not only those made through Python; the flag is inherited by grandchildren.

cdef extern from *:
    """
    #if defined(__unix__) || defined(__APPLE__)
    #include <pthread.h>
    static volatile int st_forked_child = 0;
    static void st_mark_forked_child(void) { st_forked_child = 1; }
    static int st_watch_forks(void) {
        return pthread_atfork(NULL, NULL, st_mark_forked_child);
    }
    #else
    static volatile int st_forked_child = 0;   /* no fork() here */
    static int st_watch_forks(void) { return 0; }
    #endif
    """
    int st_forked_child
    int st_watch_forks() noexcept nogil


if st_watch_forks() != 0:
    raise ImportError("strided: pthread_atfork failed; copies in forked children could hang")


def in_forked_child():
    """True in a process made by ``fork()`` after strided was imported: its copies run serially.

    OpenMP's thread team cannot be used after a fork (libgomp waits for the parent's threads),
    so every copy of such a process runs on one thread, whatever ``num_threads`` says.
    """
    return bool(st_forked_child)


cdef int _CORES = 1
try:
    _CORES = max(1, len(os.sched_getaffinity(0)))
except (AttributeError, OSError):
    _CORES = max(1, os.cpu_count() or 1)

cdef enum:
    _MAX_THREADS = 256


cdef int copy_threads(object num_threads) except -1:
    cdef int64_t v = 0
    if num_threads is not None:
        v = _as_int64(num_threads, "num_threads")
        if v < 1:
            raise ValueError(f"num_threads must be >= 1, or None for the default, got {v}")
    if st_forked_child:
        # what a forked child gets (and reports); _execute enforces it for every caller too,
        # and no OpenMP function is called at all here
        return 1
    if num_threads is None:
        return max(1, min(strided_omp_max_threads(), _CORES))
    return <int>min(v, <int64_t>_MAX_THREADS)


def resolve_threads(num_threads=None):
    """The number of threads a copy may use.

    ``None`` means the default: OpenMP's (``OMP_NUM_THREADS`` when set), but never more than
    the cores this process may run on. An explicit count must be an integer >= 1 (counts above
    256 are treated as 256). A serial build still accepts any count and uses one thread.

    Raises
    ------
    TypeError
        ``num_threads`` is not an integer (a bool included).
    ValueError
        ``num_threads`` < 1.
    """
    return copy_threads(num_threads)


cdef int _byte_span_leaves_int64(int nd, const int64_t* sizes, const int64_t* strides,
                                 int64_t itemsize, int64_t* lo, int64_t* hi) noexcept nogil:
    """Set lo..hi to a layout's element span (element 0 at offset 0); return 1 when some byte
    offset of it, or the end of its last element, leaves int64."""
    cdef int64_t b
    return (c_span(nd, sizes, strides, 0, lo, hi) or checked_mul(lo[0], itemsize, &b)
            or checked_mul(hi[0], itemsize, &b) or checked_add(b, itemsize, &b))


cdef int _byte_span(int nd, const int64_t* sizes, const int64_t* strides, int64_t itemsize,
                    str name) except -1:
    """Check that every byte offset of a layout (element 0 at offset 0) fits int64."""
    cdef int64_t lo, hi
    if _byte_span_leaves_int64(nd, sizes, strides, itemsize, &lo, &hi):
        raise OverflowError(
            f"the byte offsets of {name} {_tuple(nd, strides)!r} with sizes "
            f"{_tuple(nd, sizes)!r} and itemsize {itemsize} leave the signed 64-bit range"
        )
    return 0


cdef size_t _address(object value, str name) except? 0:
    """An address: an integer (the rules of _as_int64) that is not negative."""
    cdef int64_t v = _as_int64(value, name)
    if v < 0:
        raise ValueError(f"{name} = {v} is not an address")
    return <size_t>v


def copy_memory(dst_address, src_address, sizes, dst_strides, src_strides, itemsize,
                num_threads=None):
    """Copy a strided tensor between raw addresses (element strides; no bounds checks).

    Element ``index`` is read at ``src_address + dot(index, src_strides) * itemsize`` and
    written at ``dst_address + dot(index, dst_strides) * itemsize``. Like ``memmove``, this
    trusts the caller that both layouts lie inside memory it owns; the public
    :func:`strided.copyto` checks that first. When the two byte ranges intersect, the source is
    staged in a temporary, so the destination always ends up holding the source's values as
    they were before the call.

    Raises
    ------
    TypeError
        A non-integer argument.
    ValueError
        Negative sizes, mismatched ranks, itemsize < 1, a NULL address for a non-empty copy,
        num_threads < 1, or a destination whose elements overlap each other (checked before
        anything is written).
    OverflowError
        A byte offset of either layout leaves int64.
    """
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t dst[MAX_NDIM]
    cdef int64_t src[MAX_NDIM]
    cdef int64_t isz, count
    cdef int nd, n, nthreads
    cdef size_t dptr, sptr
    nd = _load(sizes, "sizes", sz, True)
    n = _load(dst_strides, "dst_strides", dst, False)
    if n != nd:
        raise ValueError(f"dst_strides has {_count(n)} but sizes has {_count(nd)}: they must match")
    n = _load(src_strides, "src_strides", src, False)
    if n != nd:
        raise ValueError(f"src_strides has {_count(n)} but sizes has {_count(nd)}: they must match")
    isz = _as_int64(itemsize, "itemsize")
    if isz < 1:
        raise ValueError(f"itemsize must be >= 1 byte, got {isz}")
    nthreads = copy_threads(num_threads)
    dptr = _address(dst_address, "dst_address")
    sptr = _address(src_address, "src_address")
    if c_size(nd, sz, &count):
        raise OverflowError(f"the number of elements of sizes {_tuple(nd, sz)!r} leaves int64")
    _byte_span(nd, sz, dst, isz, "dst_strides")
    _byte_span(nd, sz, src, isz, "src_strides")
    if count == 0:
        return
    if dptr == 0 or sptr == 0:
        raise ValueError(f"{'dst_address' if dptr == 0 else 'src_address'} is NULL (0) but "
                         f"the copy has {count} elements")
    # the spans are checked above, so a refusal here is about the destination overlapping itself
    if copy_elements(<char*>dptr, <const char*>sptr, nd, sz, dst, src, isz, count, nthreads):
        if c_overlaps(nd, sz, dst, _DEFAULT_MAX_WORK) == OVERLAP_UNDECIDED:
            _too_hard(f"deciding whether the destination (dst_strides {_tuple(nd, dst)!r}, "
                      f"sizes {_tuple(nd, sz)!r}) overlaps itself", _DEFAULT_MAX_WORK)
        raise ValueError(
            f"the destination overlaps itself: two of its elements share memory (dst_strides "
            f"{_tuple(nd, dst)!r}, sizes {_tuple(nd, sz)!r}), so a copy into it is ambiguous"
        )


cdef int copy_elements(char* dst, const char* src, int nd, const int64_t* sizes,
                       const int64_t* dst_strides, const int64_t* src_strides, int64_t itemsize,
                       int64_t count, int nthreads) except -1:
    """Copy between two validated memory blocks (element strides; ``count`` elements).

    The one entry of compiled adapters (buffers here, numpy arrays in
    ``strided.interop._ndarray``): they read an array's address, sizes and strides, and this
    does the rest. Return 0 when the copy is done, or 1, having written nothing, when it cannot
    be done as asked: the destination overlaps itself, or a byte offset leaves int64 (strides
    made up with numpy's ``as_strided``). The caller's slow path then explains the refusal.
    """
    cdef CopyPlan scratch
    cdef const CopyPlan* plan
    cdef int64_t dlo, dhi, slo, shi
    if count == 0:
        return 0
    if (_byte_span_leaves_int64(nd, sizes, dst_strides, itemsize, &dlo, &dhi)
            or _byte_span_leaves_int64(nd, sizes, src_strides, itemsize, &slo, &shi)):
        return 1
    if _get_plan(nd, sizes, dst_strides, src_strides, itemsize, &scratch, &plan):
        return 1
    _copy_planned(dst, src, nd, sizes, dst_strides, src_strides, itemsize, nthreads, plan,
                  dlo, dhi, slo, shi)
    return 0


cdef const char* _FORMAT_B = b"B"   # PEP 3118: a NULL format means unsigned bytes


cdef int _buffer_layout(Py_buffer* view, int64_t count, int64_t* sizes,
                        int64_t* strides) noexcept:
    """Element sizes and strides of a buffer of `count` elements; 1 when a stride is not
    whole elements (then the slow path explains it)."""
    cdef int i
    cdef int order[MAX_NDIM]
    for i in range(view.ndim):
        sizes[i] = view.shape[i]
        order[i] = i
    if view.strides == NULL:
        c_packed_strides(view.ndim, sizes, order, NULL, strides)
        return 0
    for i in range(view.ndim):
        strides[i] = view.strides[i]
    return c_element_strides(view.ndim, sizes, strides, view.itemsize, count) != 0


def copyto_buffers(dst, src, num_threads=None):
    """Copy between two buffer-protocol objects (numpy arrays, memoryviews, bytearrays).

    The fast path of :func:`strided.copyto`. Returns True when it did the whole copy, and
    False, having written nothing, whenever it cannot decide alone: an object without a buffer,
    different formats, itemsizes or shapes, a read-only or self-overlapping destination, object
    references (format ``O``), strides in fractions of an item. The caller then takes the slow
    path, which explains the refusal. Only a bad ``num_threads`` raises here.
    """
    cdef Py_buffer dv, sv
    cdef bint have_d = False, have_s = False
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t dstr[MAX_NDIM]
    cdef int64_t sstr[MAX_NDIM]
    cdef int64_t count = 1
    cdef const char* fd
    cdef const char* fs
    cdef int i, nd, nthreads = copy_threads(num_threads)
    try:
        try:
            PyObject_GetBuffer(dst, &dv, PyBUF_RECORDS_RO)
            have_d = True
            PyObject_GetBuffer(src, &sv, PyBUF_RECORDS_RO)
            have_s = True
        except Exception:
            return False
        nd = dv.ndim
        if dv.readonly or nd != sv.ndim or dv.itemsize != sv.itemsize or dv.itemsize < 1:
            return False
        fd = _FORMAT_B
        if dv.format != NULL:
            fd = dv.format
        fs = _FORMAT_B
        if sv.format != NULL:
            fs = sv.format
        # numpy writes unaligned arrays' formats with "=" (standard sizes, native order):
        # for the single-character codes it uses, that is the same element as "@"/nothing
        if fd[0] == c'=' or fd[0] == c'@':
            fd += 1
        if fs[0] == c'=' or fs[0] == c'@':
            fs += 1
        if strcmp(fd, fs) != 0 or strchr(fd, c'O') != NULL:
            return False
        for i in range(nd):
            if dv.shape[i] != sv.shape[i]:
                return False
            count *= dv.shape[i]
        if _buffer_layout(&dv, count, sz, dstr) or _buffer_layout(&sv, count, sz, sstr):
            return False
        return copy_elements(<char*>dv.buf, <const char*>sv.buf, nd, sz, dstr, sstr,
                             dv.itemsize, count, nthreads) == 0
    finally:
        if have_s:
            PyBuffer_Release(&sv)
        if have_d:
            PyBuffer_Release(&dv)
