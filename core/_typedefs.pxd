# The C types every kernel uses, one per kind of quantity. tests/core/test_typedefs.py checks
# each against the numpy dtype that the Python side allocates for it (core/_typedefs.py).
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t

ctypedef int64_t quantity_t   # resource amounts: cpu in millicores, memory/storage in bytes, counts
ctypedef int32_t node_t       # a node's row index in ClusterState; -1 means "no node"
ctypedef uint8_t mask_t       # a boolean per node (0 or 1)
ctypedef uint64_t bits_t      # one word of an interned label/taint bitset
ctypedef int64_t score_t      # plugin scores, 0..100 times weights (integers, as kube-scheduler)
