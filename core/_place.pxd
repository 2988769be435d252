# Declarations of the burst placement kernel (core/_place.pyx); the layout is described there.
from kubesalvo.core._typedefs cimport quantity_t, node_t, mask_t, score_t
cimport cython
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint64_t

cdef extern from "_scan.h" nogil:
    ctypedef struct ks_hot:
        int64_t a0, a1, r0, r1, z0, z1
        double inv0, inv1
    ctypedef struct ks_single:
        const int32_t* srows
        int64_t ns
        const ks_hot* hot
        const int64_t* podfree
        const int64_t* alloc
        const int64_t* req
        int64_t nres
        const int64_t* creq
        int64_t req_cpu, req_mem, req_pods, nz_cpu, nz_mem
        int chk_cpu, chk_mem, chk_pods
        const int32_t* xcols
        int64_t nx
        const int32_t* const* hkeys
        int64_t nhk
        const int32_t* fixed
        int64_t w_fit, w_bal
        const int16_t* taints
        const int32_t* aff
        const int32_t* const* skeys
        const int64_t* skews
        int64_t nsk
        int require_all
        int32_t* rows
        int64_t* loc
        uint8_t* redo
        int64_t* rawsp
        int64_t mt, ma, hi, lo
        const int32_t* tgroup
        const uint64_t* tin
        const uint8_t* gfit
        const int64_t* gloc
        const uint8_t* gredo
        int64_t twinned
    ctypedef struct ks_levels:
        int32_t* next
        int32_t* prev
        int32_t* cell
        int32_t* head
        int32_t* count
        int64_t nshapes
    ctypedef struct ks_res:
        int64_t best, row, ties

cdef extern from "_twins.h" nogil:
    enum: KS_TWIN_GROUPS
    enum: KS_VALUES
    ctypedef struct ks_twins:
        int64_t words, ngroups
        int32_t* group
        uint64_t* inb "in"
        uint64_t* all_in
        int64_t* count
        int64_t* hint
        int64_t* base
        int64_t nres
    enum: KS_EXTRA
    ctypedef struct ks_extra:
        const int32_t* raw[KS_EXTRA]
        int64_t w[KS_EXTRA]
        int64_t max[KS_EXTRA]
        int rev[KS_EXTRA]
        int64_t n
    ctypedef struct ks_soft:
        const int32_t* dom
        const int32_t* counter
        const uint8_t* elig
        int64_t skew, ndom, drow
        int host

# The profile's scalars as the kernel reads them: a Python dict with these keys converts to
# it when it crosses into BurstKernel (core/place.py builds it from the Profile).
cdef struct KernelSettings:
    int strategy               # NodeResourcesFit scoring: 0 LeastAllocated, 1 MostAllocated,
                               #   2 RequestedToCapacityRatio
    int64_t w_fit              # score weights (0 = the plugin does not score): NodeResourcesFit,
    int64_t w_bal              #   NodeResourcesBalancedAllocation,
    int64_t w_taint            #   TaintToleration,
    int64_t w_aff              #   NodeAffinity,
    int64_t w_spread           #   PodTopologySpread,
    int64_t w_ipa              #   InterPodAffinity
    bint fit_on                # filters enabled: NodeResourcesFit,
    bint ports_on              #   NodePorts,
    bint spread_on             #   PodTopologySpread,
    bint ipa_on                #   InterPodAffinity
    Py_ssize_t max_constraints # the most spread constraints a class of the burst has

# A reservoir over groups of tree positions that share a score (_consider_group).
cdef struct TiePick:
    ks_res res                 # best: the best total so far; ties: the rows holding it
    int64_t m                  # the chosen group's best total without the shared score
    int64_t count              # its positions holding m
    Py_ssize_t lo, hi          # its tree positions [lo, hi); lo -1 while none is chosen

