# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""BurstPacking's node scans in C (core/packing.py): which node a pod, or a run of identical
pods, goes to. In numpy each pick costs a pass over nodes x resources plus temporaries; a
burst of distinct pods makes thousands of picks on thousands of nodes, so the picks are
here, in one loop over the nodes that stops looking at a node at its first miss.

Both pick what core/packing.py's numpy versions picked (same arithmetic, same ties: the
lowest node index among equals), so a move found here is the move found there."""

import numpy as np

cimport numpy as cnp

from libc.math cimport INFINITY

cnp.import_array()

ctypedef cnp.int64_t i64
ctypedef cnp.int32_t i32
ctypedef cnp.uint8_t u8


cdef inline bint _fits(const i64[:, ::1] room, const i64[::1] need, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t r
    for r in range(room.shape[1]):
        if room[n, r] < need[r]:
            return False
    return True


cdef inline double _left(
    const i64[:, ::1] room, const i64[::1] need, const double[:, ::1] capacity, Py_ssize_t n
) noexcept nogil:
    """The node's room left after ``need`` in its tightest resource, relative to it."""
    cdef Py_ssize_t r
    cdef double least = INFINITY, share
    for r in range(room.shape[1]):
        share = (room[n, r] - need[r]) / capacity[n, r]
        if share < least:
            least = share
    return least


def best_fit(
    const i64[:, ::1] room,
    const i64[::1] need,
    const u8[::1] feasible,
    const double[:, ::1] capacity,
    const u8[::1] prefer,
    const i64[::1] among,
):
    """The node ``need`` fits best (least room left, relative, in its tightest resource)
    among the nodes ``among`` (all when empty) that pass ``feasible`` and have the room;
    those in ``prefer`` first when any of them fits (an empty ``prefer``: no preference).
    ``among`` and ``prefer`` index nodes; the answer is a node index, or -1."""
    cdef Py_ssize_t i, n, count = among.shape[0] if among.shape[0] else room.shape[0]
    cdef bint any_among = among.shape[0] > 0, use_prefer = prefer.shape[0] > 0
    cdef Py_ssize_t best = -1, best_pref = -1
    cdef double least = INFINITY, least_pref = INFINITY, left
    with nogil:
        for i in range(count):
            n = among[i] if any_among else i
            if not feasible[n] or not _fits(room, need, n):
                continue
            left = _left(room, need, capacity, n)
            if use_prefer and prefer[n]:
                if best_pref < 0 or left < least_pref:
                    best_pref, least_pref = n, left
            elif best < 0 or left < least:
                best, least = n, left
    return best_pref if best_pref >= 0 else best


def repack_runs(
    i64[:, ::1] room,
    const double[:, ::1] capacity,
    const double[::1] largest,
    const u8[:, ::1] feasible,
    u8[::1] open_,
    const i64[:, ::1] run_need,
    const i64[::1] run_row,
    const i64[::1] run_start,
    const i64[::1] members,
    i32[::1] out,
    bint balance=False,
):
    """Runs of identical pods placed in turn (``repack`` of core/packing.py): run g's
    pods are ``members[run_start[g]:run_start[g + 1]]``, its requests ``run_need[g]``, its
    filters' row ``feasible[run_row[g]]``. Each run goes as many pods at a time as fit onto
    the fullest open node they fit on (fullness: the node's room in its tightest resource,
    relative to it), a node opened only when none fits (the roomiest relative to the
    ``largest`` node); pods of a run that fit nowhere stay as they are in ``out``.
    With ``balance``, one pod at a time, onto the open node whose room left is most
    aligned with its requests (relative to the node: a cpu-heavy pod goes where cpu is
    left over, not where memory is), so that one shape does not fill a node's one
    resource and strand the others. ``room`` and ``open_`` are updated."""
    cdef Py_ssize_t n_nodes = room.shape[0], n_res = room.shape[1]
    cdef Py_ssize_t g, n, r, node, start, end, k, fit_k, j
    cdef double value, best_open, best_new
    cdef Py_ssize_t at_open, at_new
    cdef cnp.ndarray[double, ndim=1] fullness_arr = np.empty(n_nodes)
    cdef cnp.ndarray[double, ndim=1] roomy_arr = np.empty(n_nodes)
    cdef double[::1] fullness = fullness_arr
    cdef double[::1] roomy = roomy_arr
    cdef const i64[::1] need
    cdef const u8[::1] row
    with nogil:
        for n in range(n_nodes):
            fullness[n] = _share(room, capacity, n)
            roomy[n] = _share_of_largest(room, largest, n)
    for g in range(run_need.shape[0]):
        need = run_need[g]
        row = feasible[run_row[g]]
        start = run_start[g]
        end = run_start[g + 1]
        with nogil:
            while start < end:
                at_open = at_new = -1
                best_open = INFINITY
                best_new = -INFINITY
                for n in range(n_nodes):
                    if not row[n] or not _fits(room, need, n):
                        continue
                    if open_[n]:
                        value = _aligned(room, need, capacity, n) if balance else fullness[n]
                        if value < best_open:
                            at_open, best_open = n, value
                    elif roomy[n] > best_new:
                        at_new, best_new = n, roomy[n]
                if at_open >= 0:
                    node = at_open
                elif at_new >= 0:
                    node = at_new
                    open_[node] = 1
                else:
                    break
                # As many of the run as the node has room for (at least one: it fits).
                k = end - start
                for r in range(n_res):
                    if need[r] > 0:
                        fit_k = room[node, r] // need[r]
                        if fit_k < k:
                            k = fit_k
                if k < 1 or balance:
                    k = 1
                for j in range(start, start + k):
                    out[members[j]] = <i32>node
                for r in range(n_res):
                    room[node, r] -= need[r] * k
                start += k
                fullness[node] = _share(room, capacity, node)
                roomy[node] = _share_of_largest(room, largest, node)


cdef inline double _aligned(
    const i64[:, ::1] room, const i64[::1] need, const double[:, ::1] capacity, Py_ssize_t n
) noexcept nogil:
    """Minus the dot product of the pod's requests and the node's room, both relative to
    the node (the most aligned node has the least value)."""
    cdef Py_ssize_t r
    cdef double total = 0.0
    for r in range(room.shape[1]):
        total -= (need[r] / capacity[n, r]) * (room[n, r] / capacity[n, r])
    return total


cdef inline double _share(
    const i64[:, ::1] room, const double[:, ::1] capacity, Py_ssize_t n
) noexcept nogil:
    cdef Py_ssize_t r
    cdef double least = INFINITY, share
    for r in range(room.shape[1]):
        share = room[n, r] / capacity[n, r]
        if share < least:
            least = share
    return least


cdef inline double _share_of_largest(
    const i64[:, ::1] room, const double[::1] largest, Py_ssize_t n
) noexcept nogil:
    cdef Py_ssize_t r
    cdef double least = INFINITY, share
    for r in range(room.shape[1]):
        share = room[n, r] / largest[r]
        if share < least:
            least = share
    return least
