# The burst placement kernel: places the pods of a burst one after the other, in queue
# order, on the best feasible node, updating node usage before the next pod.
#
# Layout (all C-contiguous; "rows" are ClusterState rows, present or not):
# * node state: alloc/req (rows x resources, int64: millicores, bytes, counts; column 3 is
#   the pod count), nzreq (rows x 2: non-zero cpu/memory as the scores see them),
#   port_use (port keys x rows, int32 pod counts: a class's few keys are read along the
#   rows its scans visit). req/nzreq/port_use are the kernel's
#   own copies: the kernel mutates them; the Python side commits placements to the state.
# * a chunk of the burst: equivalence classes (c_*) and pods (p_*) in queue order. The
#   static work of a class is a row of deduplicated tables (static_reason, fixed,
#   taint_count, aff_score) that classes with the same sub-signature share.
# * per-class caches ("slots"): for a class that has pods left, its feasibility, its
#   local score (weighted NodeResourcesFit + BalancedAllocation + fixed) and a max-tree
#   over its total score. A placement changes the usage of one row only, so the rows
#   changed since a slot was last used (the log) are recomputed, and picking a node costs
#   O(log rows) instead of O(rows). Scores normalised over the feasible nodes (the score
#   channels: the first REVERSE_MAX one in taint_count, the first MAX one in aff_score,
#   TaintToleration's and NodeAffinity's in the default profile; further ones in x_raw,
#   with per-channel weight and kind) depend on the maxima over feasible rows: when those
#   change, the slot's totals are recomputed in one pass. A class whose extra channels vary
#   (c_xvary) leaves the paths that assume rows sharing their normalised scores (the
#   grouped c_mode 2 path, the bounded search) for passes over its feasible rows.
# * topology: dom (topology keys x rows, the label value id = domain id, -1 = no label)
#   and counters (counters x rows, int32: pods matching a (namespace, selector) or
#   carrying an affinity term; raised by each placement of a pod they count). A class's
#   spread constraints are k_* rows and its inter-pod terms a_* rows over them.
# * how a class picks its node (c_mode): 0 the max-tree above; 1 (one soft spread
#   constraint on a key with few domains, e.g. zones) a max-tree ordered by zone, the best
#   row of each zone plus that zone's spread score, O(zones log rows) per pod; 3 (a soft
#   constraint on the hostname and one on a zone-like key, counting the same pods: the
#   System default constraints of a Deployment's pods) a max-tree ordered by zone and,
#   within a zone, by the row's count of matching pods, so that each (zone, count) group
#   of rows shares one spread score: the best row of each group plus that score,
#   O(groups log rows) per pod; 2 (hard spread, inter-pod terms, other constraints) by
#   group of rows when its terms are on the hostname or on one zone-like key
#   (_place_grouped: a max-tree of local scores ordered by (zone, untolerated
#   PreferNoSchedule count, preferred affinity score); the rows no hostname term counts a
#   pod on share the rest of their group's score and verdict, the others are scored one
#   by one; the normalisations over the feasible rows come from the groups and those
#   rows), else in passes over the rows per pod. The per-domain counts both read (dcount,
#   acount) are kept across the pods of a class and follow the log (_topo_sync), counted
#   afresh only when another class needed them in between.
#
# Ties: as kube-scheduler's selectHost, a pod goes to a row drawn uniformly among the rows
# sharing the best total, from the kernel's random stream (ks_next in _scan.h; the state
# comes from and goes back to core/ties.py). Scans keep a reservoir over the ties they meet
# (ks_offer); the max-trees keep, per node, how many leaves hold its maximum (s_tree), so
# the k-th tied leaf of a range is found by descent (_tree_pick); paths that compare groups
# of rows weigh each group by its tied rows (_consider_group). out_ties: the tied rows.
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False

import numpy as np

from libc.math cimport fabs, log, sqrt, round as c_round
from libc.stdlib cimport free, malloc, qsort
from libc.string cimport memcpy, memset
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint64_t

from kubesalvo.core._typedefs cimport quantity_t, node_t, mask_t, score_t

cdef extern from "_scan.h" nogil:
    void ks_local_rows(const int32_t* rows, int64_t nf, const ks_hot* hot,
                       const int32_t* fixed, int64_t nz_cpu, int64_t nz_mem,
                       int64_t req_cpu, int64_t req_mem, int64_t w_fit, int64_t w_bal,
                       int64_t* out, uint8_t* redo)
    int64_t ks_max16(const int32_t* rows, int64_t nf, const int16_t* v)
    int64_t ks_max32(const int32_t* rows, int64_t nf, const int32_t* v)
    void ks_soft_empty(const int32_t* rows, int64_t nf, const int32_t* const* keys,
                       const int64_t* skews, int64_t nk, int require_all, int64_t* rawsp,
                       int64_t* hi, int64_t* lo)
    int64_t ks_best_row(const int32_t* rows, int64_t nf, const int64_t* loc,
                        int loc_by_pos, const int16_t* taints, const int64_t* tsc,
                        int64_t w_taint, int64_t mt, const int32_t* aff, int64_t w_aff,
                        int64_t ma, const int64_t* rawsp, int64_t w_spread, int64_t hi,
                        int64_t lo, const int64_t* rawipa, int64_t w_ipa, int64_t ihi,
                        int64_t ilo, const ks_extra* x, int32_t* tb, uint64_t* state,
                        int64_t* score, int64_t* ties)
    int64_t ks_norm(int64_t x, int64_t mx, int rev)
    int64_t ks_extra_terms(const ks_extra* x, int64_t n)
    int64_t ks_pick_tied(const int32_t* tb, int64_t cnt, uint64_t* state)
    int64_t ks_below(uint64_t* state, int64_t n)
    void ks_res_init(ks_res* r)
    void ks_offer(ks_res* r, int64_t t, int64_t n, uint64_t* state)
    int ks_offer_group(ks_res* r, int64_t t, int64_t w, uint64_t* state)
    void ks_tree_build(int64_t* t, int64_t leaves, int64_t used)
    void ks_tree_set(int64_t* t, int64_t leaves, int64_t pos, int64_t v)
    int64_t ks_single_scan(ks_single* q)
    void ks_twin_terms(const ks_single* q, const int32_t* wit, int64_t ngroups,
                       uint8_t* gfit, int64_t* gloc, uint8_t* gredo)
    int ks_fits(const ks_single* q, int32_t n)
    enum: KS_LEVELS
    enum: KS_SHAPES
    void ks_levels_build(ks_levels* b, const ks_hot* hot, int64_t rows)
    void ks_levels_move(ks_levels* b, const ks_hot* hot, int32_t n)
    int64_t ks_cell_fit(const ks_levels* b, int64_t sh, int64_t l, int64_t nz0, int64_t nz1)
    void ks_levels_unlink(ks_levels* b, int32_t n)
    void ks_levels_add(ks_levels* b, const ks_hot* hot, int32_t n)
    int64_t ks_cell_rows(const ks_levels* b, int64_t c, const uint64_t* member,
                         const ks_single* q, int32_t* out, int64_t* seen)
    int64_t ks_host_zone_raw(int64_t h, double wh, int64_t skew_h, int64_t zc, double wz,
                             int64_t skew_z)
    int64_t ks_soft_raw(int32_t n, const ks_soft* k, int64_t nk, const int64_t* dcount,
                        int64_t maxdom, const double* weights)
    int64_t ks_spread_norm(int64_t r, int flat, int64_t hi, int64_t lo)
    int64_t ks_ipa_norm(int64_t r, int64_t ihi, int64_t ilo)
    void ks_soft_scores(const int32_t* rows, int64_t nf, const ks_soft* k,
                        int64_t nk, int require_all, const int64_t* dcount, uint8_t* dpresent,
                        int64_t maxdom, double* weights, uint8_t* missing, int64_t* rawsp,
                        int64_t* hi, int64_t* lo)

cdef extern from "_twins.h" nogil:
    int ks_twins_build(ks_twins* t, const int64_t* alloc, const int64_t* req,
                       const int64_t* nz, int64_t nres, int64_t rows, int64_t min_size)
    int ks_twin_same(const ks_twins* t, int64_t g, const int64_t* req, const int64_t* nz)
    void ks_twin_set(ks_twins* t, int32_t n, int inb)
    int ks_twin_has(const ks_twins* t, int32_t n)
    int32_t ks_twin_witness(ks_twins* t, int64_t g)
    int ks_ctz64 "__builtin_ctzll"(uint64_t x)
    int64_t ks_count4(const uint64_t* a, const uint64_t* b, const uint64_t* c,
                      const uint64_t* d, int64_t lo, int64_t words)
    int64_t ks_value_bits(const void* v, int width, int64_t rows, int64_t words,
                          int64_t* vals, uint64_t* bits)
    int64_t ks_untwinned(const ks_twins* t, const uint64_t* member, int64_t rows, int32_t* out)
    bint ks_any3(const uint64_t* a, const uint64_t* b, const uint64_t* c, int64_t lo,
                 int64_t words)
    int64_t ks_untwinned_max16(const ks_twins* t, const uint64_t* member,
                               const uint64_t* const* pos, int64_t npos, const int16_t* v,
                               const ks_single* q, int64_t m)
    int64_t ks_union_select(const uint64_t* const* a, const uint64_t* b,
                            const uint64_t* const* c, const uint64_t* const* d, int64_t nt,
                            const int32_t* extra, int64_t ne, int64_t words, int64_t idx)


# Reason codes and the pods column, declared once in core/_codes.pxd.
from kubesalvo.core._codes cimport (
    R_PORTS, R_SPREAD, R_SPREAD_LABEL, R_IPA_AFF, R_IPA_ANTI, R_IPA_EXISTING, R_FIXED,
    R_ABSENT, POD_COL as POD_COLUMN,
)

cdef enum:
    MAX_SCORE = 100
    MAX_ZONES = 64     # zone fast path: at most this many domains of the key
    TAINT_TABLE = 64   # per-pod table of TaintToleration scores for counts below this
    MAX_GROUPS = 256   # grouped c_mode 2 path: at most this many (zone, taints, affinity) groups
                       #   (a group id is a uint8)
    MAX_AFF_VALUES = 16  # ... and this many preferred node affinity scores
    ORDERS = 16        # _group_order's results kept per chunk (o_sig)

ZONE_LIMIT = MAX_ZONES

cdef int64_t NEG = -1

# Whether the only pod of a class searches its rows best bound first (_single_bounded)
# where it can, rather than scanning them all: both choose the same row from the same
# draw; tests and the every-row-equal cost measurement force the full scan.
cdef bint _bounded = True
# It gives up for the scan past rows / _share rows (_single_bounded).
cdef Py_ssize_t _share = 16
# The smallest twin group (_twins.h) it takes as one, counting its ties without visiting
# its rows (0: none; read when a kernel builds its levels): a smaller group costs more
# per search than its rows would.
cdef Py_ssize_t _twin_min = 32
# A kernel groups its rows (a pass over every row's state, a few scans' worth) once it has
# made this many searches: a burst of fewer one-pod classes would not earn it back.
cdef Py_ssize_t _twin_after = 8


def set_bounded_search(bint on, Py_ssize_t share=16, Py_ssize_t twins=32,
                       Py_ssize_t twin_after=8):
    """Turn the bounded search of a class's only pod on or off (for every kernel of the
    process), set the share of the rows past which it gives up for the scan (1: it
    never gives up, as the tests that hold it to the scan want), the smallest twin
    group it searches as one (0: none, every row visited as before; tests lower it to
    reach small clusters) and after how many searches a kernel builds its twin groups
    (tests: 0, at the first); returns the previous (on, share, twins, twin_after)."""
    global _bounded, _share, _twin_min, _twin_after
    if share < 1:
        raise ValueError(f"share must be 1 or more, not {share}")
    if twins < 0 or twin_after < 0:
        raise ValueError(f"twins and twin_after must be 0 or more, not {twins}, {twin_after}")
    before = (_bounded, _share, _twin_min, _twin_after)
    _bounded = on
    _share = share
    _twin_min = twins
    _twin_after = twin_after
    return before


# Whether the scans (_scan: slot rebuilds, the passes of spread classes) take the filter
# verdict and local score of a row still in its twin group from the group, computed once
# (ks_single_scan_twins), and _diagnose counts a group's misfit rows without a visit
# (_diagnose_twins); off for the same-process A/B and the tests that compare both.
cdef bint _twin_scan = True


def set_twin_scan(bint on):
    """Turn the scans' and the diagnosis's use of the twin groups on or off (every kernel
    of the process); returns the previous setting."""
    global _twin_scan
    before = _twin_scan
    _twin_scan = on
    return before


# Whether _group_order keeps its results per signature for the chunk (o_sig) and copies
# them into the slots of later classes of that signature; off for the same-process A/B
# and the tests that compare both.
cdef bint _order_cache = True


def set_order_cache(bint on):
    """Turn the per-signature group orders on or off (every kernel of the process);
    returns the previous setting."""
    global _order_cache
    before = _order_cache
    _order_cache = on
    return before


# How many taint-count rows of a chunk get a list of their rows for the bounded search
# (the others scan): each costs a pass over the rows.
cdef enum:
    SMASKS = 8
    TIED_SETS = 64   # the twin sets a search may find tied (past it, it scans)
cdef int64_t MAX_INT32 = 2147483647


cdef inline int64_t _broken_linear(const int64_t[::1] us, const int64_t[::1] ss, int64_t p) noexcept nogil:
    cdef Py_ssize_t i, k = us.shape[0]
    for i in range(k):
        if p <= us[i]:
            if i == 0:
                return ss[0]
            return ss[i - 1] + (ss[i] - ss[i - 1]) * (p - us[i - 1]) // (us[i] - us[i - 1])
    return ss[k - 1]


cdef inline int64_t _floor_div(int64_t x, int64_t a) noexcept nogil:
    """x // a for 0 <= x and 0 < a, through a double division when that is exact.

    Below 2**52 both operands are exact doubles and the rounded quotient is at most one
    above the true floor (never below it), so one integer check corrects it; the double
    divider pipelines where the integer one does not."""
    cdef int64_t q
    if x < (<int64_t>1 << 52):
        q = <int64_t>(<double>x / <double>a)
        if q * a > x:
            q -= 1
        return q
    return x // a


cdef int _cmp_row(const void* a, const void* b) noexcept nogil:
    """qsort's order of rows (int32), ascending."""
    cdef int32_t x = (<const int32_t*>a)[0], y = (<const int32_t*>b)[0]
    return (x > y) - (x < y)