@cython.final
cdef class BurstKernel:
    # ---- node state: scratch copies the kernel mutates as it places pods
    cdef const quantity_t[:, ::1] alloc      # rows x resources: allocatable (millicores, bytes, counts)
    cdef quantity_t[:, ::1] req              # rows x resources: requested incl. placed pods (same units)
    cdef quantity_t[:, ::1] nzreq            # rows x 2: non-zero cpu (millicores), memory (bytes) for scores
    cdef int32_t[:, ::1] port_use            # port keys x rows: pods using each (ip, protocol, port)
    cdef int64_t[::1] port_rows              # per port key: rows where port_use is above 0
    cdef const quantity_t* p_alloc           # alloc, req, nzreq as raw C-contiguous pointers
    cdef quantity_t* p_req                   #   (for the per-pod scans; NULL with no rows)
    cdef quantity_t* p_nz
    cdef Py_ssize_t rows                     # number of rows (nodes, present or not)
    cdef Py_ssize_t nres                     # number of resource columns
    # ---- profile
    cdef int strategy                        # 0 LeastAllocated, 1 MostAllocated, 2 RequestedToCapacityRatio
    cdef const int32_t[::1] sc_cols          # resource columns NodeResourcesFit scores
    cdef const int64_t[::1] sc_weight        # their weights (1..100)
    cdef const int64_t[::1] shape_util       # RequestedToCapacityRatio points: utilization 0..100
    cdef const int64_t[::1] shape_score      # ... and score 0..100 (the config's 0..10 times 10)
    cdef const int32_t[::1] bal_cols         # resource columns NodeResourcesBalancedAllocation looks at
    cdef const uint8_t[::1] col_scalar       # per column: 1 for scalar resources (skipped unless requested)
    cdef const uint8_t[::1] col_fit_check    # per column: 1 if the NodeResourcesFit filter checks it
    cdef int64_t w_fit, w_bal, w_taint, w_aff  # score plugin weights (0 = plugin disabled)
    cdef bint fit_on, ports_on               # NodeResourcesFit / NodePorts filters enabled
    cdef bint default_scores                 # LeastAllocated and BalancedAllocation on cpu+memory
    cdef bint even_weights                   # NodeResourcesFit's two resources weigh the same
    cdef bint spread_on                      # PodTopologySpread filter enabled
    cdef int64_t w_spread                    # PodTopologySpread score weight (0 = disabled)
    cdef bint ipa_on                         # InterPodAffinity filter enabled
    cdef int64_t w_ipa                       # InterPodAffinity score weight (0 = disabled)
    # ---- ties
    cdef uint64_t[::1] ties                  # 1: the random stream's state, owned by core/ties.py
    cdef uint64_t rng                        # the state while a chunk runs (ks_next in _scan.h)
    # ---- topology (whole burst)
    cdef const int32_t[:, ::1] dom           # topology keys x rows: domain id, -1 = the node lacks the key
    cdef const int32_t[::1] ndom             # per topology key: number of domain ids
    cdef int64_t[:, ::1] dcount              # constraints of class t_owner x domains: matching pods
                                             #   (hard: rows with every hard key; soft zone-like:
                                             #   the rows ks_soft_scores counts), kept (_topo_sync)
    cdef uint8_t[:, ::1] dpresent            # same shape: hard: domain takes part (kept); soft:
                                             #   scratch of ks_soft_scores
    cdef int64_t[::1] dmin                   # per hard constraint: smallest domain count (minDomains
                                             #   applied), set by _spread_prepare
    cdef int64_t[::1] dlow                   # per hard constraint: smallest count over present
                                             #   domains (MAX_INT32 with none), kept
    cdef int64_t[::1] dlow_n                 # per hard constraint: present domains counting dlow
    cdef int64_t[::1] dpresent_n             # per hard constraint: present domains
    cdef Py_ssize_t t_owner                  # class whose counts dcount / acount hold, -1 = none
    cdef Py_ssize_t t_synced                 # log position those counts reflect
    cdef int64_t aff_total                   # pods t_owner's required affinity terms count (rows
                                             #   with the key)
    cdef int64_t score_total                 # pods t_owner's scoring inter-pod terms count
    cdef int64_t[::1] zcur                   # scratch of the zone layouts: a cursor per zone
    cdef double[::1] kweight                 # scratch, per soft constraint: log(domains + 2)
    cdef uint8_t[::1] kmissing               # scratch, per soft constraint: some row lacks its key
    cdef Py_ssize_t kmax                     # most constraints of a class in the burst
    cdef const int32_t** kdom                # scratch, 2 x kmax: per hard / soft constraint of a
    cdef int64_t* kskew                      #   class its row of dom and maxSkew (_key_rows)
    cdef ks_soft* ksoft                      # scratch, kmax: a class's soft constraints (_soft_rows)
    cdef int32_t[::1] frows                  # scratch: the current pod's feasible rows, ascending
    cdef int64_t[::1] rawsp                  # scratch, per row: raw spread score of the current pod
    cdef int64_t[::1] rawipa                 # scratch, per row: raw inter-pod score of the current pod
    cdef int64_t[::1] rawloc                 # scratch, per row: local score of a class's only pod
    cdef ks_hot* hot                         # per row: cpu/memory allocatable, requested, non-zero
                                             #   requested and 1 / allocatable in one line (_scan.h)
    cdef object hot_buf                      # the buffer holding hot (64-byte aligned inside)
    cdef int64_t[::1] podfree                # per row: allocatable minus requested pods
    cdef int32_t[::1] xcols                  # scratch: a class's fit columns besides cpu, memory, pods
    cdef uint8_t[::1] redo                   # scratch, per position of frows: recompute exactly
    cdef int32_t[::1] tiebuf                 # scratch, rows + 1: the rows tied for the best total
    # ---- the bounded search of a class's only pod (_single_bounded)
    cdef ks_levels levels                    # the rows by shape and free-capacity level (_scan.h)
    cdef int32_t[::1] lv_next, lv_prev       # its lists' links, per row
    cdef int32_t[::1] lv_cell                # its cell per row
    cdef int32_t[::1] lv_head                # its cells' first rows
    cdef int32_t[::1] lv_count               # its cells' row counts
    cdef bint lv_built                       # levels is built and follows _apply
    cdef readonly int64_t bounded_pods       # pods placed by _single_bounded (for tests)
    cdef readonly int64_t bounded_rows       # rows its searches visited (for tests)
    cdef readonly int64_t bounded_gaveup     # searches given up for the scan (for tests)
    cdef int32_t[:, ::1] tlist               # SMASKS x rows: the rows of a taint-count row above 0
    cdef int64_t[::1] tlist_n                # per tlist row: its rows
    cdef int32_t[::1] tlist_of               # per taint-count row of the chunk: its tlist row or -1
    cdef Py_ssize_t tlist_used               # tlist rows taken in this chunk
    cdef int64_t[::1] fixed_max              # per fixed-score row of the chunk: its maximum (-1 unknown)
    # ---- twin rows (_twins.h): rows of one whole state, searched as a group's bitset
    cdef ks_twins tw                         # the groups (built after _twin_after searches,
                                             #   kept by _apply)
    cdef bint tw_built
    cdef int32_t[::1] tw_group               # its per-row groups
    cdef uint64_t[::1] tw_in                 # its KS_TWIN_GROUPS x words bitsets
    cdef uint64_t[::1] tw_all                # their union
    cdef int32_t[::1] tw_list                # scratch, rows: the rows in no group (ks_untwinned)
    cdef readonly int64_t twin_scans         # searches that scanned the rows in no group (for tests)
    cdef readonly int64_t twin_scanned       # feasible rows the scans took their group's terms for
    cdef int64_t[::1] tw_count, tw_hint      # its per-group counts and first words
    cdef int64_t[::1] tw_base                # its per-group states (requested, non-zero)
    cdef readonly int64_t twin_groups        # groups kept (for tests)
    cdef readonly int64_t twin_ties          # rows the searches took as tied without a visit
    cdef uint64_t[:, ::1] st_bits            # per static row set of the chunk: its bitset
    cdef uint8_t[::1] st_built               #   built (on first use)
    cdef int64_t[:, ::1] fx_vals             # per fixed-score row: its distinct values,
    cdef int64_t[::1] fx_nv                  #   their count (-2 unknown, -1 too many),
    cdef uint64_t[:, ::1] fx_bits            #   KS_VALUES bitsets (ks_value_bits)
    cdef int64_t[:, ::1] tc_vals             # the same per taint-count row
    cdef int64_t[::1] tc_nv
    cdef uint64_t[:, ::1] tc_bits
    # ---- the score channels beyond the first of each kind (encode.StaticTables)
    cdef const int32_t[:, ::1] x_raw         # channel rows x rows: raw values (>= 0)
    cdef const int32_t[:, ::1] c_x           # classes x extra channels: its x_raw row, -1 when
                                             #   the values are 0 on every row (then constant:
                                             #   the encoder put a REVERSE_MAX one in fixed)
    cdef const int64_t[::1] x_w              # per extra channel: its weight
    cdef const uint8_t[::1] x_rev            # per extra channel: 1 REVERSE_MAX, 0 MAX
    cdef Py_ssize_t nx                       # extra channels of the profile (<= KS_EXTRA)
    cdef uint8_t[::1] c_xvary                # per class: some extra channel varies (c_x >= 0)
    cdef int64_t[:, ::1] s_xmax              # slots x extra channels: maxima over feasible rows
    cdef ks_extra xq                         # scratch: the current pod's varying extra channels
    cdef int64_t[:, ::1] acount              # inter-pod rows of class t_owner x domains: counted pods
    cdef bint aff_empty                      # no pod anywhere matches all required affinity terms
    cdef bint ipa_topology                   # some scoring term matched a pod (else the plugin is skipped)
    # ---- the current chunk of the burst: classes
    cdef Py_ssize_t nclasses                 # classes in this chunk
    cdef const quantity_t[:, ::1] c_req      # classes x resources: pod requests (pods column = 1)
    cdef const quantity_t[:, ::1] c_nz       # classes x 2: cpu (millicores), memory (bytes) as scores see the pod
    cdef const quantity_t[:, ::1] c_nz_add   # classes x 2: what a placed pod adds to nzreq (same units)
    cdef int32_t[::1] c_fit_off              # classes+1: offsets into c_fit_cols
    cdef int32_t[::1] c_fit_cols             # the resource columns the class requests (and Fit checks)
    cdef const int32_t[::1] c_static         # class -> row of static_reason
    cdef const uint8_t[:, ::1] static_reason # S x rows: first failing static filter code, 0 = passes, 255 = no node
    cdef const int32_t[::1] static_off       # S+1: offsets into static_rows
    cdef const int32_t[::1] static_rows      # per static row: the rows passing it (code 0), ascending
    cdef int32_t[:, ::1] static_counts       # S x reason codes: rows each static row rejects per
                                             #   code (R_ABSENT not counted), once static_done
    cdef uint8_t[::1] static_done            # S: 1 once static_counts holds the static row's counts
                                             #   (2: and some rows fail with a late code)
    cdef const uint8_t[::1] late_code        # per code: 1 when its plugin filters after NodePorts and
                                             #   NodeResourcesFit (a row failing those too counts there)
    cdef const int32_t[::1] c_fixed          # class -> row of fixed
    cdef const int32_t[:, ::1] fixed         # F x rows: weighted scores that never change (ImageLocality)
    cdef const int32_t[::1] c_taint          # class -> row of taint_count
    cdef const int16_t[:, ::1] taint_count   # T x rows: untolerated PreferNoSchedule taints (count)
    cdef uint8_t[::1] taint_any              # T: 1 if the row of taint_count has a non-zero count
    cdef const int32_t[::1] c_aff            # class -> row of aff_score
    cdef const int32_t[:, ::1] aff_score     # A x rows: summed weights of matched preferred node affinity terms
    cdef uint8_t[::1] aff_any                # A: 1 if the row of aff_score has a non-zero score
    cdef const int32_t[::1] c_port_conf_off  # classes+1: offsets into c_port_conf
    cdef const int32_t[::1] c_port_conf      # port keys whose use on a node conflicts with the class
    cdef const int32_t[::1] c_port_own_off   # classes+1: offsets into c_port_own
    cdef const int32_t[::1] c_port_own       # port keys a pod of the class takes
    cdef const int32_t[::1] c_k_off          # classes+1: offsets into the k_* constraint rows
    cdef const int32_t[::1] k_key            # constraint -> topology key (row of dom)
    cdef const uint8_t[::1] k_hard           # constraint -> 1 DoNotSchedule, 0 ScheduleAnyway
    cdef const int64_t[::1] k_skew           # constraint -> maxSkew (pods)
    cdef const int64_t[::1] k_min_domains    # constraint -> minDomains (domains)
    cdef const uint8_t[::1] k_self           # constraint -> 1 if the pod matches its own selector
    cdef const int32_t[::1] k_counter        # constraint -> row of counters (the pods it counts)
    cdef const int32_t[::1] k_elig           # constraint -> row of elig (nodes its inclusion policies keep)
    cdef const uint8_t[::1] k_host           # constraint -> 1 if its key is kubernetes.io/hostname
    cdef const uint8_t[:, ::1] elig          # E x rows: 1 if the node counts for the constraint
    cdef int32_t[:, ::1] counters            # Q x rows: pods matching each (namespace, selector), mutated
    cdef int64_t[::1] ctr_total              # Q: sum of each counter over the rows (0 = counts no pod)
    cdef const int32_t[::1] c_inc_off        # classes+1: offsets into c_inc
    cdef const int32_t[::1] c_inc            # counters a placed pod of the class raises
    cdef const int32_t[::1] c_a_off          # classes+1: offsets into the a_* inter-pod rows
    cdef const uint8_t[::1] a_kind           # row -> 0 affinity, 1 anti-affinity, 2 existing anti, 3 score
    cdef const int32_t[::1] a_key            # row -> topology key (row of dom)
    cdef const int32_t[::1] a_counter        # row -> row of counters
    cdef const int64_t[::1] a_weight         # row -> score weight per counted pod (score rows)
    cdef const uint8_t[::1] c_a_self         # class -> 1 if it matches all its required affinity terms
    cdef const uint8_t[::1] c_spread_all     # class -> 1 if soft spread ignores rows missing a key
                                             #   (own or List constraints; 0 for System defaults)
    cdef const uint8_t[::1] c_score_error    # class -> 1 if a PreScore plugin fails its pods'
                                             #   attempt (when 2+ rows are feasible)
    cdef const uint8_t[::1] c_mode           # class -> 0 max-tree, 1 max-tree per zone (one soft
                                             #   non-hostname spread constraint), 2 by group of
                                             #   rows (s_grouped) or passes per pod,
                                             #   3 max-tree per (zone, matching pods on the row)
                                             #   (soft hostname + soft zone constraints)
    # ---- the current chunk: pods in queue order
    cdef Py_ssize_t npods                    # pods in this chunk
    cdef const int32_t[::1] p_class          # pod -> class
    cdef const int32_t[::1] p_gang_min       # pod -> its gang's minimum, 0 when not in a gang
    cdef const uint8_t[::1] p_gang_last      # pod -> 1 if it ends its gang's run (members are contiguous)
    cdef const int32_t[::1] p_nominated      # pod -> row of its status.nominatedNodeName, -1 = none
    cdef int64_t[::1] c_left                 # class -> its pods not yet placed in this chunk
    # ---- outputs of the current chunk
    cdef node_t[::1] out_node                # pod -> row, -1 when not placed
    cdef score_t[::1] out_score              # pod -> total weighted score of the chosen row
    cdef int32_t[:, ::1] out_reasons         # pods x reason codes: nodes rejecting the pod per reason
    cdef uint8_t[::1] out_error              # pod -> 1 when c_score_error failed its attempt
    cdef int32_t[::1] out_ties               # pod -> rows sharing the chosen row's total (1: no tie)
    cdef node_t[::1] out_rolled              # pod -> row it held before its gang was rolled back, else -1
    # ---- per-class caches (slots), valid within one chunk
    cdef Py_ssize_t nslots, leaves           # slots; leaves of each max-tree (power of two >= rows)
    cdef int32_t[::1] slot_class             # slot -> class cached in it, -1 = none
    cdef int64_t[::1] slot_used              # slot -> last pod index that used it (for eviction)
    cdef int32_t[::1] slot_synced            # slot -> log position its arrays reflect
    cdef int32_t[::1] class_slot             # class -> slot, -1 = none
    cdef uint8_t[:, ::1] s_feas              # slots x rows: passes every filter
    cdef int64_t[:, ::1] s_local             # slots x rows: weighted resource + fixed scores
    cdef int64_t[:, ::1] s_tree              # slots x 4*leaves: max-tree of totals, node i at
                                             #   [2i] (its maximum, -1 = infeasible) and [2i + 1]
                                             #   (leaves under it holding the maximum, among
                                             #   which ties are drawn; a leaf: 1)
    cdef int64_t[::1] s_max_taint            # slot -> max untolerated PreferNoSchedule count over feasible rows
    cdef int64_t[::1] s_max_aff              # slot -> max preferred node affinity score over feasible rows
    cdef int32_t[:, ::1] s_perm              # slots x rows: row -> position in the slot's tree
    cdef int32_t[:, ::1] s_iperm             # slots x leaves: position -> row (-1 = padding)
    cdef uint8_t[::1] s_ready                # slot -> its tree and s_iperm are set (_slot_ready)
    cdef int64_t[:, ::1] s_order             # slots x 6: what its positions (s_perm, s_iperm)
                                             #   follow: [0] 0 a zone layout or none, 1 the
                                             #   rows, 2 _group_order's groups for the zone key
                                             #   [1], static rows [2], taint row [3], affinity
                                             #   row [4] and the terms' keys (bits) [5] (its
                                             #   s_rowgrp, s_ggs, s_ng, s_gzone, s_gtv, s_gav
                                             #   with them)
    cdef int32_t[:, ::1] s_gstart            # slots x (MAX_ZONES + 2): first position of each zone
                                             #   (the last group: rows without the key)
    cdef int64_t[:, ::1] s_zc                # slots x (MAX_ZONES + 1): matching pods per zone
    cdef int64_t[:, ::1] s_fz                # slots x (MAX_ZONES + 1): feasible rows per zone
    cdef int32_t[:, ::1] s_h                 # slots x leaves: position -> the count of matching
                                             #   pods of its row the host-and-zone path sorts by
    cdef int64_t[::1] hz_count               # scratch of the host-and-zone layout (counts + 2)
    cdef uint8_t[::1] s_grouped              # slot -> 1 if its c_mode 2 class picks by group
                                             #   (_place_grouped), 0 passes over the rows
    cdef uint8_t[:, ::1] s_special           # slots x rows: bit 1 the row holds pods a hostname
                                             #   term counts, bit 2 the row is in s_spec
    cdef int32_t[:, ::1] s_spec              # slots x rows: rows with bit 2 (some no longer special)
    cdef int64_t[::1] s_nspec                # slot -> entries of s_spec
    cdef uint8_t[:, ::1] s_rowgrp            # slots x rows: the row's group (< MAX_GROUPS)
    cdef int64_t[::1] s_ng                   # slot -> its groups
    cdef int32_t[:, ::1] s_ggs               # slots x (MAX_GROUPS + 1): first tree position of
                                             #   each group
    cdef int64_t[:, ::1] s_gfz               # slots x MAX_GROUPS: feasible rows, not special
    cdef int32_t[:, ::1] s_gzone             # slots x MAX_GROUPS: the group's zone (domain id;
                                             #   the key's domains: rows without it)
    cdef int64_t[:, ::1] s_gtv               # slots x MAX_GROUPS: its untolerated
                                             #   PreferNoSchedule taints (count)
    cdef int64_t[:, ::1] s_gav               # slots x MAX_GROUPS: its preferred node affinity score
    cdef uint8_t[::1] key_unique             # per topology key: no two rows share a domain
    cdef readonly int64_t grouped_pods       # pods placed by _place_grouped (tests read it)
    cdef readonly int64_t orders_reused      # group layouts that kept the slot's order (tests)
    # ---- _group_order's results per signature (zone key, static rows, taint row, affinity
    # row, the terms' keys), for the chunk: an order is the tables' alone, so a class of
    # that signature in any slot copies it instead of recomputing it (o_n = 0 at each load)
    cdef int64_t[:, ::1] o_sig               # ORDERS x 6: the signature, [5] 1 ordered, 0 not
    cdef int64_t o_n                         # entries filled (round robin past ORDERS)
    cdef int64_t o_next                      # the entry the next order replaces when full
    cdef uint8_t[:, ::1] o_rowgrp            # ORDERS x rows: s_rowgrp
    cdef int32_t[:, ::1] o_perm              # ORDERS x rows: s_perm
    cdef int32_t[:, ::1] o_iperm             # ORDERS x rows: s_iperm's first rows positions
    cdef int64_t[::1] o_ng                   # ORDERS: s_ng
    cdef int32_t[:, ::1] o_ggs               # ORDERS x (MAX_GROUPS + 1): s_ggs
    cdef int32_t[:, ::1] o_gzone             # ORDERS x MAX_GROUPS: s_gzone
    cdef int64_t[:, ::1] o_gtv               # ORDERS x MAX_GROUPS: s_gtv
    cdef int64_t[:, ::1] o_gav               # ORDERS x MAX_GROUPS: s_gav
    cdef readonly int64_t orders_copied      # group orders taken from o_* (tests)
    # ---- log of rows whose usage changed (placements and rollbacks), within one chunk
    cdef int32_t[::1] log_row                # row whose usage changed
    cdef int32_t[::1] log_class              # class of the pod placed (or taken back) there
    cdef int32_t[::1] log_sign               # +1 placed, -1 taken back
    cdef Py_ssize_t log_len

    cdef void _topo_full(self, Py_ssize_t c) noexcept nogil
    cdef inline int _row_keys(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil
    cdef void _spread_low(self, Py_ssize_t r, Py_ssize_t ndom) noexcept nogil
    cdef void _topo_row(self, Py_ssize_t c, Py_ssize_t n, Py_ssize_t c2, int sign) noexcept nogil
    cdef void _topo_sync(self, Py_ssize_t c) noexcept nogil
    cdef inline bint _fits(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil
    cdef int64_t _resource_score(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil
    cdef int64_t _balanced_score(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil
    cdef inline int64_t _local(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil
    cdef inline bint _fits_fast(self, Py_ssize_t c, Py_ssize_t n, const quantity_t* creq,
                                const int32_t* fcols, Py_ssize_t nfc) noexcept nogil
    cdef inline int64_t _local_fast(self, Py_ssize_t c, Py_ssize_t n, const quantity_t* creq,
                                    const quantity_t* cnz, const int32_t* fixed) noexcept nogil
    cdef inline int64_t _local_default(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil
    cdef inline bint _vector(self) noexcept nogil
    cdef Py_ssize_t _scan(self, Py_ssize_t c, bint hard_keys, bint whole, bint soft_empty,
                          bint track_taints, bint track_aff, int64_t* mt, int64_t* ma,
                          int64_t* hi, int64_t* lo) noexcept nogil
    cdef void _query(self, Py_ssize_t c, ks_single* q) noexcept nogil
    cdef int64_t _fixed_max(self, Py_ssize_t f) noexcept nogil
    cdef const int32_t* _taint_rows(self, Py_ssize_t t, Py_ssize_t* count) noexcept nogil
    cdef Py_ssize_t _single_bounded(self, Py_ssize_t c, const uint64_t* member, bint taints,
                                    int64_t* score, int64_t* ties) noexcept nogil
    cdef void _twins_build(self) noexcept nogil
    cdef void _untwinned_scan(self, Py_ssize_t c, const uint64_t* member, int64_t mt,
                              bint ttab, const int64_t* tsc, int64_t* best, int64_t* cnt,
                              int64_t* ntied, int64_t* twin) noexcept nogil
    cdef void _twin_move(self, Py_ssize_t n) noexcept nogil
    cdef const uint64_t* _static_bits(self, Py_ssize_t st) noexcept nogil
    cdef int64_t _value_bits(self, bint fixed, Py_ssize_t f) noexcept nogil
    cdef void _finish(self, Py_ssize_t c, Py_ssize_t nf, bint local, bint soft_empty,
                      bint track_taints, bint track_aff, int64_t* mt, int64_t* ma,
                      int64_t* hi, int64_t* lo) noexcept nogil
    cdef inline bint _ports_taken(self, Py_ssize_t c) noexcept nogil
    cdef inline bint _port_clash(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil
    cdef void _local_rows(self, Py_ssize_t c, Py_ssize_t nf) noexcept nogil
    cdef Py_ssize_t _key_rows(self, Py_ssize_t c, bint hard) noexcept nogil
    cdef inline int64_t _total(self, Py_ssize_t s, Py_ssize_t c, Py_ssize_t n) noexcept nogil
    cdef void _tree_set(self, Py_ssize_t s, Py_ssize_t n, int64_t v) noexcept nogil
    cdef void _tree_build(self, Py_ssize_t s) noexcept nogil
    cdef int64_t _tree_range(self, Py_ssize_t s, Py_ssize_t lo, Py_ssize_t hi,
                             int64_t* count) noexcept nogil
    cdef int64_t _tree_max(self, Py_ssize_t s, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil
    cdef Py_ssize_t _tree_pick(self, Py_ssize_t s, Py_ssize_t lo, Py_ssize_t hi,
                               int64_t target, int64_t k) noexcept nogil
    cdef Py_ssize_t _tree_first(self, Py_ssize_t s, Py_ssize_t lo, int64_t target) noexcept nogil
    cdef bint _maxima(self, Py_ssize_t s, Py_ssize_t c) noexcept nogil
    cdef void _refresh_totals(self, Py_ssize_t s, Py_ssize_t c) noexcept nogil
    cdef const ks_extra* _extra(self, Py_ssize_t c, Py_ssize_t nf) noexcept nogil
    cdef void _rebuild(self, Py_ssize_t s, Py_ssize_t c) noexcept nogil
    cdef void _sync(self, Py_ssize_t s, Py_ssize_t c) noexcept nogil
    cdef void _slot_ready(self, Py_ssize_t s) noexcept nogil
    cdef Py_ssize_t _slot(self, Py_ssize_t c, Py_ssize_t p) noexcept nogil
    cdef void _apply(self, Py_ssize_t c, Py_ssize_t n, int sign) noexcept nogil
    cdef void _spread_prepare(self, Py_ssize_t c) noexcept nogil
    cdef inline int _spread_reason(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil
    cdef bint _spread_empty(self, Py_ssize_t c, bint hard) noexcept nogil
    cdef inline int _spread_keys(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil
    cdef bint _domain(self, Py_ssize_t c) noexcept nogil
    cdef void _ipa_prepare(self, Py_ssize_t c) noexcept nogil
    cdef inline int _ipa_reason(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil
    cdef Py_ssize_t _soft_rows(self, Py_ssize_t c) noexcept nogil
    cdef inline bint _narrowed(self, Py_ssize_t c, Py_ssize_t n, bint hard, bint hard_empty,
                               bint ipa_filter) noexcept nogil
    cdef void _terms(self, Py_ssize_t c, bint* hard, bint* soft, bint* hard_empty,
                     bint* soft_empty, bint* ipa_filter, bint* ipa_score) noexcept nogil
    cdef Py_ssize_t _place_spread(self, Py_ssize_t s, Py_ssize_t c, int64_t* score,
                                  int64_t* ties) noexcept nogil
    cdef inline int64_t _ipa_raw(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil
    cdef Py_ssize_t _group_key(self, Py_ssize_t c) noexcept nogil
    cdef inline bint _special(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil
    cdef void _group_layout(self, Py_ssize_t s, Py_ssize_t c) noexcept nogil
    cdef bint _group_order(self, Py_ssize_t s, Py_ssize_t c, Py_ssize_t key, bint tg,
                           bint ag) noexcept nogil
    cdef bint _group_order_new(self, Py_ssize_t s, Py_ssize_t c, Py_ssize_t key, bint tg,
                               bint ag) noexcept nogil
    cdef void _mark_special(self, Py_ssize_t s, Py_ssize_t q) noexcept nogil
    cdef void _group_row(self, Py_ssize_t s, Py_ssize_t c, Py_ssize_t n) noexcept nogil
    cdef inline int64_t _norm_terms(self, int64_t tv, int64_t mt, int64_t av,
                                    int64_t ma) noexcept nogil
    cdef Py_ssize_t _place_grouped(self, Py_ssize_t s, Py_ssize_t c, int64_t* score,
                                   int64_t* ties) noexcept nogil
    cdef void _consider_group(self, Py_ssize_t s, Py_ssize_t gs, Py_ssize_t ge, int64_t m,
                              int64_t cand, TiePick* pick) noexcept nogil
    cdef Py_ssize_t _pick_group(self, Py_ssize_t s, TiePick* pick, int64_t* score,
                                int64_t* ties) noexcept nogil
    cdef void _zone_layout(self, Py_ssize_t s, Py_ssize_t c) noexcept nogil
    cdef Py_ssize_t _place_zone(self, Py_ssize_t s, Py_ssize_t c, int64_t* score,
                                int64_t* ties) noexcept nogil
    cdef Py_ssize_t _place_single(self, Py_ssize_t c, int64_t* score,
                                  int64_t* ties) noexcept nogil
    cdef void _host_zone_rows(self, Py_ssize_t c, Py_ssize_t* jh, Py_ssize_t* jz) noexcept nogil
    cdef void _host_zone_layout(self, Py_ssize_t s, Py_ssize_t c) noexcept nogil
    cdef Py_ssize_t _h_after(self, Py_ssize_t s, Py_ssize_t lo, Py_ssize_t hi, int32_t h) noexcept nogil
    cdef void _host_move(self, Py_ssize_t s, Py_ssize_t c, Py_ssize_t n, int sign) noexcept nogil
    cdef Py_ssize_t _place_host_zone(self, Py_ssize_t s, Py_ssize_t c, int64_t* score,
                                     int64_t* ties) noexcept nogil
    cdef void _prepare_filters(self, Py_ssize_t c, bint* spread, bint* ipa) noexcept nogil
    cdef bint _count_ports_fit(self, Py_ssize_t p, Py_ssize_t c, Py_ssize_t n) noexcept nogil
    cdef void _diagnose(self, Py_ssize_t p, Py_ssize_t c) noexcept nogil
    cdef inline void _diagnose_row(self, Py_ssize_t p, Py_ssize_t c, Py_ssize_t n, bint spread,
                                   bint ipa) noexcept nogil
    cdef void _diagnose_twins(self, Py_ssize_t p, Py_ssize_t c, bint spread,
                              bint ipa) noexcept nogil
    cdef Py_ssize_t _count_feasible(self, Py_ssize_t c, Py_ssize_t limit) noexcept nogil
    cdef bint _nominated_fits(self, Py_ssize_t c, Py_ssize_t n) noexcept nogil
    cdef void _run(self) noexcept nogil
