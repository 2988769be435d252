# Resource fit of one request vector against every node.
#
# Layout: ``allocatable`` and ``requested`` are C-contiguous (nodes x resources) int64
# matrices in the units of core/_typedefs.pxd (cpu millicores, bytes, counts); ``request`` is
# one row of the same columns. ``out[n]`` becomes 1 when the request fits node n, and the
# return value counts the nodes that fit. A zero request for a resource always fits that
# resource, as in kube-scheduler's NodeResourcesFit (a node without an extended resource
# rejects only pods that ask for it).
# cython: boundscheck=False, wraparound=False

from kubesalvo.core._typedefs cimport quantity_t, mask_t


cpdef Py_ssize_t fit_mask(
    const quantity_t[:, ::1] allocatable,
    const quantity_t[:, ::1] requested,
    const quantity_t[::1] request,
    mask_t[::1] out,
) noexcept nogil:
    cdef Py_ssize_t n, r, fits = 0
    cdef Py_ssize_t nodes = allocatable.shape[0], resources = allocatable.shape[1]
    cdef mask_t ok
    for n in range(nodes):
        ok = 1
        for r in range(resources):
            if request[r] > 0 and requested[n, r] + request[r] > allocatable[n, r]:
                ok = 0
                break
        out[n] = ok
        fits += ok
    return fits