cdef inline bint _taint_table(int64_t* table, int64_t w_taint, int64_t mt) noexcept nogil:
    """Fill table[v] with the weighted TaintToleration score of a row with v untolerated
    PreferNoSchedule taints, v <= mt (the maximum over the feasible rows); False when mt
    is too large for the table (then each row divides)."""
    cdef int64_t v
    if mt >= TAINT_TABLE:
        return False
    for v in range(mt + 1):
        table[v] = w_taint * (MAX_SCORE if mt == 0 else MAX_SCORE - MAX_SCORE * v // mt)
    return True


cdef class BurstKernel:

    def __init__(self, alloc, req, nzreq, port_use, KernelSettings settings, scoring, dom,
                 ndom, uint64_t[::1] ties):
        """``settings``: the profile's scalars (KernelSettings in _place.pxd); ``scoring``:
        the resource-score columns (core/place.py's ScoringColumns: sc_cols, sc_weight,
        shape_util, shape_score, bal_cols, col_scalar, col_fit_check); ``ties``: the state
        of the random stream ties are drawn from (one uint64, core/ties.py), read at each
        run and written back after it."""
        if ties.shape[0] < 1:
            raise ValueError("ties: the random stream's state is one uint64")
        self.ties = ties
        cdef int strategy = settings.strategy
        cdef Py_ssize_t max_constraints = settings.max_constraints
        sc_cols, sc_weight = scoring.sc_cols, scoring.sc_weight
        shape_util, shape_score = scoring.shape_util, scoring.shape_score
        bal_cols, col_scalar = scoring.bal_cols, scoring.col_scalar
        col_fit_check = scoring.col_fit_check
        self.alloc = alloc
        self.req = req
        self.nzreq = nzreq
        if alloc.shape[0] > 0:
            # Raw row pointers for the per-pod scans (C-contiguous, held by the views above).
            self.p_alloc = &self.alloc[0, 0]
            self.p_req = &self.req[0, 0]
            self.p_nz = &self.nzreq[0, 0]
        self.port_use = port_use
        self.port_rows = (np.asarray(port_use) > 0).sum(axis=1).astype(np.int64) \
            if np.ndim(port_use) == 2 and np.shape(port_use)[0] else np.zeros(1, dtype=np.int64)
        self.rows = alloc.shape[0]
        self.nres = alloc.shape[1]
        self.strategy = strategy
        self.sc_cols = sc_cols
        self.sc_weight = sc_weight
        self.shape_util = shape_util
        self.shape_score = shape_score
        self.bal_cols = bal_cols
        self.col_scalar = col_scalar
        self.col_fit_check = col_fit_check
        self.w_fit = settings.w_fit
        self.w_bal = settings.w_bal
        self.w_taint = settings.w_taint
        self.w_aff = settings.w_aff
        self.fit_on = settings.fit_on
        self.ports_on = settings.ports_on
        self.default_scores = (
            strategy == 0 and list(sc_cols) == [0, 1] and list(bal_cols) == [0, 1]
        )
        # equal cpu and memory weights: the weighted mean of two scores is their halved sum
        self.even_weights = len(sc_weight) == 2 and sc_weight[0] == sc_weight[1]
        self.w_spread = settings.w_spread
        self.spread_on = settings.spread_on
        self.dom = dom
        self.ndom = ndom
        # one spare column: the zone layout also counts the rows without the key
        max_domains = (max(1, int(np.max(ndom))) if len(ndom) else 1) + 1
        self.dcount = np.zeros((max(1, max_constraints), max_domains), dtype=np.int64)
        self.dpresent = np.zeros((max(1, max_constraints), max_domains), dtype=np.uint8)
        self.dmin = np.zeros(max(1, max_constraints), dtype=np.int64)
        self.dlow = np.zeros(max(1, max_constraints), dtype=np.int64)
        self.dlow_n = np.zeros(max(1, max_constraints), dtype=np.int64)
        self.dpresent_n = np.zeros(max(1, max_constraints), dtype=np.int64)
        self.zcur = np.zeros(MAX_ZONES + 2, dtype=np.int64)
        unique = np.ones(max(1, len(ndom)), dtype=np.uint8)
        dom_np = np.asarray(dom)
        for key in range(len(ndom)):
            ids = dom_np[key][dom_np[key] >= 0]
            if len(ids) and np.bincount(ids).max() > 1:
                unique[key] = 0
        self.key_unique = unique
        self.t_owner = -1
        self.kweight = np.zeros(max(1, max_constraints), dtype=np.float64)
        self.kmissing = np.zeros(max(1, max_constraints), dtype=np.uint8)
        self.kmax = max(1, max_constraints)
        self.kdom = <const int32_t**>malloc(2 * self.kmax * sizeof(int32_t*))
        self.kskew = <int64_t*>malloc(2 * self.kmax * sizeof(int64_t))
        self.ksoft = <ks_soft*>malloc(self.kmax * sizeof(ks_soft))
        if self.kdom == NULL or self.kskew == NULL or self.ksoft == NULL:
            raise MemoryError()
        self.frows = np.zeros(max(1, self.rows), dtype=np.int32)
        self.rawsp = np.zeros(self.rows, dtype=np.int64)
        self.rawipa = np.zeros(self.rows, dtype=np.int64)
        self.rawloc = np.zeros(self.rows, dtype=np.int64)
        self.redo = np.zeros(max(1, self.rows), dtype=np.uint8)
        self.tiebuf = np.zeros(self.rows + 1, dtype=np.int32)
        self.lv_next = np.zeros(max(1, self.rows), dtype=np.int32)
        self.lv_prev = np.zeros(max(1, self.rows), dtype=np.int32)
        self.lv_cell = np.zeros(max(1, self.rows), dtype=np.int32)
        self.lv_head = np.zeros(KS_SHAPES * KS_LEVELS, dtype=np.int32)
        self.levels.next = &self.lv_next[0]
        self.levels.prev = &self.lv_prev[0]
        self.levels.cell = &self.lv_cell[0]
        self.levels.head = &self.lv_head[0]
        self.lv_count = np.zeros(KS_SHAPES * KS_LEVELS, dtype=np.int32)
        self.levels.count = &self.lv_count[0]
        self.lv_built = False
        words = max(1, (self.rows + 63) // 64)
        self.tw_group = np.full(max(1, self.rows), -1, dtype=np.int32)
        self.tw_in = np.zeros(KS_TWIN_GROUPS * words, dtype=np.uint64)
        self.tw_all = np.zeros(words, dtype=np.uint64)
        self.tw_list = np.empty(max(1, self.rows), dtype=np.int32)
        self.tw_count = np.zeros(KS_TWIN_GROUPS, dtype=np.int64)
        self.tw_hint = np.zeros(KS_TWIN_GROUPS, dtype=np.int64)
        self.tw_base = np.zeros(KS_TWIN_GROUPS * (self.nres + 2), dtype=np.int64)
        self.tw.words = words
        self.tw.ngroups = 0
        self.tw.nres = self.nres
        self.tw.group = &self.tw_group[0]
        self.tw.inb = &self.tw_in[0]
        self.tw.all_in = &self.tw_all[0]
        self.tw.count = &self.tw_count[0]
        self.tw.hint = &self.tw_hint[0]
        self.tw.base = &self.tw_base[0]
        self.tlist = np.zeros((SMASKS, max(1, self.rows)), dtype=np.int32)
        self.tlist_n = np.zeros(SMASKS, dtype=np.int64)
        self._hot_rows()
        self.w_ipa = settings.w_ipa
        self.ipa_on = settings.ipa_on
        leaves = 2
        while leaves < self.rows:
            leaves *= 2
        self.leaves = leaves

    def __dealloc__(self):
        free(self.kdom)
        free(self.kskew)
        free(self.ksoft)

    def _hot_rows(self):
        """Build hot (one 64-byte line per row, see _scan.h) and podfree from the node state."""
        cdef Py_ssize_t n, rows = self.rows
        cdef size_t addr
        buf = np.zeros(max(1, rows) * sizeof(ks_hot) + 64, dtype=np.uint8)
        addr = <size_t>buf.ctypes.data
        self.hot_buf = buf
        self.hot = <ks_hot*>(addr + (64 - addr % 64) % 64)
        self.podfree = np.zeros(max(1, rows), dtype=np.int64)
        self.xcols = np.zeros(max(1, self.nres), dtype=np.int32)
        if rows == 0 or self.nres < 2:
            return
        for n in range(rows):
            self.hot[n].a0 = self.alloc[n, 0]
            self.hot[n].a1 = self.alloc[n, 1]
            self.hot[n].r0 = self.req[n, 0]
            self.hot[n].r1 = self.req[n, 1]
            self.hot[n].z0 = self.nzreq[n, 0]
            self.hot[n].z1 = self.nzreq[n, 1]
            self.hot[n].inv0 = 1.0 / <double>self.alloc[n, 0] if self.alloc[n, 0] > 0 else 0.0
            self.hot[n].inv1 = 1.0 / <double>self.alloc[n, 1] if self.alloc[n, 1] > 0 else 0.0
            if self.nres > POD_COLUMN:
                self.podfree[n] = self.alloc[n, POD_COLUMN] - self.req[n, POD_COLUMN]

    def load_chunk(self, classes, tables, ports, spread, pods, out, Py_ssize_t nslots):
        """Set the classes and pods of the next chunk, and allocate the class caches.

        The operands come as the bundles core/place.py builds (their arrays are laid out
        as the attributes declared in _place.pxd): ``classes`` (ClassColumns: c_req, c_nz,
        c_nz_add, c_score_error), ``tables`` (encode.StaticTables), ``ports``
        (PortConflicts), ``spread`` (spread.SpreadTables, with its ``ipa`` rows), ``pods``
        (PodColumns: p_class, p_gang_min, p_gang_last, p_nominated) and ``out``
        (Outputs: node, score, reasons, rolled, error), each read once per chunk.
        """
        c_req, c_nz, c_nz_add = classes.c_req, classes.c_nz, classes.c_nz_add
        c_score_error = classes.c_score_error
        c_static, static_reason = tables.c_static, tables.static_reason
        static_off, static_rows = tables.static_off, tables.static_rows
        c_fixed, fixed, c_taint = tables.c_fixed, tables.fixed, tables.c_taint
        taint_count, c_aff, aff_score = tables.taint_count, tables.c_aff, tables.aff_score
        c_port_conf_off, c_port_conf = ports.conf_off, ports.conf
        c_port_own_off, c_port_own = ports.own_off, ports.own
        c_k_off, k_key, k_hard, k_skew = spread.c_k_off, spread.k_key, spread.k_hard, spread.k_skew
        k_min_domains, k_self, k_counter = spread.k_min_domains, spread.k_self, spread.k_counter
        k_elig, k_host, elig, counters = spread.k_elig, spread.k_host, spread.elig, spread.counters
        c_inc_off, c_inc = spread.c_inc_off, spread.c_inc
        ipa = spread.ipa
        c_a_off, a_kind, a_key, a_counter = ipa.c_a_off, ipa.a_kind, ipa.a_key, ipa.a_counter
        a_weight, c_a_self = ipa.a_weight, ipa.c_a_self
        c_mode, c_spread_all = spread.c_mode, spread.c_spread_all
        p_class, p_gang_min = pods.p_class, pods.p_gang_min
        p_gang_last, p_nominated = pods.p_gang_last, pods.p_nominated
        out_node, out_score, out_reasons = out.node, out.score, out.reasons
        out_rolled, out_error, out_ties = out.rolled, out.error, out.ties
        self.nclasses = c_req.shape[0]
        self.c_req = c_req
        checked = (np.asarray(c_req) > 0) & (np.asarray(self.col_fit_check) > 0)[None, :]
        self.c_fit_off = np.concatenate(([0], np.cumsum(checked.sum(axis=1)))).astype(np.int32)
        cols = np.nonzero(checked)[1].astype(np.int32)
        self.c_fit_cols = cols if len(cols) else np.zeros(1, dtype=np.int32)
        self.c_nz = c_nz
        self.c_nz_add = c_nz_add
        self.c_static = c_static
        self.static_counts = np.zeros(
            (static_reason.shape[0], out_reasons.shape[1]), dtype=np.int32
        )
        self.static_done = np.zeros(max(1, static_reason.shape[0]), dtype=np.uint8)
        self.static_reason = static_reason
        self.late_code = tables.late_code
        self.static_off = static_off
        self.static_rows = static_rows
        self.c_fixed = c_fixed
        self.fixed = fixed
        self.fixed_max = np.full(max(1, fixed.shape[0]), -1, dtype=np.int64)
        self._chunk_bits(static_reason.shape[0], fixed.shape[0], taint_count.shape[0])
        self.tlist_of = np.full(max(1, taint_count.shape[0]), -1, dtype=np.int32)
        self.tlist_used = 0
        self.c_taint = c_taint
        self.taint_count = taint_count
        self.taint_any = np.asarray(taint_count).any(axis=1).astype(np.uint8)
        self.c_aff = c_aff
        self.aff_score = aff_score
        self.aff_any = (np.asarray(aff_score) != 0).any(axis=1).astype(np.uint8)
        self.x_raw = tables.x_raw
        self.c_x = tables.c_x
        self.x_w = tables.x_w
        self.x_rev = tables.x_rev
        self.nx = tables.c_x.shape[1]
        if self.nx > KS_EXTRA:
            raise ValueError(f"{self.nx} extra score channels, the kernel takes {KS_EXTRA}")
        self.c_xvary = (np.asarray(tables.c_x) >= 0).any(axis=1).astype(np.uint8) \
            if self.nx else np.zeros(max(1, self.nclasses), dtype=np.uint8)
        self.c_port_conf_off = c_port_conf_off
        self.c_port_conf = c_port_conf
        self.c_port_own_off = c_port_own_off
        self.c_port_own = c_port_own
        self.c_k_off = c_k_off
        self.k_key = k_key
        self.k_hard = k_hard
        self.k_skew = k_skew
        self.k_min_domains = k_min_domains
        self.k_self = k_self
        self.k_counter = k_counter
        self.k_elig = k_elig
        self.k_host = k_host
        self.elig = elig
        self.counters = counters
        self.ctr_total = np.asarray(counters, dtype=np.int64).sum(axis=1)
        self.c_inc_off = c_inc_off
        self.c_inc = c_inc
        self.c_a_off = c_a_off
        self.a_kind = a_kind
        self.a_key = a_key
        self.a_counter = a_counter
        self.a_weight = a_weight
        self.c_a_self = c_a_self
        self.c_mode = c_mode
        self.c_spread_all = c_spread_all
        self.c_score_error = c_score_error
        most = max(1, int(np.max(np.diff(c_a_off)))) if len(c_a_off) > 1 else 1
        self.acount = np.zeros((most, self.dcount.shape[1]), dtype=np.int64)
        self.t_owner = -1  # class ids and the log start anew
        self.t_synced = 0
        self.npods = p_class.shape[0]
        self.p_class = p_class
        self.p_gang_min = p_gang_min
        self.p_gang_last = p_gang_last
        self.p_nominated = p_nominated
        self.c_left = np.bincount(np.asarray(p_class), minlength=self.nclasses).astype(np.int64)
        self.out_node = out_node
        self.out_score = out_score
        self.out_reasons = out_reasons
        self.out_rolled = out_rolled
        self.out_error = out_error
        self.out_ties = out_ties
        nslots = max(1, nslots)
        self.nslots = nslots
        self.slot_class = np.full(nslots, -1, dtype=np.int32)
        self.slot_used = np.full(nslots, -1, dtype=np.int64)
        self.slot_synced = np.zeros(nslots, dtype=np.int32)
        self.class_slot = np.full(self.nclasses, -1, dtype=np.int32)
        self.s_feas = np.zeros((nslots, self.rows), dtype=np.uint8)
        self.s_local = np.zeros((nslots, self.rows), dtype=np.int64)
        # A slot's tree and position -> row map are set on its first use in the chunk
        # (_slot_ready), not here: a burst's classes come one after the other, so most
        # chunks use one or two of their slots, and filling every slot's tree afresh per
        # chunk page-faulted tens of MiB at 50,000 nodes. The arrays stay with the kernel
        # for the next chunk when they are large enough.
        if self.s_tree is None or self.s_tree.shape[0] < nslots:
            self.s_tree = np.empty((nslots, 4 * self.leaves), dtype=np.int64)
            self.s_iperm = np.empty((nslots, self.leaves), dtype=np.int32)
        self.s_ready = np.zeros(nslots, dtype=np.uint8)
        self.s_order = np.zeros((nslots, 6), dtype=np.int64)  # the tables' ids are the chunk's
        self.s_max_taint = np.zeros(nslots, dtype=np.int64)
        self.s_max_aff = np.zeros(nslots, dtype=np.int64)
        self.s_xmax = np.zeros((nslots, max(1, self.nx)), dtype=np.int64)
        self.s_perm = np.zeros((nslots, self.rows), dtype=np.int32)
        self.s_gstart = np.zeros((nslots, MAX_ZONES + 2), dtype=np.int32)
        self.s_zc = np.zeros((nslots, MAX_ZONES + 1), dtype=np.int64)
        self.s_fz = np.zeros((nslots, MAX_ZONES + 1), dtype=np.int64)
        host_zone = bool((np.asarray(c_mode) == 3).any())
        self.s_h = np.zeros((nslots if host_zone else 1, self.leaves), dtype=np.int32)
        # a row's count of matching pods is at most its count now plus the chunk's pods
        most_counted = int(np.max(counters)) if host_zone and np.size(counters) else 0
        self.hz_count = np.zeros(most_counted + self.npods + 2 if host_zone else 1, dtype=np.int64)
        self.s_grouped = np.zeros(nslots, dtype=np.uint8)
        grouped = bool((np.asarray(c_mode) == 2).any())
        self.s_special = np.zeros((nslots if grouped else 1, self.rows), dtype=np.uint8)
        self.s_spec = np.zeros((nslots if grouped else 1, self.rows), dtype=np.int32)
        self.s_nspec = np.zeros(nslots, dtype=np.int64)
        self.s_rowgrp = np.zeros((nslots if grouped else 1, self.rows), dtype=np.uint8)
        self.s_ng = np.zeros(nslots, dtype=np.int64)
        self.s_ggs = np.zeros((nslots, MAX_GROUPS + 1), dtype=np.int32)
        self.s_gfz = np.zeros((nslots, MAX_GROUPS), dtype=np.int64)
        self.s_gzone = np.zeros((nslots, MAX_GROUPS), dtype=np.int32)
        self.s_gtv = np.zeros((nslots, MAX_GROUPS), dtype=np.int64)
        self.s_gav = np.zeros((nslots, MAX_GROUPS), dtype=np.int64)
        # kept for the next chunk when large enough (fresh pages cost their first touch)
        if grouped and (self.o_rowgrp is None or self.o_rowgrp.shape[1] < self.rows):
            self.o_sig = np.zeros((ORDERS, 6), dtype=np.int64)
            self.o_rowgrp = np.empty((ORDERS, self.rows), dtype=np.uint8)
            self.o_perm = np.empty((ORDERS, self.rows), dtype=np.int32)
            self.o_iperm = np.empty((ORDERS, self.rows), dtype=np.int32)
            self.o_ng = np.zeros(ORDERS, dtype=np.int64)
            self.o_ggs = np.empty((ORDERS, MAX_GROUPS + 1), dtype=np.int32)
            self.o_gzone = np.empty((ORDERS, MAX_GROUPS), dtype=np.int32)
            self.o_gtv = np.empty((ORDERS, MAX_GROUPS), dtype=np.int64)
            self.o_gav = np.empty((ORDERS, MAX_GROUPS), dtype=np.int64)
        self.o_n = 0  # the tables' ids are the chunk's
        self.o_next = 0
        self.log_row = np.zeros(2 * self.npods + 1, dtype=np.int32)
        self.log_class = np.zeros(2 * self.npods + 1, dtype=np.int32)
        self.log_sign = np.zeros(2 * self.npods + 1, dtype=np.int32)
        self.log_len = 0

    def run(self):
        """Place the loaded chunk; the GIL is released for the whole burst."""
        self.rng = self.ties[0]
        with nogil:
            self._run()
        self.ties[0] = self.rng

    # ------------------------------------------------------------------ per node terms
    cdef inline bint _fits(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil:
        """NodeResourcesFit + NodePorts filter of class c on row n."""
        return self._fits_fast(c, n, &self.c_req[c, 0], &self.c_fit_cols[self.c_fit_off[c]],
                               self.c_fit_off[c + 1] - self.c_fit_off[c] if self.fit_on else 0)

    cdef int64_t _resource_score(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil:
        """NodeResourcesFit's score (its scoring strategy) of class c on row n, 0..100."""
        cdef Py_ssize_t i, col
        cdef int64_t alloc, used, pod, s, total = 0, weights = 0, w
        for i in range(self.sc_cols.shape[0]):
            col = self.sc_cols[i]
            if col < 0:
                continue
            pod = self.c_req[c, col]
            if col < 2:
                pod = self.c_nz[c, col]
                used = self.nzreq[n, col] + pod
            else:
                if pod == 0 and self.col_scalar[col]:
                    continue
                used = self.req[n, col] + pod
            alloc = self.alloc[n, col]
            if alloc == 0:
                continue
            w = self.sc_weight[i]
            if self.strategy == 0:
                s = 0 if used > alloc else (alloc - used) * MAX_SCORE // alloc
            elif self.strategy == 1:
                s = MAX_SCORE if used > alloc else used * MAX_SCORE // alloc
            else:
                if used > alloc:
                    s = _broken_linear(self.shape_util, self.shape_score, 100)
                else:
                    s = _broken_linear(self.shape_util, self.shape_score, used * 100 // alloc)
                if s <= 0:
                    continue
            total += s * w
            weights += w
        if weights == 0:
            return 0
        if self.strategy == 2:
            return <int64_t>c_round(<double>total / <double>weights)
        return total // weights

    cdef int64_t _balanced_score(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil:
        """NodeResourcesBalancedAllocation of class c on row n, 0..100 (0 for best-effort pods)."""
        cdef Py_ssize_t i, col, k = 0
        cdef int64_t alloc, pod
        cdef bint any_request = False
        cdef double f, total = 0.0, mean, acc, std = 0.0
        cdef double fr[16]
        for i in range(self.bal_cols.shape[0]):
            col = self.bal_cols[i]
            if col >= 0 and self.c_req[c, col] > 0:
                any_request = True
        if not any_request:
            return 0
        for i in range(self.bal_cols.shape[0]):
            col = self.bal_cols[i]
            if col < 0:
                continue
            pod = self.c_req[c, col]
            if pod == 0 and self.col_scalar[col]:
                continue
            alloc = self.alloc[n, col]
            if alloc == 0:
                continue
            f = <double>(self.req[n, col] + pod) / <double>alloc
            if f > 1.0:
                f = 1.0
            total += f
            if k < 16:
                fr[k] = f
                k += 1
        if k == 2:
            std = fabs((fr[0] - fr[1]) / 2.0)
        elif k > 2:
            mean = total / <double>k
            acc = 0.0
            for i in range(k):
                acc = acc + (fr[i] - mean) * (fr[i] - mean)
            std = sqrt(acc / <double>k)
        return <int64_t>((1.0 - std) * <double>MAX_SCORE)

    cdef inline int64_t _local_default(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil:
        """_local for the default scores (LeastAllocated and BalancedAllocation on cpu and
        memory), without the general loops."""
        return self._local_fast(c, n, &self.c_req[c, 0], &self.c_nz[c, 0],
                                &self.fixed[self.c_fixed[c], 0])

    cdef inline bint _fits_fast(self, Py_ssize_t c, Py_ssize_t n, const quantity_t* creq,
                                const int32_t* fcols, Py_ssize_t nfc) noexcept nogil:
        """_fits with the class's request row and fit columns given (a per-pod scan looks
        them up once); node rows through raw pointers."""
        cdef const quantity_t* a = self.p_alloc + n * self.nres
        cdef const quantity_t* r = self.p_req + n * self.nres
        cdef Py_ssize_t k, col
        for k in range(nfc):
            col = fcols[k]
            if r[col] + creq[col] > a[col]:
                return False
        if self.ports_on and self.c_port_conf_off[c + 1] > self.c_port_conf_off[c]:
            for k in range(self.c_port_conf_off[c], self.c_port_conf_off[c + 1]):
                if self.port_use[self.c_port_conf[k], n] > 0:
                    return False
        return True

    cdef inline int64_t _local_fast(self, Py_ssize_t c, Py_ssize_t n, const quantity_t* creq,
                                    const quantity_t* cnz, const int32_t* fixed) noexcept nogil:
        """_local with the class's rows given, node rows through raw pointers: the default
        scores' arithmetic; any other profile takes _local."""
        if not self.default_scores:
            return self._local(c, n)
        cdef const quantity_t* a = self.p_alloc + n * self.nres
        cdef const quantity_t* r = self.p_req + n * self.nres
        cdef const quantity_t* z = self.p_nz + 2 * n
        cdef int64_t s = fixed[n], a0 = a[0], a1 = a[1], used, s0 = 0, s1 = 0, total = 0
        cdef int64_t weights = 0
        cdef double f0, f1, std = 0.0
        if self.w_fit:
            if a0 != 0:
                used = z[0] + cnz[0]
                s0 = 0 if used > a0 else _floor_div((a0 - used) * MAX_SCORE, a0)
            if a1 != 0:
                used = z[1] + cnz[1]
                s1 = 0 if used > a1 else _floor_div((a1 - used) * MAX_SCORE, a1)
            if a0 != 0 and a1 != 0 and self.even_weights:
                s += self.w_fit * ((s0 + s1) >> 1)
            else:
                if a0 != 0:
                    total += s0 * self.sc_weight[0]
                    weights += self.sc_weight[0]
                if a1 != 0:
                    total += s1 * self.sc_weight[1]
                    weights += self.sc_weight[1]
                if weights:
                    s += self.w_fit * (total // weights)
        if self.w_bal and (creq[0] > 0 or creq[1] > 0):
            if a0 != 0 and a1 != 0:
                f0 = <double>(r[0] + creq[0]) / <double>a0
                f1 = <double>(r[1] + creq[1]) / <double>a1
                if f0 > 1.0:
                    f0 = 1.0
                if f1 > 1.0:
                    f1 = 1.0
                std = fabs((f0 - f1) / 2.0)
            s += self.w_bal * <int64_t>((1.0 - std) * <double>MAX_SCORE)
        return s

    cdef inline bint _vector(self) noexcept nogil:
        """Whether _scan computes the local scores in its vectorised blocks (the default
        scores with equal weights)."""
        return self.default_scores and self.even_weights

    cdef Py_ssize_t _scan(self, Py_ssize_t c, bint hard_keys, bint whole, bint soft_empty,
                          bint track_taints, bint track_aff, int64_t* mt, int64_t* ma,
                          int64_t* hi, int64_t* lo) noexcept nogil:
        """The first pass of a class's only pod (_scan.h's ks_single_scan): frows[:k] =
        the rows of its static row that pass NodeResourcesFit, NodePorts and (hard_keys)
        have its hard spread constraints' keys, ascending; returns k.

        With whole (no further filter to apply) it also computes the rows' local scores
        (rawloc, by position), the maxima mt / ma and, with soft_empty, the raw spread
        scores and their range hi / lo, as _finish would (over the rows a host port of the
        class leaves). Without whole, returns -k - 1 and the caller calls _finish on the
        rows it keeps; their local scores are already in rawloc when _vector() (the caller
        keeps them in step as it narrows frows)."""
        cdef ks_single q
        cdef const quantity_t* creq = &self.c_req[c, 0]
        cdef const quantity_t* cnz = &self.c_nz[c, 0]
        cdef Py_ssize_t i, n, k, nf
        cdef bint ports = self.ports_on and self._ports_taken(c)
        cdef bint vector = self._vector()
        cdef int32_t wit[KS_TWIN_GROUPS]
        cdef uint8_t gfit[KS_TWIN_GROUPS]
        cdef uint8_t gredo[KS_TWIN_GROUPS]
        cdef int64_t gloc[KS_TWIN_GROUPS]
        cdef Py_ssize_t g
        if self.p_alloc == NULL:
            return 0
        self._query(c, &q)
        if hard_keys:
            q.nhk = self._key_rows(c, True)
            q.hkeys = self.kdom
        q.rows = &self.frows[0]
        if vector:  # the local scores, whole or not: the block's operands are at hand
            q.fixed = &self.fixed[self.c_fixed[c], 0]
            q.w_fit = self.w_fit
            q.w_bal = self.w_bal if (creq[0] > 0 or creq[1] > 0) else 0
            q.loc = &self.rawloc[0]
            q.redo = &self.redo[0]
        if whole:
            if track_taints and not ports:  # with ports: over the rows they keep (_finish)
                q.taints = &self.taint_count[self.c_taint[c], 0]
            if track_aff and not ports:
                q.aff = &self.aff_score[self.c_aff[c], 0]
            if soft_empty and not ports:
                q.nsk = self._key_rows(c, False)
                q.skeys = self.kdom + self.kmax
                q.skews = self.kskew + self.kmax
                q.require_all = self.c_spread_all[c]
                q.rawsp = &self.rawsp[0]
                q.hi = hi[0]
                q.lo = lo[0]
        if _twin_scan and self.tw.ngroups > 0:
            for g in range(self.tw.ngroups):
                wit[g] = ks_twin_witness(&self.tw, g) if self.tw.count[g] > 0 else -1
            ks_twin_terms(&q, wit, self.tw.ngroups, gfit, gloc, gredo)
            q.tgroup = self.tw.group
            q.tin = self.tw.all_in
            q.gfit = gfit
            q.gloc = gloc
            q.gredo = gredo
        nf = ks_single_scan(&q)
        self.twin_scanned += q.twinned
        if ports:  # the rows a port of the class is taken on drop out (with their scores)
            k = 0
            for i in range(nf):
                n = self.frows[i]
                if not self._port_clash(c, n):
                    self.frows[k] = <int32_t>n
                    if q.loc != NULL:
                        self.rawloc[k] = self.rawloc[i]
                        self.redo[k] = self.redo[i]
                    k += 1
            nf = k
        if vector:
            for i in range(nf):
                if self.redo[i]:
                    self.rawloc[i] = self._local_fast(c, self.frows[i], creq, cnz, q.fixed)
        if not whole:
            return -nf - 1
        if not vector:
            self._local_rows(c, nf)
        if ports:
            self._finish(c, nf, False, soft_empty, track_taints, track_aff, mt, ma, hi, lo)
            return nf
        mt[0] = q.mt
        ma[0] = q.ma
        if soft_empty:
            hi[0] = q.hi
            lo[0] = q.lo
        return nf

    cdef void _query(self, Py_ssize_t c, ks_single* q) noexcept nogil:
        """q's rows, state and class c's requests and checked fit columns (the filter part
        of ks_single_scan's query, which ks_fits reads too); the rest zeroed."""
        cdef const quantity_t* creq = &self.c_req[c, 0]
        cdef const quantity_t* cnz = &self.c_nz[c, 0]
        cdef const int32_t* fcols = &self.c_fit_cols[self.c_fit_off[c]]
        cdef Py_ssize_t nfc = self.c_fit_off[c + 1] - self.c_fit_off[c] if self.fit_on else 0
        cdef Py_ssize_t k, col
        memset(q, 0, sizeof(ks_single))
        q.srows = &self.static_rows[self.static_off[self.c_static[c]]]
        q.ns = self.static_off[self.c_static[c] + 1] - self.static_off[self.c_static[c]]
        q.hot = self.hot
        q.podfree = &self.podfree[0]
        q.alloc = self.p_alloc
        q.req = self.p_req
        q.nres = self.nres
        q.creq = creq
        q.req_cpu = creq[0]
        q.req_mem = creq[1]
        q.req_pods = creq[POD_COLUMN] if self.nres > POD_COLUMN else 0
        q.nz_cpu = cnz[0]
        q.nz_mem = cnz[1]
        q.xcols = &self.xcols[0]
        for k in range(nfc):
            col = fcols[k]
            if col == 0:
                q.chk_cpu = 1
            elif col == 1:
                q.chk_mem = 1
            elif col == POD_COLUMN:
                q.chk_pods = 1
            else:
                self.xcols[q.nx] = <int32_t>col
                q.nx += 1

    def _chunk_bits(self, Py_ssize_t nstatic, Py_ssize_t nfixed, Py_ssize_t ntaint):
        """The chunk's bitsets of static row sets and of the values of fixed-score and
        taint-count rows (_static_bits, _value_bits: built on first use), kept from the
        chunk before when large enough (only the rows built are touched)."""
        cdef Py_ssize_t words = self.tw.words
        if self.st_bits is None or self.st_bits.shape[0] < nstatic:
            self.st_bits = np.empty((max(1, nstatic), words), dtype=np.uint64)
        self.st_built = np.zeros(max(1, nstatic), dtype=np.uint8)
        if self.fx_bits is None or self.fx_bits.shape[0] < nfixed:
            self.fx_bits = np.empty((max(1, nfixed), KS_VALUES * words), dtype=np.uint64)
            self.fx_vals = np.empty((max(1, nfixed), KS_VALUES), dtype=np.int64)
        self.fx_nv = np.full(max(1, nfixed), -2, dtype=np.int64)
        if self.tc_bits is None or self.tc_bits.shape[0] < ntaint:
            self.tc_bits = np.empty((max(1, ntaint), KS_VALUES * words), dtype=np.uint64)
            self.tc_vals = np.empty((max(1, ntaint), KS_VALUES), dtype=np.int64)
        self.tc_nv = np.full(max(1, ntaint), -2, dtype=np.int64)

    cdef const uint64_t* _static_bits(self, Py_ssize_t st) noexcept nogil:
        """Static row set st as a bitset over the rows (built on first use in the chunk),
        NULL when it holds every row."""
        cdef Py_ssize_t i
        cdef int32_t n
        cdef uint64_t* bits
        if self.static_off[st + 1] - self.static_off[st] == self.rows:
            return NULL
        bits = &self.st_bits[st, 0]
        if not self.st_built[st]:
            memset(bits, 0, self.tw.words * sizeof(uint64_t))
            for i in range(self.static_off[st], self.static_off[st + 1]):
                n = self.static_rows[i]
                bits[n >> 6] |= (<uint64_t>1) << (n & 63)
            self.st_built[st] = 1
        return bits

    cdef int64_t _value_bits(self, bint fixed, Py_ssize_t f) noexcept nogil:
        """The distinct values of fixed-score row f (fixed) or taint-count row f, with a
        bitset per value (ks_value_bits; fx_* / tc_*), built on first use in the chunk:
        their count (1: every row holds one value, the bitsets unused), -1 past
        KS_VALUES."""
        if fixed:
            if self.fx_nv[f] == -2:
                self.fx_nv[f] = ks_value_bits(&self.fixed[f, 0], 4, self.rows, self.tw.words,
                                              &self.fx_vals[f, 0], &self.fx_bits[f, 0])
            return self.fx_nv[f]
        if self.tc_nv[f] == -2:
            self.tc_nv[f] = ks_value_bits(&self.taint_count[f, 0], 2, self.rows, self.tw.words,
                                          &self.tc_vals[f, 0], &self.tc_bits[f, 0])
        return self.tc_nv[f]

    cdef void _twins_build(self) noexcept nogil:
        """The twin groups (ks_twins_build) of the rows as they are now, their rows taken
        out of the levels' cells; none when twins are off (set_bounded_search)."""
        cdef Py_ssize_t n
        self.tw.ngroups = 0
        if _twin_min == 0 or ks_twins_build(&self.tw, self.p_alloc, self.p_req, self.p_nz,
                                            self.nres, self.rows, max(2, _twin_min)) != 0:
            self.tw.ngroups = 0
            for n in range(self.rows):
                self.tw.group[n] = -1
            return
        self.twin_groups = self.tw.ngroups
        for n in range(self.rows):
            if self.tw.group[n] >= 0:
                ks_levels_unlink(&self.levels, <int32_t>n)

    cdef void _twin_move(self, Py_ssize_t n) noexcept nogil:
        """Row n of a twin group changed its requests: it leaves the group's bitset for
        the levels' cells when its state is no longer the group's, comes back when it is
        again (an undone placement), else moves between cells."""
        cdef bint now = ks_twin_same(&self.tw, self.tw.group[n], &self.req[n, 0],
                                     &self.nzreq[n, 0])
        cdef bint was = ks_twin_has(&self.tw, <int32_t>n)
        if was and not now:
            ks_twin_set(&self.tw, <int32_t>n, 0)
            ks_levels_add(&self.levels, self.hot, <int32_t>n)
        elif now and not was:
            ks_levels_unlink(&self.levels, <int32_t>n)
            ks_twin_set(&self.tw, <int32_t>n, 1)
        elif not now:
            ks_levels_move(&self.levels, self.hot, <int32_t>n)

    cdef const int32_t* _taint_rows(self, Py_ssize_t t, Py_ssize_t* count) noexcept nogil:
        """The rows of taint-count row t (taint_count) above 0, ascending, in count: a row
        of tlist built on first use in the chunk; NULL when the chunk's SMASKS rows are
        taken."""
        cdef Py_ssize_t n, k = 0, m = self.tlist_of[t]
        if m < 0:
            if self.tlist_used == SMASKS:
                return NULL
            m = self.tlist_used
            self.tlist_used += 1
            self.tlist_of[t] = <int32_t>m
            for n in range(self.rows):
                if self.taint_count[t, n] > 0:
                    self.tlist[m, k] = <int32_t>n
                    k += 1
            self.tlist_n[m] = k
        count[0] = self.tlist_n[m]
        return &self.tlist[m, 0]

    cdef int64_t _fixed_max(self, Py_ssize_t f) noexcept nogil:
        """The largest fixed score of fixed-score row f over every row (at least 0),
        computed once a chunk."""
        cdef Py_ssize_t n
        cdef int64_t m = 0
        if self.fixed_max[f] < 0:
            for n in range(self.rows):
                m = self.fixed[f, n] if self.fixed[f, n] > m else m
            self.fixed_max[f] = m
        return self.fixed_max[f]

    cdef Py_ssize_t _single_bounded(self, Py_ssize_t c, const uint64_t* member, bint taints,
                                    int64_t* score, int64_t* ties) noexcept nogil:
        """What _place_single's scan chooses for class c's only pod (c_mode 0, the default
        scores with equal weights, no normalised term other than TaintToleration's that
        varies over the rows, no host port taken; member: its static row set as a bitset,
        NULL for every row), without visiting every row.

        First the twin groups (_twins.h): the rows still in a group's state share the
        pod's local score but for their fixed score, and its verdict, so per group and per
        (fixed score, PreferNoSchedule count) value of the class's tables the rows of one
        total are an AND of bitsets; taken best total first, the first such set that is
        not empty gives the best total over the twins, and the sets of that total its
        tied rows (their count by popcount, none visited).

        Then the other rows, cell by cell (ks_levels: per shape, its levels from the top,
        the shape whose next cell has the highest bound first), stopping when no cell left
        has a bound (the largest fixed score + w_fit * ks_cell_fit + w_bal * 100 + w_taint
        * 100, TaintToleration's most) as high as the best total found: no row there can
        reach it. Every row holding the best total is visited or counted (a cell whose
        bound equals it is searched), so the tied rows are the scan's; the draw indexes
        them in row order (ks_union_select), as the scan's does (ks_pick_tied).

        Visiting a row costs about three times what the scan pays for it (a list walk
        instead of a vectorised pass), so before visiting the cell that would take it
        past rows / _share rows (16) the search gives up: without twin groups it returns
        -2 for the caller to scan (it has drawn nothing yet, so the scan draws as it
        would have); with them, past 4 / _share of the rows in no group, it scans those
        rows instead of the cells (_untwinned_scan), the twins' sets kept. It returns
        -2 too when a table row has more than KS_VALUES values, when more than TIED_SETS
        twin sets tie, or when the chunk has no tlist row left.

        With ``taints`` (untolerated PreferNoSchedule taints on some rows) a row's
        TaintToleration score is normalised by the largest count over the feasible rows,
        found first among the rows that have one (_taint_rows), as the scan's maximum."""
        cdef ks_single q
        cdef const quantity_t* creq = &self.c_req[c, 0]
        cdef const quantity_t* cnz = &self.c_nz[c, 0]
        cdef const int32_t* fixed = &self.fixed[self.c_fixed[c], 0]
        cdef int64_t wb = self.w_bal if (creq[0] > 0 or creq[1] > 0) else 0
        # TaintToleration's score at most 100 (every row's when mt is 0), the balanced too
        cdef int64_t base = self._fixed_max(self.c_fixed[c]) + self.w_taint * MAX_SCORE \
            + wb * MAX_SCORE
        cdef int64_t flat = self.w_taint * MAX_SCORE
        cdef int64_t best = NEG, cnt = 0, t, top, cell
        cdef int64_t seen = 0, limit = self.rows // _share
        cdef Py_ssize_t k, i, j, sh, pick, n
        cdef int32_t* rows = &self.frows[0]
        cdef int64_t level[KS_SHAPES]   # per shape: its next level to visit (-1: done)
        cdef int64_t bound[KS_SHAPES]   # per shape: the bound of that level's cell
        cdef int64_t mt = 0
        cdef int64_t tsc[TAINT_TABLE]
        cdef bint ttab = False
        cdef const int16_t* tcount = &self.taint_count[self.c_taint[c], 0]
        cdef const int32_t* tlist = NULL
        cdef Py_ssize_t nt = 0
        # the twins: per (group, fixed value, count value) set, its total and code
        cdef int64_t nfv = 1, ntv = 1, nset = 0, ntied = 0, twin = 0, g, loc, words
        cdef int64_t fv0 = 0, tv0 = 0
        cdef const int64_t* fvals = &fv0
        cdef const int64_t* tvals = &tv0
        cdef const uint64_t* fbits = NULL
        cdef const uint64_t* tbits = NULL
        cdef int64_t stot[KS_TWIN_GROUPS * KS_VALUES * KS_VALUES]
        cdef int32_t scode[KS_TWIN_GROUPS * KS_VALUES * KS_VALUES]
        cdef const uint64_t* ta[TIED_SETS]
        cdef const uint64_t* tf[TIED_SETS]
        cdef const uint64_t* tt[TIED_SETS]
        cdef int32_t w1
        cdef uint8_t redo1
        cdef int64_t tbest, tsets, tcnt, nl = self.rows
        cdef int32_t gw[KS_TWIN_GROUPS]   # per group: a row still in it that fits, or -1
        cdef const uint64_t* tpos[KS_VALUES]
        cdef int64_t npos = 0
        if taints:
            tlist = self._taint_rows(self.c_taint[c], &nt)
            if tlist == NULL:
                return -2
        if not self.lv_built:
            ks_levels_build(&self.levels, self.hot, self.rows)
            self.lv_built = True
        if not self.tw_built and self.bounded_pods >= _twin_after:
            self._twins_build()  # from the state now: every group's rows are in its state
            self.tw_built = True
        words = self.tw.words
        if self.tw.ngroups:
            nfv = self._value_bits(True, self.c_fixed[c])
            if nfv < 0:
                return -2
            if nfv > 1:
                fvals = &self.fx_vals[self.c_fixed[c], 0]
                fbits = &self.fx_bits[self.c_fixed[c], 0]
            else:
                fv0 = fixed[0] if self.rows else 0
            if taints:
                ntv = self._value_bits(False, self.c_taint[c])
                if ntv < 0:
                    return -2
                if ntv > 1:
                    tvals = &self.tc_vals[self.c_taint[c], 0]
                    tbits = &self.tc_bits[self.c_taint[c], 0]
                else:
                    tv0 = tcount[0] if self.rows else 0
        self._query(c, &q)
        for g in range(self.tw.ngroups):  # the groups the pod fits, by a row of each
            nl -= self.tw.count[g]
            gw[g] = -1
            if self.tw.count[g] > 0:
                w1 = ks_twin_witness(&self.tw, g)
                if ks_fits(&q, w1):
                    gw[g] = w1
        if taints and tbits != NULL:
            # the scan's maximum from the sets of each count in the groups that fit, and
            # the rows outside the groups that have a count
            for j in range(ntv):
                if tvals[j] > 0:
                    tpos[npos] = tbits + j * words
                    npos += 1
                    for g in range(self.tw.ngroups):
                        if gw[g] >= 0 and tvals[j] > mt and ks_any3(
                                &self.tw.inb[g * words], member, tbits + j * words,
                                self.tw.hint[g], words):
                            mt = tvals[j]
            mt = ks_untwinned_max16(&self.tw, member, tpos, npos, tcount, &q, mt)
            ttab = _taint_table(tsc, self.w_taint, mt)
        elif taints:  # the scan's maximum: over the feasible rows, those with a count
            for i in range(nt):
                n = tlist[i]
                if tcount[n] > mt and (member == NULL or (member[n >> 6] >> (n & 63)) & 1) \
                        and ks_fits(&q, <int32_t>n):
                    mt = tcount[n]
            ttab = _taint_table(tsc, self.w_taint, mt)
        self.bounded_pods += 1
        for g in range(self.tw.ngroups):
            if gw[g] < 0:
                continue
            w1 = gw[g]
            ks_local_rows(&w1, 1, self.hot, fixed, cnz[0], cnz[1], creq[0], creq[1],
                          self.w_fit, wb, &loc, &redo1)
            if redo1:
                loc = self._local_fast(c, w1, creq, cnz, fixed)
            loc -= fixed[w1]
            for i in range(nfv):
                for j in range(ntv):
                    if taints and tvals[j] > mt:
                        continue  # no feasible row has more than mt: the set is empty
                    t = loc + fvals[i]
                    if not taints or mt == 0:
                        t += flat
                    elif ttab:
                        t += tsc[tvals[j]]
                    else:
                        t += self.w_taint * (MAX_SCORE - MAX_SCORE * tvals[j] // mt)
                    stot[nset] = t
                    scode[nset] = <int32_t>((g * KS_VALUES + i) * KS_VALUES + j)
                    nset += 1
        while True:  # the sets best total first, up to the first that holds a row
            pick = -1
            for k in range(nset):
                if scode[k] >= 0 and (pick < 0 or stot[k] > stot[pick]):
                    pick = k
            if pick < 0 or stot[pick] < best:
                break
            g = scode[pick] // (KS_VALUES * KS_VALUES)
            i = (scode[pick] // KS_VALUES) % KS_VALUES
            j = scode[pick] % KS_VALUES
            scode[pick] = -1
            t = ks_count4(&self.tw.inb[g * words], member,
                          fbits + i * words if fbits != NULL else NULL,
                          tbits + j * words if tbits != NULL else NULL, self.tw.hint[g], words)
            if t == 0:
                continue
            if ntied == TIED_SETS:
                return -2  # nothing drawn yet
            best = stot[pick]
            ta[ntied] = &self.tw.inb[g * words]
            tf[ntied] = fbits + i * words if fbits != NULL else NULL
            tt[ntied] = tbits + j * words if tbits != NULL else NULL
            ntied += 1
            twin += t
        tbest, tsets, tcnt = best, ntied, twin
        for sh in range(KS_SHAPES):
            level[sh] = KS_LEVELS - 1 if sh < self.levels.nshapes or sh == KS_SHAPES - 1 \
                else -1
            bound[sh] = base + self.w_fit * ks_cell_fit(&self.levels, sh, level[sh], cnz[0],
                                                        cnz[1]) if level[sh] >= 0 else NEG
        if self.tw.ngroups:
            # the alternative to the cells: a scan of the nl other rows, chosen at once
            # when the cells bounded as high as the twins' best (all the walk could visit)
            # hold more than 4 / _share of them
            limit = nl * 4 // _share
            for sh in range(KS_SHAPES):
                i = level[sh]
                while i >= 0 and seen <= limit and base + self.w_fit * ks_cell_fit(
                        &self.levels, sh, i, cnz[0], cnz[1]) >= best:
                    seen += self.lv_count[sh * KS_LEVELS + i]
                    i -= 1
            if seen > limit:
                self._untwinned_scan(c, member, mt, ttab, tsc, &best, &cnt, &ntied, &twin)
                for sh in range(KS_SHAPES):
                    level[sh] = -1  # no cell left to visit
            seen = 0
        while True:
            pick = -1
            top = NEG
            for sh in range(KS_SHAPES):
                if level[sh] >= 0 and bound[sh] > top:
                    top = bound[sh]
                    pick = sh
            if pick < 0 or top < best:
                break
            cell = pick * KS_LEVELS + level[pick]
            seen += self.lv_count[cell]
            if seen > limit and not self.tw.ngroups:
                self.bounded_gaveup += 1
                return -2
            if seen > limit:  # scan the rows in no group instead, the twins' sets kept
                best, ntied, twin, cnt = tbest, tsets, tcnt, 0
                self._untwinned_scan(c, member, mt, ttab, tsc, &best, &cnt, &ntied, &twin)
                break
            k = ks_cell_rows(&self.levels, cell, member, &q, rows, &self.bounded_rows)
            level[pick] -= 1
            if level[pick] >= 0:
                bound[pick] = base + self.w_fit * ks_cell_fit(&self.levels, pick, level[pick],
                                                              cnz[0], cnz[1])
            if k == 0:
                continue
            ks_local_rows(rows, k, self.hot, fixed, cnz[0], cnz[1], creq[0], creq[1],
                          self.w_fit, wb, &self.rawloc[0], &self.redo[0])
            for i in range(k):
                t = self._local_fast(c, rows[i], creq, cnz, fixed) if self.redo[i] \
                    else self.rawloc[i]
                if mt == 0:
                    t += flat
                elif ttab:
                    t += tsc[tcount[rows[i]]]
                else:
                    t += self.w_taint * (MAX_SCORE - MAX_SCORE * tcount[rows[i]] // mt)
                if t > best:
                    best = t
                    cnt = 0
                    ntied = 0  # the twins' sets fall behind
                    twin = 0
                if t == best:
                    self.tiebuf[cnt] = rows[i]
                    cnt += 1
        score[0] = best
        ties[0] = cnt + twin
        self.twin_ties += twin
        if cnt + twin == 0:
            return -1
        if cnt > 1:
            qsort(&self.tiebuf[0], cnt, sizeof(int32_t), _cmp_row)
        if ntied == 0:
            return ks_pick_tied(&self.tiebuf[0], cnt, &self.rng)
        return ks_union_select(ta, member, tf, tt, ntied, &self.tiebuf[0], cnt, words,
                               ks_below(&self.rng, cnt + twin) if cnt + twin > 1 else 0)

    cdef void _untwinned_scan(self, Py_ssize_t c, const uint64_t* member, int64_t mt,
                              bint ttab, const int64_t* tsc, int64_t* best, int64_t* cnt,
                              int64_t* ntied, int64_t* twin) noexcept nogil:
        """_single_bounded's other way to the rows outside the twin groups: the vectorised
        scan (ks_single_scan) over those of the static set (ks_untwinned), each row's
        total compared with the best so far (the twins'), the tied rows into tiebuf; a
        better row drops the twins' sets (ntied, twin)."""
        cdef ks_single q
        cdef const quantity_t* creq = &self.c_req[c, 0]
        cdef const quantity_t* cnz = &self.c_nz[c, 0]
        cdef const int16_t* tcount = &self.taint_count[self.c_taint[c], 0]
        cdef Py_ssize_t i, nf
        cdef int64_t t, flat = self.w_taint * MAX_SCORE
        self.twin_scans += 1
        self._query(c, &q)
        q.srows = &self.tw_list[0]
        q.ns = ks_untwinned(&self.tw, member, self.rows, &self.tw_list[0])
        q.rows = &self.frows[0]
        q.fixed = &self.fixed[self.c_fixed[c], 0]
        q.w_fit = self.w_fit
        q.w_bal = self.w_bal if (creq[0] > 0 or creq[1] > 0) else 0
        q.loc = &self.rawloc[0]
        q.redo = &self.redo[0]
        nf = ks_single_scan(&q)
        for i in range(nf):
            t = self._local_fast(c, self.frows[i], creq, cnz, q.fixed) if self.redo[i] \
                else self.rawloc[i]
            if mt == 0:
                t += flat
            elif ttab:
                t += tsc[tcount[self.frows[i]]]
            else:
                t += self.w_taint * (MAX_SCORE - MAX_SCORE * tcount[self.frows[i]] // mt)
            if t > best[0]:
                best[0] = t
                cnt[0] = 0
                ntied[0] = 0
                twin[0] = 0
            if t == best[0]:
                self.tiebuf[cnt[0]] = self.frows[i]
                cnt[0] += 1

    cdef void _finish(self, Py_ssize_t c, Py_ssize_t nf, bint local, bint soft_empty,
                      bint track_taints, bint track_aff, int64_t* mt, int64_t* ma,
                      int64_t* hi, int64_t* lo) noexcept nogil:
        """What _scan(whole) computes, for the rows frows[:nf] a caller narrowed: the local
        scores (with local), the maxima and the empty-count spread raw scores."""
        if local:
            self._local_rows(c, nf)
        if track_taints:
            mt[0] = ks_max16(&self.frows[0], nf, &self.taint_count[self.c_taint[c], 0])
        if track_aff:
            ma[0] = ks_max32(&self.frows[0], nf, &self.aff_score[self.c_aff[c], 0])
        if soft_empty:
            ks_soft_empty(&self.frows[0], nf, self.kdom + self.kmax, self.kskew + self.kmax,
                          self._key_rows(c, False), self.c_spread_all[c], &self.rawsp[0], hi, lo)

    cdef inline bint _ports_taken(self, Py_ssize_t c) noexcept nogil:
        """Whether some row has a host port that clashes with class c taken (port_rows)."""
        cdef Py_ssize_t k
        for k in range(self.c_port_conf_off[c], self.c_port_conf_off[c + 1]):
            if self.port_rows[self.c_port_conf[k]] > 0:
                return True
        return False

    cdef inline bint _port_clash(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil:
        """Whether a host port of class c is taken on row n (NodePorts)."""
        cdef Py_ssize_t k
        for k in range(self.c_port_conf_off[c], self.c_port_conf_off[c + 1]):
            if self.port_use[self.c_port_conf[k], n] > 0:
                return True
        return False

    cdef void _local_rows(self, Py_ssize_t c, Py_ssize_t nf) noexcept nogil:
        """rawloc[i] = the local score (_local) of class c on row frows[i], for i < nf.

        With the default scores and equal weights, the vectorised loop of _scan.h computes
        them (and flags the few rows whose exact value needs the divisions); other rows and
        profiles take _local_fast / _local."""
        cdef const int32_t* rows = &self.frows[0]
        cdef int64_t* out = &self.rawloc[0]
        cdef const quantity_t* creq = &self.c_req[c, 0]
        cdef const quantity_t* cnz = &self.c_nz[c, 0]
        cdef const int32_t* fixed = &self.fixed[self.c_fixed[c], 0]
        cdef Py_ssize_t i
        if nf == 0:
            return
        if not self.default_scores or not self.even_weights or self.nres < 2:
            for i in range(nf):
                out[i] = self._local(c, rows[i])
            return
        ks_local_rows(rows, nf, self.hot, fixed, cnz[0], cnz[1], creq[0], creq[1], self.w_fit,
                      self.w_bal if (creq[0] > 0 or creq[1] > 0) else 0, out, &self.redo[0])
        for i in range(nf):
            if self.redo[i]:
                out[i] = self._local_fast(c, rows[i], creq, cnz, fixed)

    cdef inline int64_t _local(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil:
        if self.default_scores:
            return self._local_default(c, n)
        cdef int64_t s = self.fixed[self.c_fixed[c], n]
        if self.w_fit:
            s += self.w_fit * self._resource_score(c, n)
        if self.w_bal:
            s += self.w_bal * self._balanced_score(c, n)
        return s

    cdef inline int64_t _total(self, Py_ssize_t s, Py_ssize_t c, Py_ssize_t n) noexcept nogil:
        """The weighted total of class c (cached in slot s) on a feasible row n."""
        cdef int64_t t = self.s_local[s, n], mx
        if self.w_taint:
            mx = self.s_max_taint[s]
            if mx == 0:
                t += self.w_taint * MAX_SCORE
            else:
                t += self.w_taint * (MAX_SCORE - MAX_SCORE * self.taint_count[self.c_taint[c], n] // mx)
        if self.w_aff:
            mx = self.s_max_aff[s]
            if mx > 0:
                t += self.w_aff * (MAX_SCORE * self.aff_score[self.c_aff[c], n] // mx)
        cdef Py_ssize_t k
        cdef int32_t r
        if self.c_xvary[c]:
            for k in range(self.nx):
                r = self.c_x[c, k]
                if r >= 0:
                    t += self.x_w[k] * ks_norm(self.x_raw[r, n], self.s_xmax[s, k],
                                               self.x_rev[k])
        return t

    # -------------------------------------------------------------------- the max-tree
    # (node i: the maximum below it at s_tree[s, 2i], how many leaves hold it at [2i + 1];
    # the loops are _scan.h's)
    cdef void _tree_set(self, Py_ssize_t s, Py_ssize_t n, int64_t v) noexcept nogil:
        ks_tree_set(&self.s_tree[s, 0], self.leaves, n, v)

    cdef void _tree_build(self, Py_ssize_t s) noexcept nogil:
        ks_tree_build(&self.s_tree[s, 0], self.leaves, self.rows)

    cdef int64_t _tree_range(self, Py_ssize_t s, Py_ssize_t lo, Py_ssize_t hi,
                             int64_t* count) noexcept nogil:
        """The largest total among tree positions [lo, hi) (NEG for none) and, in count,
        how many positions hold it."""
        cdef const int64_t* t = &self.s_tree[s, 0]
        cdef int64_t best = NEG, k = 0, v
        cdef Py_ssize_t l = lo + self.leaves, r = hi + self.leaves
        while l < r:
            if l & 1:
                v = t[2 * l]
                if v > best:
                    best = v
                    k = t[2 * l + 1]
                elif v == best:
                    k += t[2 * l + 1]
                l += 1
            if r & 1:
                r -= 1
                v = t[2 * r]
                if v > best:
                    best = v
                    k = t[2 * r + 1]
                elif v == best:
                    k += t[2 * r + 1]
            l >>= 1
            r >>= 1
        count[0] = k
        return best

    cdef int64_t _tree_max(self, Py_ssize_t s, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
        """The largest total among tree positions [lo, hi) (NEG for none), without
        _tree_range's count."""
        cdef const int64_t* t = &self.s_tree[s, 0]
        cdef int64_t best = NEG
        cdef Py_ssize_t l = lo + self.leaves, r = hi + self.leaves
        while l < r:
            if l & 1:
                best = t[2 * l] if t[2 * l] > best else best
                l += 1
            if r & 1:
                r -= 1
                best = t[2 * r] if t[2 * r] > best else best
            l >>= 1
            r >>= 1
        return best

    cdef Py_ssize_t _tree_pick(self, Py_ssize_t s, Py_ssize_t lo, Py_ssize_t hi,
                               int64_t target, int64_t k) noexcept nogil:
        """The k-th (from 0, left to right) of the tree positions in [lo, hi) holding
        target, the range's largest total (_tree_range counts them): the range's canonical
        nodes in order, then a descent by the children's counts."""
        cdef const int64_t* t = &self.s_tree[s, 0]
        cdef Py_ssize_t l = lo + self.leaves, r = hi + self.leaves, nl = 0, nr = 0, j, i = 0
        cdef Py_ssize_t nodes[128]
        while l < r:
            if l & 1:
                nodes[nl] = l
                nl += 1
                l += 1
            if r & 1:
                r -= 1
                nodes[64 + nr] = r
                nr += 1
            l >>= 1
            r >>= 1
        for j in range(nl + nr):  # the left nodes in order, then the right ones reversed
            i = nodes[j] if j < nl else nodes[64 + nr - 1 - (j - nl)]
            if t[2 * i] == target:
                if k < t[2 * i + 1]:
                    break
                k -= t[2 * i + 1]
        while i < self.leaves:
            i *= 2
            if t[2 * i] == target:
                if k < t[2 * i + 1]:
                    continue
                k -= t[2 * i + 1]
            i += 1
        return i - self.leaves

    cdef Py_ssize_t _tree_first(self, Py_ssize_t s, Py_ssize_t lo, int64_t target) noexcept nogil:
        """The first row >= lo whose total is >= target, or -1."""
        cdef const int64_t* t = &self.s_tree[s, 0]
        cdef Py_ssize_t i = lo + self.leaves
        if lo >= self.leaves:
            return -1
        while t[2 * i] < target:
            while i & 1:
                i >>= 1
                if i <= 1:
                    return -1
            i += 1
        while i < self.leaves:
            i = 2 * i if t[4 * i] >= target else 2 * i + 1
        return i - self.leaves

    # ------------------------------------------------------------------- class caches
    cdef bint _maxima(self, Py_ssize_t s, Py_ssize_t c) noexcept nogil:
        """Recompute the normalisation maxima over feasible rows; True if they changed."""
        cdef Py_ssize_t n
        cdef int64_t mt = 0, ma = 0, v
        cdef const int16_t[::1] taints = self.taint_count[self.c_taint[c]]
        cdef const int32_t[::1] aff = self.aff_score[self.c_aff[c]]
        cdef bint changed = False
        cdef Py_ssize_t k
        cdef int32_t r
        if self.c_xvary[c]:
            for k in range(self.nx):
                r = self.c_x[c, k]
                v = 0
                if r >= 0:
                    for n in range(self.rows):
                        if self.s_feas[s, n] and self.x_raw[r, n] > v:
                            v = self.x_raw[r, n]
                if v != self.s_xmax[s, k]:
                    self.s_xmax[s, k] = v
                    changed = True
        if self.w_taint == 0 and self.w_aff == 0:
            return changed
        for n in range(self.rows):
            if self.s_feas[s, n]:
                v = taints[n]
                if v > mt:
                    mt = v
                v = aff[n]
                if v > ma:
                    ma = v
        if mt == self.s_max_taint[s] and ma == self.s_max_aff[s]:
            return changed
        self.s_max_taint[s] = mt
        self.s_max_aff[s] = ma
        return True

    cdef const ks_extra* _extra(self, Py_ssize_t c, Py_ssize_t nf) noexcept nogil:
        """The extra score channels that vary for class c, with their maxima over the
        feasible rows frows[:nf] (in xq); NULL when none varies."""
        cdef Py_ssize_t k
        cdef int32_t r
        cdef int64_t m = 0
        if not self.c_xvary[c]:
            return NULL
        for k in range(self.nx):
            r = self.c_x[c, k]
            if r >= 0:
                self.xq.raw[m] = &self.x_raw[r, 0]
                self.xq.w[m] = self.x_w[k]
                self.xq.rev[m] = self.x_rev[k]
                self.xq.max[m] = ks_max32(&self.frows[0], nf, self.xq.raw[m])
                m += 1
        self.xq.n = m
        return &self.xq

    cdef void _refresh_totals(self, Py_ssize_t s, Py_ssize_t c) noexcept nogil:
        """Every row's total into slot s's tree leaves (NEG where infeasible), then the
        tree. Without extra channels, _total's terms with the slot's maxima and the class's
        table rows read once, not per row."""
        cdef Py_ssize_t n
        cdef int64_t* leaf = &self.s_tree[s, 2 * self.leaves]
        cdef const int32_t* perm = &self.s_perm[s, 0]
        cdef const uint8_t* feas = &self.s_feas[s, 0]
        cdef const int64_t* loc = &self.s_local[s, 0]
        cdef const int16_t* taints = &self.taint_count[self.c_taint[c], 0]
        cdef const int32_t* aff = &self.aff_score[self.c_aff[c], 0]
        cdef int64_t mt = self.s_max_taint[s], ma = self.s_max_aff[s], t
        cdef int64_t wt = self.w_taint, wa = self.w_aff if self.s_max_aff[s] > 0 else 0
        if self.c_xvary[c]:
            for n in range(self.rows):
                leaf[2 * perm[n]] = self._total(s, c, n) if feas[n] else NEG
        else:
            for n in range(self.rows):
                if not feas[n]:
                    leaf[2 * perm[n]] = NEG
                    continue
                t = loc[n]
                if wt:
                    t += wt * MAX_SCORE if mt == 0 else \
                        wt * (MAX_SCORE - MAX_SCORE * taints[n] // mt)
                if wa:
                    t += wa * (MAX_SCORE * aff[n] // ma)
                leaf[2 * perm[n]] = t
        self._tree_build(s)

    cdef void _rebuild(self, Py_ssize_t s, Py_ssize_t c) noexcept nogil:
        """Fill slot s for class c afresh: feasibility and local scores (the rows of its
        static filters that fit, in _scan's vectorised pass), then its tree."""
        cdef Py_ssize_t n, i, nf
        cdef int64_t mt = 0, ma = 0, hi = 0, lo = -1
        nf = self._scan(c, False, True, False, False, False, &mt, &ma, &hi, &lo)
        if nf < 0:  # a host port narrowed the rows: their local scores are still to compute
            nf = -nf - 1
            self._local_rows(c, nf)
        # s_local is left as it was on the rows that are not feasible: every reader
        # (_total, _refresh_totals, the leaves of _group_layout and _group_row, the rows
        # ks_best_row and _place_grouped take) reads it only where s_feas is set
        if self.rows > 0:
            memset(&self.s_feas[s, 0], 0, self.rows * sizeof(uint8_t))
        for i in range(nf):
            n = self.frows[i]
            self.s_feas[s, n] = 1
            self.s_local[s, n] = self.rawloc[i]
        self.slot_synced[s] = self.log_len
        self.s_grouped[s] = 0
        if self._domain(c):
            # spread / inter-pod classes pick their node by group (_place_grouped) or in
            # passes per pod (_place_spread)
            if self._group_key(c) >= -1:
                self._group_layout(s, c)
            return
        if self.c_mode[c] == 1:
            self.s_order[s, 0] = 0  # the zone layouts set (and move) positions their own way
            self._zone_layout(s, c)
        elif self.c_mode[c] == 3:
            self.s_order[s, 0] = 0
            self._host_zone_layout(s, c)
        elif self.s_order[s, 0] != 1:  # the slot's positions are not the rows' already
            for n in range(self.rows):
                self.s_perm[s, n] = <int32_t>n
                self.s_iperm[s, n] = <int32_t>n
            self.s_order[s, 0] = 1
        self.s_max_taint[s] = -1  # force the maxima to count as changed
        for i in range(self.nx):
            self.s_xmax[s, i] = -1
        self._maxima(s, c)
        self._refresh_totals(s, c)

    cdef void _sync(self, Py_ssize_t s, Py_ssize_t c) noexcept nogil:
        """Bring slot s up to date with the rows changed since it was last used."""
        cdef Py_ssize_t i, n, k, g, d, c2
        cdef uint8_t f, flipped = 0
        cdef const uint8_t[::1] static = self.static_reason[self.c_static[c]]
        cdef Py_ssize_t start = self.slot_synced[s]
        cdef bint host_zone = self.c_mode[c] == 3
        cdef bint zone = self.c_mode[c] == 1 or host_zone
        cdef Py_ssize_t j = self.c_k_off[c], jh = 0, key
        cdef bint raised
        if host_zone:
            self._host_zone_rows(c, &jh, &j)
        key = self.k_key[j] if zone else 0
        if self.log_len - start > self.rows // 4:
            self._rebuild(s, c)
            return
        if self.s_grouped[s]:
            for i in range(start, self.log_len):
                self._group_row(s, c, self.log_row[i])
            self.slot_synced[s] = self.log_len
            return
        for i in range(start, self.log_len):
            n = self.log_row[i]
            f = static[n] == 0 and self._fits(c, n)
            if f != self.s_feas[s, n]:
                flipped = 1
                if zone:
                    d = self.dom[key, n]
                    g = d if d >= 0 else self.ndom[key]
                    self.s_fz[s, g] += 1 if f else -1
            if zone:
                raised = False
                c2 = self.log_class[i]
                for k in range(self.c_inc_off[c2], self.c_inc_off[c2 + 1]):
                    if self.c_inc[k] == self.k_counter[j]:
                        raised = True
                if raised:
                    d = self.dom[key, n]
                    if d >= 0 and self.elig[self.k_elig[j], n]:
                        self.s_zc[s, d] += self.log_sign[i]
                    if host_zone:
                        self._host_move(s, c, n, self.log_sign[i])
            self.s_feas[s, n] = f
            self.s_local[s, n] = self._local(c, n) if f else 0
        self.slot_synced[s] = self.log_len
        if self._domain(c):
            return
        if flipped and self._maxima(s, c):
            self._refresh_totals(s, c)
            return
        for i in range(start, self.log_len):
            n = self.log_row[i]
            self._tree_set(s, self.s_perm[s, n], self._total(s, c, n) if self.s_feas[s, n] else NEG)

    cdef void _slot_ready(self, Py_ssize_t s) noexcept nogil:
        """Slot s's first use in the chunk: every tree node (NEG, 1 leaf) and no row at
        any position, as a fresh slot starts (only the positions below rows are set by
        the layouts; the padding above keeps these values)."""
        cdef Py_ssize_t i
        cdef int64_t* t = &self.s_tree[s, 0]
        cdef int32_t* ip = &self.s_iperm[s, 0]
        for i in range(2 * self.leaves):
            t[2 * i] = NEG
            t[2 * i + 1] = 1
        for i in range(self.leaves):
            ip[i] = -1
        self.s_ready[s] = 1

    cdef Py_ssize_t _slot(self, Py_ssize_t c, Py_ssize_t p) noexcept nogil:
        """The slot caching class c, taking if needed the most recently used one of a class
        with no pod left in the chunk (its memory is warm), else the least recently used."""
        cdef Py_ssize_t s = self.class_slot[c], i, done = -1
        if s >= 0:
            self._sync(s, c)
        else:
            s = 0
            for i in range(self.nslots):
                if self.slot_used[i] < self.slot_used[s]:
                    s = i
                if self.slot_class[i] >= 0 and self.c_left[self.slot_class[i]] == 0 and \
                        (done < 0 or self.slot_used[i] > self.slot_used[done]):
                    done = i
            if done >= 0:
                s = done
            if self.slot_class[s] >= 0:
                self.class_slot[self.slot_class[s]] = -1
            self.slot_class[s] = c
            self.class_slot[c] = s
            if not self.s_ready[s]:
                self._slot_ready(s)
            self._rebuild(s, c)
        self.slot_used[s] = p
        return s

    # -------------------------------------------------------------- placing and undoing
    cdef void _apply(self, Py_ssize_t c, Py_ssize_t n, int sign) noexcept nogil:
        cdef Py_ssize_t r, k
        for r in range(self.nres):
            self.req[n, r] += sign * self.c_req[c, r]
        self.nzreq[n, 0] += sign * self.c_nz_add[c, 0]
        self.nzreq[n, 1] += sign * self.c_nz_add[c, 1]
        if self.nres >= 2:  # hot and podfree follow req and nzreq
            self.hot[n].r0 = self.req[n, 0]
            self.hot[n].r1 = self.req[n, 1]
            self.hot[n].z0 = self.nzreq[n, 0]
            self.hot[n].z1 = self.nzreq[n, 1]
            if self.lv_built:
                if self.tw.group[n] >= 0:
                    self._twin_move(n)
                else:
                    ks_levels_move(&self.levels, self.hot, <int32_t>n)
            if self.nres > POD_COLUMN:
                self.podfree[n] = self.alloc[n, POD_COLUMN] - self.req[n, POD_COLUMN]
        for k in range(self.c_port_own_off[c], self.c_port_own_off[c + 1]):
            self.port_use[self.c_port_own[k], n] += sign
            if self.port_use[self.c_port_own[k], n] == (1 if sign > 0 else 0):
                self.port_rows[self.c_port_own[k]] += sign  # the row took / freed the port
        for k in range(self.c_inc_off[c], self.c_inc_off[c + 1]):
            self.counters[self.c_inc[k], n] += sign
            self.ctr_total[self.c_inc[k]] += sign
        self.log_row[self.log_len] = <int32_t>n
        self.log_class[self.log_len] = <int32_t>c
        self.log_sign[self.log_len] = sign
        self.log_len += 1

    cdef void _prepare_filters(self, Py_ssize_t c, bint* spread, bint* ipa) noexcept nogil:
        """Whether class c has hard spread constraints / inter-pod terms to filter with,
        their per-domain counts prepared (_spread_prepare, _ipa_prepare)."""
        spread[0] = self.spread_on and self.c_k_off[c + 1] > self.c_k_off[c]
        ipa[0] = self.ipa_on and self.c_a_off[c + 1] > self.c_a_off[c]
        if spread[0]:
            self._spread_prepare(c)
        if ipa[0]:
            self._ipa_prepare(c)

    cdef bint _count_ports_fit(self, Py_ssize_t p, Py_ssize_t c, Py_ssize_t n) noexcept nogil:
        """Count NodePorts' or NodeResourcesFit's rejection of row n for pod p, if any."""
        cdef Py_ssize_t k, r
        cdef bint port_clash, misfit
        if self.ports_on:
            port_clash = False
            for k in range(self.c_port_conf_off[c], self.c_port_conf_off[c + 1]):
                if self.port_use[self.c_port_conf[k], n] > 0:
                    port_clash = True
            if port_clash:
                self.out_reasons[p, R_PORTS] += 1
                return True
        if self.fit_on:
            misfit = False
            for k in range(self.c_fit_off[c], self.c_fit_off[c + 1]):
                r = self.c_fit_cols[k]  # the columns the class requests and Fit checks
                if self.req[n, r] + self.c_req[c, r] > self.alloc[n, r]:
                    self.out_reasons[p, R_FIXED + r] += 1
                    misfit = True
            if misfit:
                return True
        return False

    cdef void _diagnose(self, Py_ssize_t p, Py_ssize_t c) noexcept nogil:
        """Count, per reason, the rows that reject pod p (first failing filter per row).

        The static filters' rejections are counted once per static row of the chunk
        (static_counts); the rows passing them are checked one by one. A row failing with
        a late code (a plugin filter after NodePorts and NodeResourcesFit, such as the
        volume filters) counts under those two first when they reject it too."""
        cdef Py_ssize_t n, r, i, st = self.c_static[c]
        cdef const uint8_t[::1] static = self.static_reason[st]
        cdef uint8_t code, late = 0
        cdef bint spread, ipa
        if not self.static_done[st]:
            for n in range(self.rows):
                code = static[n]
                if code and code != R_ABSENT:
                    if self.late_code[code]:
                        late = 1
                    else:
                        self.static_counts[st, code] += 1
            self.static_done[st] = 1 + late
        for r in range(self.static_counts.shape[1]):
            self.out_reasons[p, r] += self.static_counts[st, r]
        if self.static_done[st] == 2:
            for n in range(self.rows):
                code = static[n]
                if code and code != R_ABSENT and self.late_code[code]:
                    if not self._count_ports_fit(p, c, n):
                        self.out_reasons[p, code] += 1
        self._prepare_filters(c, &spread, &ipa)
        if _twin_scan and self.tw.ngroups > 0 and self.fit_on and \
                not (self.ports_on and self._ports_taken(c)):
            self._diagnose_twins(p, c, spread, ipa)
            return
        for i in range(self.static_off[st], self.static_off[st + 1]):
            self._diagnose_row(p, c, self.static_rows[i], spread, ipa)

    cdef inline void _diagnose_row(self, Py_ssize_t p, Py_ssize_t c, Py_ssize_t n, bint spread,
                                   bint ipa) noexcept nogil:
        """_diagnose's count of the first filter after the static ones rejecting row n."""
        cdef uint8_t code
        if self._count_ports_fit(p, c, n):
            return
        if spread:
            code = self._spread_reason(c, n)
            if code:
                self.out_reasons[p, code] += 1
                return
        if ipa:
            code = self._ipa_reason(c, n)
            if code:
                self.out_reasons[p, code] += 1

    cdef void _diagnose_twins(self, Py_ssize_t p, Py_ssize_t c, bint spread,
                              bint ipa) noexcept nogil:
        """_diagnose's rows of the static set by twin group (no host port of the class taken
        anywhere, so NodePorts passes every row): the rows still in a group the pod does not
        fit are rejected by NodeResourcesFit on the group's columns, counted per column by
        popcount (static set AND group) without a visit; the other rows one by one, in the
        bitsets' order (ascending, as the static set lists them)."""
        cdef Py_ssize_t g, k, r, w, words = self.tw.words, n
        cdef int64_t count
        cdef const uint64_t* static = self._static_bits(self.c_static[c])
        cdef int32_t wit
        cdef bint misfit
        cdef uint64_t x
        cdef uint64_t last = ~(<uint64_t>0) if self.rows % 64 == 0 else \
            ((<uint64_t>1) << (self.rows % 64)) - 1
        cdef uint64_t full[KS_TWIN_GROUPS]  # per group: 1 when the pod misfits it (skipped)
        for g in range(self.tw.ngroups):
            full[g] = 0
            if self.tw.count[g] == 0:
                continue
            wit = ks_twin_witness(&self.tw, g)
            misfit = False
            for k in range(self.c_fit_off[c], self.c_fit_off[c + 1]):
                r = self.c_fit_cols[k]
                if self.req[wit, r] + self.c_req[c, r] > self.alloc[wit, r]:
                    misfit = True
            if not misfit:
                continue
            full[g] = 1
            count = ks_count4(&self.tw.inb[g * words], static, NULL, NULL, self.tw.hint[g], words)
            for k in range(self.c_fit_off[c], self.c_fit_off[c + 1]):
                r = self.c_fit_cols[k]
                if self.req[wit, r] + self.c_req[c, r] > self.alloc[wit, r]:
                    self.out_reasons[p, R_FIXED + r] += count
        for w in range(words):
            x = static[w] if static != NULL else (last if w == words - 1 else ~(<uint64_t>0))
            for g in range(self.tw.ngroups):
                if full[g]:
                    x &= ~self.tw.inb[g * words + w]
            while x:
                n = (w << 6) + ks_ctz64(x)
                x &= x - 1
                self._diagnose_row(p, c, n, spread, ipa)

    cdef Py_ssize_t _count_feasible(self, Py_ssize_t c, Py_ssize_t limit) noexcept nogil:
        """How many rows pass every filter for class c, counting up to limit."""
        cdef Py_ssize_t i, n, count = 0
        cdef bint spread, ipa
        self._prepare_filters(c, &spread, &ipa)
        for i in range(self.static_off[self.c_static[c]], self.static_off[self.c_static[c] + 1]):
            n = self.static_rows[i]
            if not self._fits(c, n) or self._narrowed(c, n, spread, False, ipa):
                continue
            count += 1
            if count >= limit:
                break
        return count

    cdef bint _nominated_fits(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil:
        """Whether row n passes every filter for class c (its pod's nominated node)."""
        cdef bint spread, ipa
        if self.static_reason[self.c_static[c], n] != 0 or not self._fits(c, n):
            return False
        self._prepare_filters(c, &spread, &ipa)
        return not self._narrowed(c, n, spread, False, ipa)

    cdef void _run(self) noexcept nogil:
        cdef Py_ssize_t p, c, s, n, q, pos, run_start = 0, placed = 0
        cdef int64_t best, ties
        for p in range(self.npods):
            c = self.p_class[p]
            if p == 0 or self.p_gang_min[p] == 0 or self.p_gang_min[p - 1] == 0 \
                    or self.p_gang_last[p - 1]:
                run_start = p
                placed = 0
            self.c_left[c] -= 1
            ties = 1
            if self.p_nominated[p] >= 0 and self._nominated_fits(c, self.p_nominated[p]):
                # kube-scheduler tries a pod's nominated node first and takes it, unscored,
                # when it passes every filter (the room its preemption freed).
                s = -1
                n = self.p_nominated[p]
                best = 0
            elif self.c_score_error[c] and self._count_feasible(c, 2) >= 2:
                # A PreScore plugin fails the attempt with an error, and kube-scheduler runs
                # PreScore only when more than one node is feasible.
                self.out_error[p] = 1
                s = -1
                n = -1
            elif self.c_left[c] == 0 and self.class_slot[c] < 0:
                # The class's only pod in the chunk: fused passes, no cache to build.
                s = -1
                if self._domain(c) or self.c_mode[c] == 3:
                    n = self._place_spread(-1, c, &best, &ties)
                else:
                    n = self._place_single(c, &best, &ties)
            else:
                s = self._slot(c, p)
                if self._domain(c):
                    n = self._place_spread(s, c, &best, &ties)
                elif self.c_mode[c] == 1:
                    n = self._place_zone(s, c, &best, &ties)
                elif self.c_mode[c] == 3:
                    n = self._place_host_zone(s, c, &best, &ties)
                else:
                    best = self.s_tree[s, 2]  # the root's maximum
                    n = -1
                    if best >= 0:
                        ties = self.s_tree[s, 3]
                        # positions are rows outside the zone fast path
                        n = self._tree_pick(s, 0, self.leaves, best,
                                            ks_below(&self.rng, ties) if ties > 1 else 0)
            if n < 0:
                self.out_node[p] = -1
                if not self.out_error[p]:
                    self._diagnose(p, c)
            else:
                self.out_node[p] = <node_t>n
                self.out_score[p] = best
                self.out_ties[p] = <int32_t>ties
                self._apply(c, n, 1)
                placed += 1
            if self.p_gang_min[p] > 0 and self.p_gang_last[p] and placed < self.p_gang_min[p]:
                for q in range(run_start, p + 1):
                    if self.out_node[q] >= 0:
                        self._apply(self.p_class[q], self.out_node[q], -1)
                        self.out_rolled[q] = self.out_node[q]
                        self.out_node[q] = -1

    # ------------------------------------------------------------ PodTopologySpread
    cdef void _spread_prepare(self, Py_ssize_t c) noexcept nogil:
        """Per hard constraint: matching pods per domain (dcount, kept by _topo_sync) and
        the smallest domain count (dmin; 0 with fewer present domains than minDomains).

        Only nodes that have every hard constraint's key count, each constraint also
        requiring its inclusion policies (elig)."""
        cdef Py_ssize_t j, j0 = self.c_k_off[c]
        self._topo_sync(c)
        for j in range(j0, self.c_k_off[c + 1]):
            if self.k_hard[j]:
                self.dmin[j - j0] = 0 if self.dpresent_n[j - j0] < self.k_min_domains[j] \
                    else self.dlow[j - j0]

    # ------------------------------------------- domain counts kept across a class's pods
    cdef void _topo_full(self, Py_ssize_t c) noexcept nogil:
        """Count what class c's spread constraints and inter-pod terms see per domain
        (dcount, dpresent, dlow, acount, aff_total, score_total) afresh.

        Per term, only the rows its counter counts a pod on add (most rows hold none: the
        pass over a counter's row rarely branches); a hard constraint's present domains
        take one more pass over the rows."""
        cdef Py_ssize_t j, j0 = self.c_k_off[c], j1 = self.c_k_off[c + 1], n, d, key
        cdef Py_ssize_t a0 = self.c_a_off[c], a1 = self.c_a_off[c + 1]
        cdef bint require_all = self.c_spread_all[c], hard
        cdef int32_t q
        cdef int keys
        cdef const int32_t* ctr
        cdef const int32_t* kd
        cdef const uint8_t* el
        for j in range(j0, j1):
            key = self.k_key[j]
            for d in range(self.ndom[key]):
                self.dcount[j - j0, d] = 0
                if self.k_hard[j]:
                    self.dpresent[j - j0, d] = 0
        for j in range(a0, a1):
            for d in range(self.ndom[self.a_key[j]]):
                self.acount[j - a0, d] = 0
        self.aff_total = 0
        self.score_total = 0
        if self.rows == 0:
            self.t_owner = c
            self.t_synced = self.log_len
            return
        for j in range(j0, j1):
            hard = self.k_hard[j]
            if not hard and self.k_host[j]:
                continue  # ks_soft_scores reads a soft hostname constraint's row counts
            kd = &self.dom[self.k_key[j], 0]
            el = &self.elig[self.k_elig[j], 0]
            if hard:  # the domains of the rows with every hard key the constraint keeps
                for n in range(self.rows):
                    d = kd[n]
                    if d >= 0 and el[n] and self._row_keys(c, n) & 1:
                        self.dpresent[j - j0, d] = 1
            if self.ctr_total[self.k_counter[j]] == 0:
                continue
            ctr = &self.counters[self.k_counter[j], 0]
            for n in range(self.rows):
                if ctr[n] == 0:
                    continue
                d = kd[n]
                if d < 0 or not el[n]:
                    continue
                keys = self._row_keys(c, n)
                if hard:
                    if keys & 1:
                        self.dcount[j - j0, d] += ctr[n]
                elif keys & 2 or not require_all:
                    self.dcount[j - j0, d] += ctr[n]
        for j in range(a0, a1):
            if self.ctr_total[self.a_counter[j]] == 0:
                continue
            ctr = &self.counters[self.a_counter[j], 0]
            kd = &self.dom[self.a_key[j], 0]
            for n in range(self.rows):
                q = ctr[n]
                if q == 0:
                    continue
                d = kd[n]
                if d < 0:
                    continue
                self.acount[j - a0, d] += q
                if self.a_kind[j] == 0:
                    self.aff_total += q
                elif self.a_kind[j] == 3:
                    self.score_total += q
        for j in range(j0, j1):
            if self.k_hard[j]:
                self._spread_low(j - j0, self.ndom[self.k_key[j]])
        self.t_owner = c
        self.t_synced = self.log_len

    cdef inline int _row_keys(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil:
        """Whether row n has every key of class c's hard spread constraints (bit 1) and of
        its soft ones (bit 2)."""
        cdef Py_ssize_t j
        cdef int keys = 3
        for j in range(self.c_k_off[c], self.c_k_off[c + 1]):
            if self.dom[self.k_key[j], n] < 0:
                keys &= ~1 if self.k_hard[j] else ~2
        return keys

    cdef void _spread_low(self, Py_ssize_t r, Py_ssize_t ndom) noexcept nogil:
        """Row r of dcount (a hard constraint): its present domains, their smallest count
        (MAX_INT32 with none) and how many domains have it."""
        cdef Py_ssize_t d
        cdef int64_t low = MAX_INT32, at = 0, present = 0
        for d in range(ndom):
            if self.dpresent[r, d]:
                present += 1
                if self.dcount[r, d] < low:
                    low = self.dcount[r, d]
                    at = 0
                if self.dcount[r, d] == low:
                    at += 1
        self.dpresent_n[r] = present
        self.dlow[r] = low
        self.dlow_n[r] = at

    cdef void _topo_row(self, Py_ssize_t c, Py_ssize_t n, Py_ssize_t c2, int sign) noexcept nogil:
        """Follow one placement (sign +1) or rollback (-1) of a pod of class c2 on row n in
        class c's counts, as _topo_full would count them afresh."""
        cdef Py_ssize_t j, j0 = self.c_k_off[c], j1 = self.c_k_off[c + 1], k, d, q
        cdef Py_ssize_t a0 = self.c_a_off[c], a1 = self.c_a_off[c + 1]
        cdef int keys = self._row_keys(c, n)
        cdef bint hard_keys = keys & 1, soft_keys = keys & 2, require_all = self.c_spread_all[c]
        cdef int64_t old
        for k in range(self.c_inc_off[c2], self.c_inc_off[c2 + 1]):
            q = self.c_inc[k]
            for j in range(j0, j1):
                if self.k_counter[j] != q:
                    continue
                d = self.dom[self.k_key[j], n]
                if d < 0 or not self.elig[self.k_elig[j], n]:
                    continue
                if self.k_hard[j]:
                    if not hard_keys:
                        continue
                    old = self.dcount[j - j0, d]
                    self.dcount[j - j0, d] = old + sign
                    if sign > 0 and old == self.dlow[j - j0]:
                        self.dlow_n[j - j0] -= 1
                        if self.dlow_n[j - j0] == 0:  # the last domain at the low rose
                            self._spread_low(j - j0, self.ndom[self.k_key[j]])
                    elif sign < 0 and old + sign < self.dlow[j - j0]:
                        self.dlow[j - j0] = old + sign
                        self.dlow_n[j - j0] = 1
                    elif sign < 0 and old + sign == self.dlow[j - j0]:
                        self.dlow_n[j - j0] += 1
                elif not self.k_host[j] and (soft_keys or not require_all):
                    self.dcount[j - j0, d] += sign
            for j in range(a0, a1):
                if self.a_counter[j] != q:
                    continue
                d = self.dom[self.a_key[j], n]
                if d < 0:
                    continue
                self.acount[j - a0, d] += sign
                if self.a_kind[j] == 0:
                    self.aff_total += sign
                elif self.a_kind[j] == 3:
                    self.score_total += sign

    cdef void _topo_sync(self, Py_ssize_t c) noexcept nogil:
        """Bring class c's domain counts up to date: from the log when they are c's (the
        pods of a class usually come one after the other), else counted afresh."""
        cdef Py_ssize_t i
        if self.t_owner != c or self.log_len - self.t_synced > self.rows // 4:
            self._topo_full(c)
            return
        for i in range(self.t_synced, self.log_len):
            self._topo_row(c, self.log_row[i], self.log_class[i], self.log_sign[i])
        self.t_synced = self.log_len

    cdef inline int _spread_reason(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil:
        """The hard spread verdict on row n (after _spread_prepare): 0 or a reason code."""
        cdef Py_ssize_t j, j0 = self.c_k_off[c], d
        for j in range(j0, self.c_k_off[c + 1]):
            if not self.k_hard[j]:
                continue
            d = self.dom[self.k_key[j], n]
            if d < 0:
                return R_SPREAD_LABEL
            if self.dcount[j - j0, d] + self.k_self[j] - self.dmin[j - j0] > self.k_skew[j]:
                return R_SPREAD
        return 0

    cdef bint _spread_empty(self, Py_ssize_t c, bint hard) noexcept nogil:
        """Whether the class's hard (or soft) constraints count no pod anywhere yet.

        Then every domain count is 0: a hard constraint only asks for its key (a pod that
        matches itself adds 1, never above a maxSkew >= 1), and soft raw scores are just the
        constraints' maxSkew - 1 over the keys the row has."""
        cdef Py_ssize_t j
        for j in range(self.c_k_off[c], self.c_k_off[c + 1]):
            if self.k_hard[j] != hard:
                continue
            if self.ctr_total[self.k_counter[j]] != 0:
                return False
            if hard and self.k_self[j] > self.k_skew[j]:
                return False
        return True

    cdef inline int _spread_keys(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil:
        """_spread_reason when _spread_empty(c, True): only missing keys reject a row."""
        cdef Py_ssize_t j
        for j in range(self.c_k_off[c], self.c_k_off[c + 1]):
            if self.k_hard[j] and self.dom[self.k_key[j], n] < 0:
                return R_SPREAD_LABEL
        return 0

    cdef Py_ssize_t _key_rows(self, Py_ssize_t c, bint hard) noexcept nogil:
        """kdom / kskew = the dom rows and maxSkews of class c's hard spread constraints
        (soft ones: from kdom + kmax / kskew + kmax), for the loops of _scan.h; returns
        how many."""
        cdef Py_ssize_t j, k = 0, base = 0 if hard else self.kmax
        for j in range(self.c_k_off[c], self.c_k_off[c + 1]):
            if self.k_hard[j] == hard:
                self.kdom[base + k] = &self.dom[self.k_key[j], 0]
                self.kskew[base + k] = self.k_skew[j]
                k += 1
        return k

    cdef Py_ssize_t _soft_rows(self, Py_ssize_t c) noexcept nogil:
        """ksoft = class c's soft spread constraints, for ks_soft_scores; returns how many."""
        cdef Py_ssize_t j, j0 = self.c_k_off[c], k = 0
        for j in range(j0, self.c_k_off[c + 1]):
            if self.k_hard[j]:
                continue
            self.ksoft[k].dom = &self.dom[self.k_key[j], 0]
            self.ksoft[k].counter = &self.counters[self.k_counter[j], 0]
            self.ksoft[k].elig = &self.elig[self.k_elig[j], 0]
            self.ksoft[k].skew = self.k_skew[j]
            self.ksoft[k].ndom = self.ndom[self.k_key[j]]
            self.ksoft[k].drow = j - j0
            self.ksoft[k].host = self.k_host[j]
            k += 1
        return k

    cdef inline bint _narrowed(self, Py_ssize_t c, Py_ssize_t n, bint hard, bint hard_empty,
                               bint ipa_filter) noexcept nogil:
        """Whether row n fails class c's hard spread constraints (only their keys when they
        count no pod: hard_empty) or its required inter-pod terms."""
        if hard:
            if hard_empty:
                if self._spread_keys(c, n):
                    return True
            elif self._spread_reason(c, n):
                return True
        return ipa_filter and self._ipa_reason(c, n)

    cdef void _terms(self, Py_ssize_t c, bint* hard, bint* soft, bint* hard_empty,
                     bint* soft_empty, bint* ipa_filter, bint* ipa_score) noexcept nogil:
        """Which of class c's terms filter (hard spread constraints; hard_empty: they count
        no pod yet; required inter-pod terms) and score (soft ones, soft_empty alike;
        scoring inter-pod terms that count a pod), with the counts they read prepared."""
        cdef Py_ssize_t j
        hard[0] = soft[0] = hard_empty[0] = soft_empty[0] = False
        ipa_filter[0] = ipa_score[0] = False
        for j in range(self.c_k_off[c], self.c_k_off[c + 1]):
            if self.k_hard[j]:
                hard[0] = True
            else:
                soft[0] = True
        hard[0] = hard[0] and self.spread_on
        soft[0] = soft[0] and self.w_spread != 0
        if hard[0]:
            hard_empty[0] = self._spread_empty(c, True)
            if not hard_empty[0]:
                self._spread_prepare(c)
        if soft[0]:
            soft_empty[0] = self._spread_empty(c, False)
        if self.c_a_off[c + 1] > self.c_a_off[c]:
            self._ipa_prepare(c)
            for j in range(self.c_a_off[c], self.c_a_off[c + 1]):
                if self.a_kind[j] == 3:
                    ipa_score[0] = True
                else:
                    ipa_filter[0] = True
            ipa_filter[0] = ipa_filter[0] and self.ipa_on
            ipa_score[0] = ipa_score[0] and self.w_ipa != 0 and self.ipa_topology

    cdef Py_ssize_t _place_spread(self, Py_ssize_t s, Py_ssize_t c, int64_t* score,
                                  int64_t* ties) noexcept nogil:
        """Pick the row for a pod with spread constraints, in a few passes over the rows
        (a grouped slot's pods: _place_grouped, without them).

        Hard constraints narrow the slot's feasible rows; soft ones are scored over the
        resulting feasible rows and normalised there, as are TaintToleration and
        NodeAffinity. Returns -1 when no row is feasible. With s = -1 (the class's only pod
        in the chunk) the static filters, fit and local scores are computed in the first
        pass instead of read from a slot, as a fresh slot would hold them."""
        cdef Py_ssize_t j, j0 = self.c_k_off[c], j1 = self.c_k_off[c + 1], n, d, key, i
        cdef Py_ssize_t nf = 0, counted = 0, i1
        if s >= 0 and self.s_grouped[s]:
            self.grouped_pods += 1
            return self._place_grouped(s, c, score, ties)
        cdef int64_t tsc[TAINT_TABLE]
        cdef bint ttab
        cdef bint hard = False, soft = False, all_keys, ipa_filter = False, ipa_score = False
        cdef bint narrow
        cdef int64_t ihi = 0, ilo = 0
        cdef bint ifirst = True
        cdef int64_t mt = 0, ma = 0, v, hi = 0, lo = 0
        cdef double total
        cdef const int16_t[::1] taints = self.taint_count[self.c_taint[c]]
        cdef const int32_t[::1] aff = self.aff_score[self.c_aff[c]]
        cdef double[::1] weights = self.kweight
        cdef uint8_t[::1] missing = self.kmissing
        cdef bint require_all = self.c_spread_all[c]
        cdef bint single = s < 0, hard_empty = False, soft_empty = False
        # maxima of all-zero rows (no PreferNoSchedule taint, no preferred term) stay 0
        cdef bint track_taints = self.w_taint != 0 and self.taint_any[self.c_taint[c]]
        cdef bint track_aff = self.w_aff != 0 and self.aff_any[self.c_aff[c]]
        self._terms(c, &hard, &soft, &hard_empty, &soft_empty, &ipa_filter, &ipa_score)
        if soft:
            hi = 0
            lo = -1
        if single:
            # The rows passing the static filters and fit (and the hard keys when those
            # are all a hard constraint asks); hard constraints that count pods and
            # inter-pod terms narrow them afterwards.
            narrow = ipa_filter or (hard and not hard_empty)
            nf = self._scan(c, hard and hard_empty, not narrow, soft_empty, track_taints,
                            track_aff, &mt, &ma, &hi, &lo)
            if nf < 0:
                nf = -nf - 1
                if narrow:
                    i1 = 0
                    for i in range(nf):
                        n = self.frows[i]
                        if not self._narrowed(c, n, hard, hard_empty, ipa_filter):
                            self.frows[i1] = <int32_t>n
                            self.rawloc[i1] = self.rawloc[i]
                            i1 += 1
                    nf = i1
                self._finish(c, nf, not self._vector(), soft_empty, track_taints, track_aff,
                             &mt, &ma, &hi, &lo)
        else:
            for n in range(self.rows):
                if self.s_feas[s, n] and not self._narrowed(c, n, hard, hard_empty, ipa_filter):
                    self.frows[nf] = <int32_t>n
                    nf += 1
            self._finish(c, nf, False, soft_empty, track_taints, track_aff, &mt, &ma, &hi, &lo)
        if nf == 0:
            return -1
        if soft and not soft_empty:
            for j in range(j0, j1):
                if not self.k_hard[j] and not self.k_host[j]:
                    self._topo_sync(c)  # the zone-like constraints' counts (dcount)
                    break
            ks_soft_scores(&self.frows[0], nf, self.ksoft, self._soft_rows(c),
                           require_all, &self.dcount[0, 0], &self.dpresent[0, 0],
                           self.dcount.shape[1], &self.kweight[0], &self.kmissing[0],
                           &self.rawsp[0], &hi, &lo)
        if ipa_score:
            for i in range(nf):
                n = self.frows[i]
                v = self._ipa_raw(c, n)
                self.rawipa[n] = v
                if ifirst or v > ihi:
                    ihi = v
                if ifirst or v < ilo:
                    ilo = v
                ifirst = False
        # Totals over the feasible rows; ties drawn uniformly.
        ttab = self.w_taint != 0 and _taint_table(tsc, self.w_taint, mt)
        return ks_best_row(&self.frows[0], nf,
                           &self.rawloc[0] if single else &self.s_local[s, 0], single,
                           &taints[0], tsc if ttab else NULL, self.w_taint, mt,
                           &aff[0], self.w_aff, ma,
                           &self.rawsp[0] if soft else NULL, self.w_spread, hi, lo,
                           &self.rawipa[0] if ipa_score else NULL, self.w_ipa, ihi, ilo,
                           self._extra(c, nf), &self.tiebuf[0], &self.rng, score, ties)

    cdef inline int64_t _ipa_raw(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil:
        """InterPodAffinity's raw score of class c on row n: its scoring terms' weights times
        the pods they count in the row's domain (after _ipa_prepare)."""
        cdef Py_ssize_t j, a0 = self.c_a_off[c], d
        cdef int64_t v = 0
        for j in range(a0, self.c_a_off[c + 1]):
            if self.a_kind[j] == 3:
                d = self.dom[self.a_key[j], n]
                if d >= 0:
                    v += self.a_weight[j] * self.acount[j - a0, d]
        return v

    # ------------------------------- spread / inter-pod classes, by group of rows (c_mode 2)
    cdef Py_ssize_t _group_key(self, Py_ssize_t c) noexcept nogil:
        """The one zone-like key (at most MAX_ZONES domains) of class c's terms that are not
        per row, -1 when all are per row, -2 when the class cannot be placed by group.

        A term is per row when it counts the pods of a row's own domain: a soft hostname
        constraint (ks_soft_scores reads the row's counter), a hard one or an inter-pod term
        on a key whose domains hold one row each. A row none of whose per-row terms counts
        a pod then scores and filters as every such row of its zone (_place_grouped)."""
        cdef Py_ssize_t j, key, zkey = -1
        for j in range(self.c_k_off[c], self.c_k_off[c + 1]):
            key = self.k_key[j]
            if self.k_host[j]:
                if self.k_hard[j] and not self.key_unique[key]:
                    return -2
                continue
            if zkey >= 0 and key != zkey:
                return -2
            zkey = key
        for j in range(self.c_a_off[c], self.c_a_off[c + 1]):
            key = self.a_key[j]
            if self.key_unique[key]:
                continue
            if zkey >= 0 and key != zkey:
                return -2
            zkey = key
        if zkey >= 0 and self.ndom[zkey] > MAX_ZONES:
            return -2
        return zkey

    cdef inline bint _special(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil:
        """Whether a per-row term of class c (_group_key) counts a pod on row n."""
        cdef Py_ssize_t j
        for j in range(self.c_k_off[c], self.c_k_off[c + 1]):
            if self.k_host[j] and self.counters[self.k_counter[j], n] != 0:
                return True
        for j in range(self.c_a_off[c], self.c_a_off[c + 1]):
            if self.key_unique[self.a_key[j]] and self.counters[self.a_counter[j], n] != 0:
                return True
        return False

    cdef void _group_layout(self, Py_ssize_t s, Py_ssize_t c) noexcept nogil:
        """Set up slot s of c_mode 2 class c for _place_grouped (s_grouped) when it can be:
        its per-row terms (_group_key) and a zone-like key at most, every row of its static
        filters with every key of its terms, few groups.

        A group is the rows of one zone (rows without the key: one more) with one count of
        untolerated PreferNoSchedule taints and one preferred node affinity score (when
        those are scored and vary): within a group the normalised TaintToleration and
        NodeAffinity scores are one, whatever the maxima over the feasible rows. The tree is
        ordered by group (rows ascending within one) and holds the local scores of the
        feasible rows no per-row term counts a pod on (the rest -1); those special rows are
        listed."""
        cdef Py_ssize_t key = self._group_key(c), n, g, j, i
        cdef bint now
        if key < -1 or self.c_xvary[c] or not self._group_order(
            s,
            c,
            key,
            self.w_taint != 0 and self.taint_any[self.c_taint[c]],
            self.w_aff != 0 and self.aff_any[self.c_aff[c]],
        ):
            return
        for g in range(self.s_ng[s]):
            self.s_gfz[s, g] = 0
        # what _group_row keeps, from _rebuild's s_feas / s_local: the special rows (_special)
        # from the per-row terms' counters, then the groups' counts and the tree
        # a row's s_special is non-zero only while it is listed in s_spec (_mark_special,
        # _group_row and _place_grouped keep it so): clearing the listed rows clears all
        for i in range(self.s_nspec[s]):
            self.s_special[s, self.s_spec[s, i]] = 0
        self.s_nspec[s] = 0
        for j in range(self.c_k_off[c], self.c_k_off[c + 1]):
            if self.k_host[j]:
                self._mark_special(s, self.k_counter[j])
        for j in range(self.c_a_off[c], self.c_a_off[c + 1]):
            if self.key_unique[self.a_key[j]]:
                self._mark_special(s, self.a_counter[j])
        for n in range(self.rows):
            now = self.s_feas[s, n] and not (self.s_special[s, n] & 1)
            if now:
                self.s_gfz[s, self.s_rowgrp[s, n]] += 1
            self.s_tree[s, 2 * (self.s_perm[s, n] + self.leaves)] = \
                self.s_local[s, n] if now else NEG
        self._tree_build(s)
        self.s_grouped[s] = 1

    cdef bint _group_order(self, Py_ssize_t s, Py_ssize_t c, Py_ssize_t key, bint tg,
                           bint ag) noexcept nogil:
        """_group_layout's checks and order of slot s for class c (zone-like key ``key``;
        tg / ag: taint counts / affinity scores split groups); False, the slot untouched,
        when the class cannot be placed by group. Kept as the slot's (s_order) and per
        signature (o_sig): both the checks and the order read only the static tables named
        by the signature, the zone key's domains and the terms' keys' domains (node labels),
        none of which a placement changes within the chunk; tg and ag follow from the taint
        and affinity rows."""
        cdef Py_ssize_t i, j, e = -1, ng
        cdef int64_t keys = 0
        cdef int64_t sig[5]
        cdef bint ok
        for j in range(self.c_k_off[c], self.c_k_off[c + 1]):
            keys = keys | (<int64_t>1 << self.k_key[j]) if 0 <= keys and self.k_key[j] < 62 \
                else -1
        for j in range(self.c_a_off[c], self.c_a_off[c + 1]):
            keys = keys | (<int64_t>1 << self.a_key[j]) if 0 <= keys and self.a_key[j] < 62 \
                else -1
        if keys < 0 or self.o_rowgrp is None or not _order_cache:
            return self._group_order_new(s, c, key, tg, ag)
        sig[0] = key
        sig[1] = self.c_static[c]
        sig[2] = self.c_taint[c]
        sig[3] = self.c_aff[c]
        sig[4] = keys
        if self.s_order[s, 0] == 2 and self.s_order[s, 1] == key \
                and self.s_order[s, 2] == sig[1] and self.s_order[s, 3] == sig[2] \
                and self.s_order[s, 4] == sig[3] and self.s_order[s, 5] == keys:
            self.orders_reused += 1  # the slot holds it already
            return True
        for i in range(self.o_n):
            if self.o_sig[i, 0] == key and self.o_sig[i, 1] == sig[1] \
                    and self.o_sig[i, 2] == sig[2] and self.o_sig[i, 3] == sig[3] \
                    and self.o_sig[i, 4] == keys:
                e = i
                break
        if e >= 0:
            self.orders_copied += 1
            if not self.o_sig[e, 5]:
                return False
            ng = self.o_ng[e]
            self.s_ng[s] = ng
            memcpy(&self.s_ggs[s, 0], &self.o_ggs[e, 0], (ng + 1) * sizeof(int32_t))
            memcpy(&self.s_gzone[s, 0], &self.o_gzone[e, 0], ng * sizeof(int32_t))
            memcpy(&self.s_gtv[s, 0], &self.o_gtv[e, 0], ng * sizeof(int64_t))
            memcpy(&self.s_gav[s, 0], &self.o_gav[e, 0], ng * sizeof(int64_t))
            if self.rows > 0:
                memcpy(&self.s_rowgrp[s, 0], &self.o_rowgrp[e, 0], self.rows * sizeof(uint8_t))
                memcpy(&self.s_perm[s, 0], &self.o_perm[e, 0], self.rows * sizeof(int32_t))
                memcpy(&self.s_iperm[s, 0], &self.o_iperm[e, 0], self.rows * sizeof(int32_t))
            self.s_order[s, 0] = 2
            for i in range(5):
                self.s_order[s, 1 + i] = sig[i]
            return True
        ok = self._group_order_new(s, c, key, tg, ag)
        if self.o_n < ORDERS:
            e = self.o_n
            self.o_n += 1
        else:
            e = self.o_next
            self.o_next = (self.o_next + 1) % ORDERS
        for i in range(5):
            self.o_sig[e, i] = sig[i]
        self.o_sig[e, 5] = ok
        if ok:
            ng = self.s_ng[s]
            self.o_ng[e] = ng
            memcpy(&self.o_ggs[e, 0], &self.s_ggs[s, 0], (ng + 1) * sizeof(int32_t))
            memcpy(&self.o_gzone[e, 0], &self.s_gzone[s, 0], ng * sizeof(int32_t))
            memcpy(&self.o_gtv[e, 0], &self.s_gtv[s, 0], ng * sizeof(int64_t))
            memcpy(&self.o_gav[e, 0], &self.s_gav[s, 0], ng * sizeof(int64_t))
            if self.rows > 0:
                memcpy(&self.o_rowgrp[e, 0], &self.s_rowgrp[s, 0], self.rows * sizeof(uint8_t))
                memcpy(&self.o_perm[e, 0], &self.s_perm[s, 0], self.rows * sizeof(int32_t))
                memcpy(&self.o_iperm[e, 0], &self.s_iperm[s, 0], self.rows * sizeof(int32_t))
        return ok

    cdef bint _group_order_new(self, Py_ssize_t s, Py_ssize_t c, Py_ssize_t key, bint tg,
                               bint ag) noexcept nogil:
        """_group_order computed afresh into slot s (the slot untouched when False)."""
        cdef Py_ssize_t nd, n, d, g, pos, i, j, nt = 1, na = 1
        cdef Py_ssize_t st = self.c_static[c], ti, ai, ng
        cdef const int16_t[::1] taints = self.taint_count[self.c_taint[c]]
        cdef const int32_t[::1] aff = self.aff_score[self.c_aff[c]]
        cdef int64_t tval[TAINT_TABLE]
        cdef int64_t aval[MAX_AFF_VALUES]
        cdef int32_t tidx[TAINT_TABLE]
        # the topology keys the checks below read (every key of the class's terms)
        cdef int64_t keys = 0
        for j in range(self.c_k_off[c], self.c_k_off[c + 1]):
            keys = keys | (<int64_t>1 << self.k_key[j]) if 0 <= keys and self.k_key[j] < 62 \
                else -1
        for j in range(self.c_a_off[c], self.c_a_off[c + 1]):
            keys = keys | (<int64_t>1 << self.a_key[j]) if 0 <= keys and self.a_key[j] < 62 \
                else -1
        if keys >= 0 and self.s_order[s, 0] == 2 and self.s_order[s, 1] == key \
                and self.s_order[s, 2] == st and self.s_order[s, 3] == self.c_taint[c] \
                and self.s_order[s, 4] == self.c_aff[c] and self.s_order[s, 5] == keys:
            # The slot's last layout read the same keys and the same static tables: the
            # same checks, groups and order (none depends on the class's requests or on
            # the counters, and the tables are the chunk's).
            self.orders_reused += 1
            return True
        for i in range(TAINT_TABLE):
            tidx[i] = -1
        nt = 0 if tg else 1
        na = 0 if ag else 1
        tval[0] = 0
        aval[0] = 0
        for i in range(self.static_off[st], self.static_off[st + 1]):
            n = self.static_rows[i]
            for j in range(self.c_k_off[c], self.c_k_off[c + 1]):
                if self.dom[self.k_key[j], n] < 0:
                    return False
            for j in range(self.c_a_off[c], self.c_a_off[c + 1]):
                if self.dom[self.a_key[j], n] < 0:
                    return False
            if tg:
                if taints[n] < 0 or taints[n] >= TAINT_TABLE:
                    return False
                if tidx[taints[n]] < 0:
                    tidx[taints[n]] = 0
                    nt += 1
            if ag:
                for ai in range(na):
                    if aval[ai] == aff[n]:
                        break
                else:
                    if na == MAX_AFF_VALUES:
                        return False
                    aval[na] = aff[n]
                    na += 1
        if tg:  # taint counts in ascending order
            nt = 0
            for i in range(TAINT_TABLE):
                if tidx[i] >= 0:
                    tidx[i] = <int32_t>nt
                    tval[nt] = i
                    nt += 1
            nt = max(nt, 1)
        na = max(na, 1)
        nd = self.ndom[key] if key >= 0 else 0
        ng = (nd + 1) * nt * na
        if ng > MAX_GROUPS:
            return False
        self.s_ng[s] = ng
        for g in range(ng + 1):
            self.s_ggs[s, g] = 0
        for g in range(ng):
            self.s_gzone[s, g] = <int32_t>(g // (nt * na))
            self.s_gtv[s, g] = tval[(g // na) % nt]
            self.s_gav[s, g] = aval[g % na]
        for n in range(self.rows):
            d = self.dom[key, n] if key >= 0 else -1
            ti = 0
            if tg and 0 <= taints[n] < TAINT_TABLE and tidx[taints[n]] >= 0:
                ti = tidx[taints[n]]
            ai = 0
            if ag:
                for j in range(na):
                    if aval[j] == aff[n]:
                        ai = j
                        break
            g = ((d if d >= 0 else nd) * nt + ti) * na + ai
            self.s_rowgrp[s, n] = <uint8_t>g
            self.s_ggs[s, g + 1] += 1
        for g in range(ng):
            self.s_ggs[s, g + 1] += self.s_ggs[s, g]
        for n in range(self.rows):  # rows ascending within a group
            g = self.s_rowgrp[s, n]
            pos = self.s_ggs[s, g]
            self.s_ggs[s, g] = <int32_t>(pos + 1)
            self.s_perm[s, n] = <int32_t>pos
            self.s_iperm[s, pos] = <int32_t>n
        for g in range(ng, 0, -1):  # the running cursors ended at the next group's start
            self.s_ggs[s, g] = self.s_ggs[s, g - 1]
        self.s_ggs[s, 0] = 0
        self.s_order[s, 0] = 2 if keys >= 0 else 0
        self.s_order[s, 1] = key
        self.s_order[s, 2] = st
        self.s_order[s, 3] = self.c_taint[c]
        self.s_order[s, 4] = self.c_aff[c]
        self.s_order[s, 5] = keys
        return True

    cdef void _mark_special(self, Py_ssize_t s, Py_ssize_t q) noexcept nogil:
        """Mark and list in grouped slot s the rows counter q counts a pod on."""
        cdef Py_ssize_t n
        cdef const int32_t* ctr = &self.counters[q, 0]
        if self.ctr_total[q] == 0:
            return
        for n in range(self.rows):
            if ctr[n] != 0 and not self.s_special[s, n]:
                self.s_spec[s, self.s_nspec[s]] = <int32_t>n
                self.s_nspec[s] += 1
                self.s_special[s, n] = 3

    cdef void _group_row(self, Py_ssize_t s, Py_ssize_t c, Py_ssize_t n) noexcept nogil:
        """Bring row n of grouped slot s up to date: feasibility, local score, whether it is
        special (listed when it becomes so), its group's count of feasible rows that are
        not, and its tree value (the local score)."""
        cdef Py_ssize_t g = self.s_rowgrp[s, n]
        cdef bint was = self.s_feas[s, n] and not (self.s_special[s, n] & 1)
        cdef bint f = self.static_reason[self.c_static[c], n] == 0 and self._fits(c, n)
        cdef bint sp = self._special(c, n)
        cdef bint now = f and not sp
        self.s_feas[s, n] = f
        self.s_local[s, n] = self._local(c, n) if f else 0
        self.s_gfz[s, g] += <int64_t>now - <int64_t>was
        if sp:
            if not (self.s_special[s, n] & 2):
                self.s_spec[s, self.s_nspec[s]] = <int32_t>n
                self.s_nspec[s] += 1
            self.s_special[s, n] = 3
        else:
            self.s_special[s, n] &= 2
        self._tree_set(s, self.s_perm[s, n], self.s_local[s, n] if now else NEG)

    cdef Py_ssize_t _place_grouped(self, Py_ssize_t s, Py_ssize_t c, int64_t* score,
                                   int64_t* ties) noexcept nogil:
        """_place_spread's choice for a grouped slot (_group_layout), without a pass over
        the rows.

        The feasible rows of a group that no per-row term counts a pod on share the
        filters' verdict and every score but the local one: one of them (the group's best)
        stands for them all; the special rows are filtered and scored one by one. The
        normalisations need the largest taint count and affinity score, the feasible rows'
        count (the hostname weight), the zones holding one (the zone weight) and the range
        of raw scores, all over the groups and special rows. Ties are drawn uniformly over
        the rows: a group weighs as many as its rows of its best local score, one of which
        is drawn when the group is (_tree_pick)."""
        cdef Py_ssize_t j, j0 = self.c_k_off[c], j1 = self.c_k_off[c + 1]
        cdef Py_ssize_t key = self._group_key(c), nd, g, gs, ge, pos, n, d, i, k, z
        cdef Py_ssize_t ng = self.s_ng[s]
        cdef Py_ssize_t nf = 0, nfs = 0, zones = 0, nk = 0, best_n = -1, best_g = -1
        cdef bint hard = False, soft = False, ipa_filter = False, ipa_score = False
        cdef bint hard_empty = False, soft_empty = False, flat, zone_soft = False
        cdef int64_t hi = 0, lo = -1, ihi = 0, ilo = 0, t, v, mt = 0, ma = 0
        cdef ks_res res
        cdef bint ifirst = True
        cdef const int16_t[::1] taints = self.taint_count[self.c_taint[c]]
        cdef const int32_t[::1] aff = self.aff_score[self.c_aff[c]]
        cdef int64_t rep[MAX_GROUPS]
        cdef int64_t gmax[MAX_GROUPS]
        cdef int64_t gcnt[MAX_GROUPS]
        cdef int64_t graw[MAX_GROUPS]
        cdef int64_t gipa[MAX_GROUPS]
        cdef uint8_t zhas[MAX_ZONES + 1]
        nd = self.ndom[key] if key >= 0 else 0
        ks_res_init(&res)
        self._terms(c, &hard, &soft, &hard_empty, &soft_empty, &ipa_filter, &ipa_score)
        for j in range(j0, j1):
            if not self.k_hard[j] and not self.k_host[j]:
                zone_soft = True
        for z in range(nd + 1):
            zhas[z] = 0
        # groups: the best local score, one row standing for the group
        for g in range(ng):
            rep[g] = -1
            if self.s_gfz[s, g] <= 0:
                continue
            gs = self.s_ggs[s, g]
            ge = self.s_ggs[s, g + 1]
            gmax[g] = self._tree_range(s, gs, ge, &gcnt[g])
            n = self.s_iperm[s, self._tree_first(s, gs, gmax[g])]
            if self._narrowed(c, n, hard, hard_empty, ipa_filter):
                continue
            rep[g] = n
            zhas[self.s_gzone[s, g]] = 1
            nf += self.s_gfz[s, g]
            if self.s_gtv[s, g] > mt:
                mt = self.s_gtv[s, g]
            if self.s_gav[s, g] > ma:
                ma = self.s_gav[s, g]
        # special rows: drop the ones no longer special, filter the rest one by one
        k = 0
        for i in range(self.s_nspec[s]):
            n = self.s_spec[s, i]
            if not (self.s_special[s, n] & 1):
                self.s_special[s, n] = 0
                continue
            self.s_spec[s, k] = <int32_t>n
            k += 1
            if self.s_feas[s, n] and not self._narrowed(c, n, hard, hard_empty, ipa_filter):
                self.frows[nfs] = <int32_t>n
                nfs += 1
                zhas[self.s_gzone[s, self.s_rowgrp[s, n]]] = 1
                if self.w_taint != 0 and self.taint_any[self.c_taint[c]] and taints[n] > mt:
                    mt = taints[n]
                if self.w_aff != 0 and self.aff_any[self.c_aff[c]] and aff[n] > ma:
                    ma = aff[n]
        self.s_nspec[s] = k
        nf += nfs
        if nf == 0:
            return -1
        if soft and not soft_empty:
            if zone_soft:
                self._topo_sync(c)
            nk = self._soft_rows(c)
            for z in range(nd):
                zones += zhas[z]
            for i in range(nk):  # ks_soft_scores' weights: every feasible row has every key
                self.kweight[self.ksoft[i].drow] = \
                    log(<double>((nf if self.ksoft[i].host else zones) + 2))
            for g in range(ng):
                if rep[g] >= 0:
                    v = ks_soft_raw(<int32_t>rep[g], self.ksoft, nk, &self.dcount[0, 0],
                                    self.dcount.shape[1], &self.kweight[0])
                    graw[g] = v
                    hi = v if v > hi else hi
                    lo = v if lo < 0 or v < lo else lo
            for i in range(nfs):
                n = self.frows[i]
                v = ks_soft_raw(<int32_t>n, self.ksoft, nk, &self.dcount[0, 0],
                                self.dcount.shape[1], &self.kweight[0])
                self.rawsp[n] = v
                hi = v if v > hi else hi
                lo = v if lo < 0 or v < lo else lo
        elif soft:  # no pod counted: every row's raw score is the same (flat, 100)
            for g in range(ng):
                graw[g] = 0
            for i in range(nfs):
                self.rawsp[self.frows[i]] = 0
        flat = hi == 0 or hi == lo
        if ipa_score:
            for g in range(ng):
                if rep[g] >= 0:
                    v = self._ipa_raw(c, rep[g])
                    gipa[g] = v
                    ihi = v if ifirst or v > ihi else ihi
                    ilo = v if ifirst or v < ilo else ilo
                    ifirst = False
            for i in range(nfs):
                n = self.frows[i]
                v = self._ipa_raw(c, n)
                self.rawipa[n] = v
                ihi = v if ifirst or v > ihi else ihi
                ilo = v if ifirst or v < ilo else ilo
                ifirst = False
        for g in range(ng):
            if rep[g] < 0:
                continue
            t = gmax[g] + self._norm_terms(self.s_gtv[s, g], mt, self.s_gav[s, g], ma)
            if soft:
                t += self.w_spread * ks_spread_norm(graw[g], flat, hi, lo)
            if ipa_score and ihi > ilo:
                t += self.w_ipa * ks_ipa_norm(gipa[g], ihi, ilo)
            # a reservoir over rows: the group stands for its gcnt[g] tied rows
            if ks_offer_group(&res, t, gcnt[g], &self.rng):
                best_g = g
        for i in range(nfs):
            n = self.frows[i]
            t = self.s_local[s, n] + self._norm_terms(taints[n], mt, aff[n], ma)
            if soft:
                t += self.w_spread * ks_spread_norm(self.rawsp[n], flat, hi, lo)
            if ipa_score and ihi > ilo:
                t += self.w_ipa * ks_ipa_norm(self.rawipa[n], ihi, ilo)
            if ks_offer_group(&res, t, 1, &self.rng):
                best_g = -1
                best_n = n
        if best_g >= 0:  # one of the group's rows of its best local score
            pos = self._tree_pick(s, self.s_ggs[s, best_g], self.s_ggs[s, best_g + 1],
                                  gmax[best_g],
                                  ks_below(&self.rng, gcnt[best_g]) if gcnt[best_g] > 1 else 0)
            best_n = self.s_iperm[s, pos]
        score[0] = res.best
        ties[0] = res.ties
        return best_n

    cdef inline int64_t _norm_terms(self, int64_t tv, int64_t mt, int64_t av, int64_t ma) noexcept nogil:
        """The weighted TaintToleration and NodeAffinity scores of a row with tv untolerated
        PreferNoSchedule taints and preferred affinity score av, the feasible rows' largest
        being mt and ma (as ks_best_row adds them)."""
        cdef int64_t t = 0
        if self.w_taint:
            t += self.w_taint * (MAX_SCORE if mt == 0 else MAX_SCORE - MAX_SCORE * tv // mt)
        if self.w_aff and ma > 0:
            t += self.w_aff * (MAX_SCORE * av // ma)
        return t

    # ------------------------------------------------------------ InterPodAffinity
    cdef bint _domain(self, Py_ssize_t c) noexcept nogil:
        """Whether class c is a spread / inter-pod class (c_mode 2: _place_spread)."""
        return self.c_mode[c] == 2

    cdef void _ipa_prepare(self, Py_ssize_t c) noexcept nogil:
        """Per inter-pod row: counted pods per domain of its key (acount, nodes with the key,
        kept by _topo_sync), and whether any pod counts for the affinity / scoring terms."""
        self._topo_sync(c)
        self.ipa_topology = self.score_total != 0
        self.aff_empty = self.aff_total == 0

    cdef inline int _ipa_reason(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil:
        """The inter-pod filter on row n (after _ipa_prepare): 0 or a reason code."""
        cdef Py_ssize_t j, a0 = self.c_a_off[c], a1 = self.c_a_off[c + 1], d
        cdef bint pods_exist = True, any_affinity = False
        for j in range(a0, a1):
            if self.a_kind[j] != 0:
                continue
            any_affinity = True
            d = self.dom[self.a_key[j], n]
            if d < 0:
                return R_IPA_AFF
            if self.acount[j - a0, d] <= 0:
                pods_exist = False
        if any_affinity and not pods_exist and not (self.aff_empty and self.c_a_self[c]):
            return R_IPA_AFF
        for j in range(a0, a1):
            if self.a_kind[j] == 1 or self.a_kind[j] == 2:
                d = self.dom[self.a_key[j], n]
                if d >= 0 and self.acount[j - a0, d] > 0:
                    if self.a_kind[j] == 1:
                        return R_IPA_ANTI
                    return R_IPA_EXISTING
        return 0

    # ------------------------------------------------ one soft zone constraint, fast
    cdef void _consider_group(self, Py_ssize_t s, Py_ssize_t gs, Py_ssize_t ge, int64_t m,
                              int64_t cand, TiePick* pick) noexcept nogil:
        """Tree positions [gs, ge) share a score besides their own totals: m is their best
        total, cand with the shared score. A weighted reservoir over the groups: the group
        is taken when cand beats the best so far, or ties it with probability (its
        positions holding m) / the rows tied so far (_pick_group then draws one of its
        rows), so that each tied row is as likely (ks_offer_group). Those positions are
        counted only for a group that can be taken."""
        cdef int64_t count
        if cand < pick.res.best:
            return
        self._tree_range(s, gs, ge, &count)
        if not ks_offer_group(&pick.res, cand, count, &self.rng):
            return
        pick.m = m
        pick.count = count
        pick.lo = gs
        pick.hi = ge

    cdef Py_ssize_t _pick_group(self, Py_ssize_t s, TiePick* pick, int64_t* score,
                                int64_t* ties) noexcept nogil:
        """The row _consider_group's reservoir chose: one of its group's positions holding
        m, drawn uniformly; -1 when no group was considered."""
        cdef Py_ssize_t pos
        if pick.lo < 0:
            return -1
        pos = self._tree_pick(s, pick.lo, pick.hi, pick.m,
                              ks_below(&self.rng, pick.count) if pick.count > 1 else 0)
        score[0] = pick.res.best
        ties[0] = pick.res.ties
        return self.s_iperm[s, pos]

    cdef void _zone_layout(self, Py_ssize_t s, Py_ssize_t c) noexcept nogil:
        """Order the slot's tree by zone and count feasible rows and matching pods per zone."""
        cdef Py_ssize_t j = self.c_k_off[c], key = self.k_key[j], nd = self.ndom[key]
        cdef Py_ssize_t n, d, g, pos
        for g in range(nd + 2):
            self.s_gstart[s, g] = 0
        for g in range(nd + 1):
            self.s_fz[s, g] = 0
            self.s_zc[s, g] = 0
        for n in range(self.rows):
            d = self.dom[key, n]
            g = d if d >= 0 else nd
            self.s_gstart[s, g + 1] += 1
            if self.s_feas[s, n]:
                self.s_fz[s, g] += 1
            if d >= 0 and self.elig[self.k_elig[j], n]:
                self.s_zc[s, d] += self.counters[self.k_counter[j], n]
        for g in range(nd + 1):
            self.s_gstart[s, g + 1] += self.s_gstart[s, g]
        # place rows: a running cursor per zone
        for g in range(nd + 1):
            self.zcur[g] = self.s_gstart[s, g]
        for n in range(self.rows):
            d = self.dom[key, n]
            g = d if d >= 0 else nd
            pos = self.zcur[g]
            self.zcur[g] = pos + 1
            self.s_perm[s, n] = <int32_t>pos
            self.s_iperm[s, pos] = <int32_t>n

    cdef Py_ssize_t _place_zone(self, Py_ssize_t s, Py_ssize_t c, int64_t* score,
                                int64_t* ties) noexcept nogil:
        """Best row for a class whose only spread term is one soft constraint on a zone-like
        key: per zone, the best total without spread plus the zone's spread score."""
        cdef Py_ssize_t j = self.c_k_off[c], key = self.k_key[j], nd = self.ndom[key]
        cdef Py_ssize_t g, zones = 0, gs, ge
        cdef int64_t hi = 0, lo = -1, raw, m, sc
        cdef double weight
        cdef int64_t raws[MAX_ZONES]
        cdef TiePick pick
        ks_res_init(&pick.res)
        pick.lo = -1
        for g in range(nd):
            if self.s_fz[s, g] > 0:
                zones += 1
        weight = log(<double>(zones + 2))
        for g in range(nd):
            if self.s_fz[s, g] > 0:
                raw = <int64_t>c_round(<double>self.s_zc[s, g] * weight + <double>(self.k_skew[j] - 1))
                raws[g] = raw
                if raw > hi:
                    hi = raw
                if lo < 0 or raw < lo:
                    lo = raw
        for g in range(nd + 1):
            if self.s_fz[s, g] <= 0:
                continue
            gs = self.s_gstart[s, g]
            ge = self.s_gstart[s, g + 1]
            m = self._tree_max(s, gs, ge)
            if m < 0:
                continue
            if g == nd:
                sc = 0
            elif hi == 0:
                sc = MAX_SCORE
            else:
                sc = MAX_SCORE * (hi + lo - raws[g]) // hi
            self._consider_group(s, gs, ge, m, m + self.w_spread * sc, &pick)
        return self._pick_group(s, &pick, score, ties)

    # ----------------------------- soft hostname and zone constraints (System defaults), fast
    cdef void _host_zone_rows(self, Py_ssize_t c, Py_ssize_t* jh, Py_ssize_t* jz) noexcept nogil:
        """The rows of class c's hostname constraint and of its zone-like one (c_mode 3)."""
        cdef Py_ssize_t j = self.c_k_off[c]
        if self.k_host[j]:
            jh[0] = j
            jz[0] = j + 1
        else:
            jz[0] = j
            jh[0] = j + 1

    cdef void _host_zone_layout(self, Py_ssize_t s, Py_ssize_t c) noexcept nogil:
        """Order the slot's tree by zone and, within a zone, by the row's count of matching
        pods (ascending, s_h); count feasible rows and matching pods per zone."""
        cdef Py_ssize_t jh, jz, key, nd, q, n, d, g, h, pos, i, hmax = 0
        self._host_zone_rows(c, &jh, &jz)
        key = self.k_key[jz]
        nd = self.ndom[key]
        q = self.k_counter[jh]
        for g in range(nd + 2):
            self.s_gstart[s, g] = 0
        for g in range(nd + 1):
            self.s_fz[s, g] = 0
            self.s_zc[s, g] = 0
        for n in range(self.rows):
            d = self.dom[key, n]
            g = d if d >= 0 else nd
            self.s_gstart[s, g + 1] += 1
            if self.s_feas[s, n]:
                self.s_fz[s, g] += 1
            if d >= 0 and self.elig[self.k_elig[jz], n]:
                self.s_zc[s, d] += self.counters[q, n]
            if self.counters[q, n] > hmax:
                hmax = self.counters[q, n]
        for g in range(nd + 1):
            self.s_gstart[s, g + 1] += self.s_gstart[s, g]
        # rows by count (a stable counting sort into frows), then by zone, keeping that order
        for h in range(hmax + 2):
            self.hz_count[h] = 0
        for n in range(self.rows):
            self.hz_count[self.counters[q, n] + 1] += 1
        for h in range(hmax + 1):
            self.hz_count[h + 1] += self.hz_count[h]
        for n in range(self.rows):
            h = self.counters[q, n]
            self.frows[self.hz_count[h]] = <int32_t>n
            self.hz_count[h] += 1
        for g in range(nd + 1):  # a running cursor per zone
            self.zcur[g] = self.s_gstart[s, g]
        for i in range(self.rows):
            n = self.frows[i]
            d = self.dom[key, n]
            g = d if d >= 0 else nd
            pos = self.zcur[g]
            self.zcur[g] = pos + 1
            self.s_perm[s, n] = <int32_t>pos
            self.s_iperm[s, pos] = <int32_t>n
            self.s_h[s, pos] = self.counters[q, n]

    cdef Py_ssize_t _h_after(self, Py_ssize_t s, Py_ssize_t lo, Py_ssize_t hi, int32_t h) noexcept nogil:
        """The first position in [lo, hi) whose count is above h (hi if none); the counts
        of [lo, hi) ascend."""
        cdef Py_ssize_t mid
        while lo < hi:
            mid = (lo + hi) >> 1
            if self.s_h[s, mid] > h:
                hi = mid
            else:
                lo = mid + 1
        return lo

    cdef void _host_move(self, Py_ssize_t s, Py_ssize_t c, Py_ssize_t n, int sign) noexcept nogil:
        """Row n's count of matching pods changed by sign (+1 or -1): move it to the end
        (or the start) of its run of equal counts, swapping with the row there, and record
        the new count, so that the counts of each zone stay in ascending order."""
        cdef Py_ssize_t jh, jz, key, d, g, gs, ge, p, t, m
        cdef int32_t h
        cdef int64_t vp, vt
        self._host_zone_rows(c, &jh, &jz)
        key = self.k_key[jz]
        d = self.dom[key, n]
        g = d if d >= 0 else self.ndom[key]
        gs = self.s_gstart[s, g]
        ge = self.s_gstart[s, g + 1]
        p = self.s_perm[s, n]
        h = self.s_h[s, p]
        if sign > 0:
            t = self._h_after(s, p + 1, ge, h) - 1
        else:
            t = self._h_after(s, gs, p, h - 1)
        if t != p:
            m = self.s_iperm[s, t]
            self.s_iperm[s, t] = <int32_t>n
            self.s_iperm[s, p] = <int32_t>m
            self.s_perm[s, n] = <int32_t>t
            self.s_perm[s, m] = <int32_t>p
            vp = self.s_tree[s, 2 * (p + self.leaves)]
            vt = self.s_tree[s, 2 * (t + self.leaves)]
            self._tree_set(s, p, vt)
            self._tree_set(s, t, vp)
        self.s_h[s, t] = h + sign

    cdef Py_ssize_t _place_host_zone(self, Py_ssize_t s, Py_ssize_t c, int64_t* score,
                                     int64_t* ties) noexcept nogil:
        """Best row for a class whose spread terms are a soft hostname constraint and a
        soft zone-like one over the same pods, every node having both keys (c_mode 3): per
        (zone, count) group, its best total without spread plus the group's spread score.

        The groups' raw scores are ks_soft_scores' for their rows: the hostname weight
        counts the feasible rows, the zone weight the zones with a feasible row."""
        cdef Py_ssize_t jh, jz, key, nd, g, gs, ge, b, e
        cdef Py_ssize_t counted = 0, zones = 0
        cdef int64_t hi = 0, lo = -1, raw, m, sc
        cdef double wh, wz
        cdef int pass_
        cdef TiePick pick
        ks_res_init(&pick.res)
        pick.lo = -1
        self._host_zone_rows(c, &jh, &jz)
        key = self.k_key[jz]
        nd = self.ndom[key]
        for g in range(nd):
            if self.s_fz[s, g] > 0:
                zones += 1
                counted += self.s_fz[s, g]
        wh = log(<double>(counted + 2))
        wz = log(<double>(zones + 2))
        # pass 0: the range of raw scores over the groups with a feasible row; pass 1: pick
        for pass_ in range(2):
            for g in range(nd):
                if self.s_fz[s, g] <= 0:
                    continue
                gs = self.s_gstart[s, g]
                ge = self.s_gstart[s, g + 1]
                b = gs
                while b < ge:
                    e = self._h_after(s, b, ge, self.s_h[s, b])
                    m = self._tree_max(s, b, e)
                    if m >= 0:
                        raw = ks_host_zone_raw(self.s_h[s, b], wh, self.k_skew[jh],
                                               self.s_zc[s, g], wz, self.k_skew[jz])
                        if pass_ == 0:
                            if raw > hi:
                                hi = raw
                            if lo < 0 or raw < lo:
                                lo = raw
                        else:
                            sc = MAX_SCORE if hi == 0 else MAX_SCORE * (hi + lo - raw) // hi
                            self._consider_group(s, b, e, m, m + self.w_spread * sc, &pick)
                    b = e
        return self._pick_group(s, &pick, score, ties)

    # ------------------------------------------------------- a class's only pod, fused
    cdef Py_ssize_t _place_single(self, Py_ssize_t c, int64_t* score,
                                  int64_t* ties) noexcept nogil:
        """Best row for the only pod of a max-tree or zone class (c_mode 0 or 1) in the chunk.

        Building the class's cache (slot, max-tree, zone layout) costs several passes and
        would be used once; two passes over the rows find the same best total, the ties
        drawn uniformly as the cache would (not the same draw: the order differs)."""
        cdef const int16_t[::1] taints = self.taint_count[self.c_taint[c]]
        cdef const int32_t[::1] aff = self.aff_score[self.c_aff[c]]
        cdef bint zone = self.c_mode[c] == 1
        cdef Py_ssize_t j = self.c_k_off[c], key = 0, nd = 0, n, d, g, zones = 0, i
        # maxima of all-zero rows (no PreferNoSchedule taint, no preferred term) stay 0
        cdef bint track_taints = self.w_taint != 0 and self.taint_any[self.c_taint[c]]
        cdef bint track_aff = self.w_aff != 0 and self.aff_any[self.c_aff[c]]
        cdef int64_t tsc[TAINT_TABLE]
        cdef bint ttab
        cdef Py_ssize_t feasible = 0
        cdef int64_t mt = 0, ma = 0, t, hi = 0, lo = -1, raw
        cdef ks_res pick
        cdef double weight
        cdef int64_t fz[MAX_ZONES + 1]
        cdef int64_t zc[MAX_ZONES + 1]
        cdef int64_t zscore[MAX_ZONES + 1]
        cdef const ks_extra* x
        cdef int64_t wt, wa, ws
        if not zone and _bounded and self.p_alloc != NULL and self._vector() \
                and not track_aff and not self.c_xvary[c] \
                and not (self.ports_on and self._ports_taken(c)):
            n = self._single_bounded(c, self._static_bits(self.c_static[c]), track_taints,
                                     score, ties)
            if n != -2:
                return n
        if not zone:
            feasible = self._scan(c, False, True, False, track_taints, track_aff, &mt, &ma,
                                  &hi, &lo)
            if feasible < 0:
                feasible = -feasible - 1
                self._finish(c, feasible, True, False, track_taints, track_aff, &mt, &ma, &hi,
                             &lo)
            if feasible == 0:
                return -1
            ttab = self.w_taint != 0 and _taint_table(tsc, self.w_taint, mt)
            return ks_best_row(&self.frows[0], feasible, &self.rawloc[0], True, &taints[0],
                               tsc if ttab else NULL, self.w_taint, mt, &aff[0], self.w_aff, ma,
                               NULL, 0, 0, 0, NULL, 0, 0, 0, self._extra(c, feasible),
                               &self.tiebuf[0], &self.rng, score, ties)
        # The zone path: the zone's spread score joins each row's total.
        feasible = self._scan(c, False, False, False, False, False, &mt, &ma, &hi, &lo)
        feasible = -feasible - 1 if feasible < 0 else feasible
        if not self._vector():
            self._local_rows(c, feasible)  # rawloc by position in frows
        key = self.k_key[j]
        nd = self.ndom[key]
        for g in range(nd + 1):
            fz[g] = 0
            zc[g] = 0
        for i in range(feasible):
            n = self.frows[i]
            if track_taints and taints[n] > mt:
                mt = taints[n]
            if track_aff and aff[n] > ma:
                ma = aff[n]
            d = self.dom[key, n]
            fz[d if d >= 0 else nd] += 1
        if self.ctr_total[self.k_counter[j]] != 0:
            for n in range(self.rows):
                d = self.dom[key, n]
                if d >= 0 and self.elig[self.k_elig[j], n]:
                    zc[d] += self.counters[self.k_counter[j], n]
        if feasible == 0:
            return -1
        for g in range(nd):
            if fz[g] > 0:
                zones += 1
        weight = log(<double>(zones + 2))
        for g in range(nd):
            if fz[g] > 0:
                raw = <int64_t>c_round(<double>zc[g] * weight + <double>(self.k_skew[j] - 1))
                zc[g] = raw
                if raw > hi:
                    hi = raw
                if lo < 0 or raw < lo:
                    lo = raw
        for g in range(nd):
            if fz[g] > 0:
                zscore[g] = MAX_SCORE if hi == 0 else MAX_SCORE * (hi + lo - zc[g]) // hi
        zscore[nd] = 0
        ttab = self.w_taint != 0 and _taint_table(tsc, self.w_taint, mt)
        x = self._extra(c, feasible)
        ks_res_init(&pick)
        # The weights held in locals and the loop written twice, as ks_best_row's: without
        # further score channels (x NULL, the default profile) no row tests x.
        wt = self.w_taint
        wa = self.w_aff if ma > 0 else 0
        ws = self.w_spread
        if x == NULL:
            for i in range(feasible):
                n = self.frows[i]
                t = self.rawloc[i]
                if ttab:
                    t += tsc[taints[n]]
                elif wt:
                    t += wt * (MAX_SCORE if mt == 0 else MAX_SCORE - MAX_SCORE * taints[n] // mt)
                if wa:
                    t += wa * (MAX_SCORE * aff[n] // ma)
                d = self.dom[key, n]
                t += ws * zscore[d if d >= 0 else nd]
                ks_offer(&pick, t, n, &self.rng)
        else:
            for i in range(feasible):
                n = self.frows[i]
                t = self.rawloc[i]
                if ttab:
                    t += tsc[taints[n]]
                elif wt:
                    t += wt * (MAX_SCORE if mt == 0 else MAX_SCORE - MAX_SCORE * taints[n] // mt)
                if wa:
                    t += wa * (MAX_SCORE * aff[n] // ma)
                d = self.dom[key, n]
                t += ws * zscore[d if d >= 0 else nd] + ks_extra_terms(x, n)
                ks_offer(&pick, t, n, &self.rng)
        score[0] = pick.best
        ties[0] = pick.ties
        return pick.row
