/* Per-row loops of the burst kernel (core/_place.pyx) written as plain C so that the
 * compiler vectorises them: no Python object, no branch in the loop body.
 *
 * On x86-64 with GCC >= 11 each function is built twice (target_clones): for CPUs with
 * AVX-512 (x86-64-v4: 64-bit gathers, int64 <-> double conversions, int64 products) and for
 * any x86-64 CPU; the loader picks one at start. Both clones compute the same values: every
 * operation is an IEEE double or int64 operation that SIMD lanes do exactly as scalar code
 * does, and contraction into fused multiply-adds is off.
 */
#ifndef KUBESALVO_SCAN_H
#define KUBESALVO_SCAN_H

#include <math.h>
#include <stdint.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && __GNUC__ >= 11
#define KS_CLONES __attribute__((target_clones("arch=x86-64-v4", "default"), \
                                 optimize("no-trapping-math", "fp-contract=off")))
#else
#define KS_CLONES
#endif

#define KS_BLOCK 256

#if defined(__GNUC__)
#define KS_INLINE __attribute__((always_inline))
#else
#define KS_INLINE
#endif

/* What the per-pod scans read of a node row, in one 64-byte line: allocatable, requested
 * and non-zero requested cpu (millicores) and memory (bytes), and 1 / allocatable (0 where
 * none). The kernel keeps it in step with its requested columns. */
typedef struct {
    int64_t a0, a1, r0, r1, z0, z1;
    double inv0, inv1;
} ks_hot;

/* The local score's operands of up to KS_BLOCK rows, packed (contiguous arrays, so that
 * ks_local_block's loop vectorises without gathers): allocatable, requested and non-zero
 * requested cpu / memory with the pod's requests added, 1 / allocatable, fixed scores. */
typedef struct {
    int64_t a0[KS_BLOCK], a1[KS_BLOCK], r0[KS_BLOCK], r1[KS_BLOCK];
    int64_t u0[KS_BLOCK], u1[KS_BLOCK], fix[KS_BLOCK];
    double i0[KS_BLOCK], i1[KS_BLOCK];
} ks_ops;

/* The pod's requests that ks_pack adds to a row's. */
typedef struct {
    int64_t req_cpu, req_mem, nz_cpu, nz_mem;
} ks_pod;

/* Row h's operands into slot k of o (the fixed score is the caller's). */
static inline void ks_pack(ks_ops *o, int64_t k, const ks_hot *h, const ks_pod *p)
{
    o->a0[k] = h->a0;
    o->a1[k] = h->a1;
    o->r0[k] = h->r0 + p->req_cpu;
    o->r1[k] = h->r1 + p->req_mem;
    o->u0[k] = h->z0 + p->nz_cpu;
    o->u1[k] = h->z1 + p->nz_mem;
    o->i0[k] = h->inv0;
    o->i1[k] = h->inv1;
}

/* The arithmetic of ks_local_rows on the first m packed rows of o. */
KS_CLONES
static void ks_local_block(int64_t m, const ks_ops *restrict o, int64_t w_fit, int64_t w_bal,
                           int64_t *restrict out, uint8_t *restrict redo)
{
    const int64_t big = (int64_t)1 << 52;
    for (int64_t i = 0; i < m; i++) {
        int64_t a0 = o->a0[i], a1 = o->a1[i], u0 = o->u0[i], u1 = o->u1[i];
        int64_t r0 = o->r0[i], r1 = o->r1[i];
        double i0 = o->i0[i], i1 = o->i1[i];
        int64_t x0 = (a0 - u0) * 100, x1 = (a1 - u1) * 100;
        int64_t k0 = (int64_t)((double)x0 * i0), k1 = (int64_t)((double)x1 * i1);
        k0 -= (k0 * a0 > x0);
        k0 += ((k0 + 1) * a0 <= x0);
        k1 -= (k1 * a1 > x1);
        k1 += ((k1 + 1) * a1 <= x1);
        k0 = u0 > a0 ? 0 : k0;
        k1 = u1 > a1 ? 0 : k1;
        double f0 = r0 >= a0 ? 1.0 : (double)r0 * i0;
        double f1 = r1 >= a1 ? 1.0 : (double)r1 * i1;
        double x = (1.0 - fabs((f0 - f1) * 0.5)) * 100.0;
        int64_t k = (int64_t)x;
        int bad = (x - (double)k <= 1e-9) | ((double)(k + 1) - x <= 1e-9) | (a0 <= 0) | (a1 <= 0)
                  | (x0 >= big) | (x1 >= big) | (r0 >= big) | (r1 >= big);
        redo[i] = (uint8_t)bad;
        out[i] = o->fix[i] + w_fit * ((k0 + k1) >> 1) + w_bal * k;
    }
}

/* The local score (NodeResourcesFit LeastAllocated on cpu and memory with equal weights,
 * plus NodeResourcesBalancedAllocation, plus the class's fixed scores) of one pod on each
 * of the rows rows[0..nf), into out[i]:
 *
 *   fixed[n] + w_fit * ((la(cpu) + la(memory)) >> 1) + w_bal * balanced
 *   la(r)    = (alloc - used) * 100 / alloc, 0 when used > alloc (used: non-zero requests)
 *   balanced = int((1 - |f_cpu - f_memory| / 2) * 100), f = min(requested / alloc, 1)
 *
 * Divisions are multiplications by inv (1 / alloc per row): the integer quotient is then
 * corrected by one either way, exactly; the balanced fraction is within an ulp or two, so a
 * result within 1e-9 of an integer (where truncation could differ from upstream's
 * division) is flagged in redo[i] for the caller to recompute, as are rows with a zero
 * allocatable or operands too large for exact doubles. */
static void ks_local_rows(const int32_t *restrict rows, int64_t nf,
                          const ks_hot *restrict hot, const int32_t *restrict fixed,
                          int64_t nz_cpu, int64_t nz_mem, int64_t req_cpu, int64_t req_mem,
                          int64_t w_fit, int64_t w_bal,
                          int64_t *restrict out, uint8_t *restrict redo)
{
    ks_ops o;
    const ks_pod pod = {req_cpu, req_mem, nz_cpu, nz_mem};
    for (int64_t b = 0; b < nf; b += KS_BLOCK) {
        int64_t m = nf - b < KS_BLOCK ? nf - b : KS_BLOCK;
        for (int64_t i = 0; i < m; i++) {  /* gather the block's operands, row by row */
            int64_t n = rows[b + i];
            ks_pack(&o, i, hot + n, &pod);
            o.fix[i] = fixed[n];
        }
        ks_local_block(m, &o, w_fit, w_bal, out + b, redo + b);
    }
}

/* The largest of v[rows[i]] over i < nf, at least 0. */
static int64_t ks_max16(const int32_t *restrict rows, int64_t nf, const int16_t *restrict v)
{
    int64_t m = 0;
    for (int64_t i = 0; i < nf; i++)
        m = v[rows[i]] > m ? v[rows[i]] : m;
    return m;
}

static int64_t ks_max32(const int32_t *restrict rows, int64_t nf, const int32_t *restrict v)
{
    int64_t m = 0;
    for (int64_t i = 0; i < nf; i++)
        m = v[rows[i]] > m ? v[rows[i]] : m;
    return m;
}

/* PodTopologySpread's raw scores when its soft constraints count no pod anywhere (every
 * domain count is 0): rawsp[n] = the summed maxSkew - 1 of the constraints whose key row
 * n has; -1 (scoring 0) for a row missing one when require_all. *hi / *lo: the range over
 * the rows that score (lo -1 while none). */
static void ks_soft_empty(const int32_t *restrict rows, int64_t nf,
                          const int32_t *const *keys, const int64_t *skews, int64_t nk,
                          int require_all, int64_t *restrict rawsp, int64_t *hi, int64_t *lo)
{
    int64_t h = *hi, l = *lo;
    for (int64_t i = 0; i < nf; i++) {
        int32_t n = rows[i];
        int64_t t = 0;
        for (int64_t j = 0; j < nk; j++) {
            if (keys[j][n] >= 0) {
                t += skews[j] - 1;
            } else if (require_all) {
                t = -1;
                break;
            }
        }
        rawsp[n] = t;
        if (t >= 0) {
            h = t > h ? t : h;
            l = (l < 0 || t < l) ? t : l;
        }
    }
    *hi = h;
    *lo = l;
}

/* PodTopologySpread's normalised score of raw r over the feasible rows' range hi..lo
 * (reversed onto 0..100; flat: every counted row scores 100; r -1: not counted, 0). */
static inline int64_t ks_spread_norm(int64_t r, int flat, int64_t hi, int64_t lo)
{
    return r < 0 ? 0 : flat ? 100 : 100 * (hi + lo - r) / hi;
}

/* InterPodAffinity's normalised score of raw r over the feasible rows' range ilo..ihi
 * (ihi > ilo; else every row scores 0). */
static inline int64_t ks_ipa_norm(int64_t r, int64_t ihi, int64_t ilo)
{
    return (int64_t)(100.0 * ((double)(r - ilo) / (double)(ihi - ilo)));
}

/* The kernel's random stream for ties (kube-scheduler's selectHost picks uniformly among
 * the nodes sharing the best total): splitmix64, one 64-bit state the Python side seeds
 * and keeps across bursts (core/ties.py). */
static inline uint64_t ks_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* A uniform integer in [0, n), n >= 1: Lemire's multiply-shift, the few biased products
 * redrawn, so exactly uniform. */
static inline int64_t ks_below(uint64_t *state, int64_t n)
{
    uint64_t un = (uint64_t)n, x = ks_next(state);
    unsigned __int128 m = (unsigned __int128)x * un;
    if ((uint64_t)m < un) {
        uint64_t floor = -un % un;
        while ((uint64_t)m < floor) {
            x = ks_next(state);
            m = (unsigned __int128)x * un;
        }
    }
    return (int64_t)(m >> 64);
}

/* Reservoir sampling of one row among the ties met in a scan, without a draw per tie:
 * after i ties the next one to replace the pick is the m-th with P(m > j) = i / j (j >= i),
 * which floor(i / u) + 1 gives for u uniform in (0, 1). Returns that index (> i), capped
 * far beyond any row count. */
static inline int64_t ks_skip(uint64_t *state, int64_t i)
{
    double u = ((double)(ks_next(state) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    double m = (double)i / u;
    return m >= 4.0e18 ? (int64_t)4e18 : (int64_t)m + 1;
}

/* A scan's reservoir over the rows of the best total so far. */
typedef struct {
    int64_t best;   /* the best total so far (-1 before any row) */
    int64_t row;    /* the row picked among those holding it */
    int64_t ties;   /* how many hold it */
    int64_t next;   /* the tie (by count) that may replace the pick next */
    int drawn;      /* next was drawn (else it is 2, the first tie, where the draw is made:
                       a scan without ties draws nothing) */
} ks_res;

static inline void ks_res_init(ks_res *r)
{
    r->best = -1;
    r->row = -1;
    r->ties = 0;
    r->next = 2;
    r->drawn = 0;
}

/* One more row n of total t. The tie count moves without a branch (ties are common and
 * mixed with lower totals); only the rare tie that reaches next branches. */
static inline void ks_offer(ks_res *r, int64_t t, int64_t n, uint64_t *state)
{
    if (t > r->best) {
        r->best = t;
        r->row = n;
        r->ties = 1;
        r->next = 2;
        r->drawn = 0;
        return;
    }
    r->ties += t == r->best;
    if (r->ties == r->next) {  /* only this row can have raised the count to next */
        if (!r->drawn) {
            r->drawn = 1;
            r->next = ks_skip(state, 1);
            if (r->next != 2)
                return;
        }
        r->row = n;
        r->next = ks_skip(state, r->ties);
    }
}

/* One more group of w rows of total t (w >= 1) in a reservoir over rows: the group is
 * picked with probability w / the rows tied so far, so that each tied row is as likely
 * (the caller then draws one of its rows). Returns 1 when it is picked. As ks_offer, by
 * skips: after a pick at cumulative weight S, the next pick is the group whose cumulative
 * weight reaches floor(S / u) + 1 (ks_skip), drawn at the first tie; so a run of ties
 * draws O(log) times, not once per group. */
static inline int ks_offer_group(ks_res *r, int64_t t, int64_t w, uint64_t *state)
{
    if (t > r->best) {
        r->best = t;
        r->ties = w;
        r->next = w + 1;
        r->drawn = 0;
        return 1;
    }
    if (t < r->best)
        return 0;
    int64_t before = r->ties;
    r->ties += w;
    if (r->ties < r->next)
        return 0;
    if (!r->drawn) {
        r->drawn = 1;
        r->next = ks_skip(state, before);
        if (r->ties < r->next)
            return 0;
    }
    r->next = ks_skip(state, r->ties);
    return 1;
}

/* Node i of a max-tree from its two children. A node is two int64 at t[2i] (the maximum
 * below it) and t[2i + 1] (how many leaves hold it), so that a node's children share a
 * cache line. */
static inline void ks_tree_node(int64_t *restrict t, int64_t i)
{
    const int64_t *k = t + 4 * i; /* children 2i and 2i + 1 */
    int64_t a = k[0], b = k[2];
    int64_t m = a >= b ? a : b;
    t[2 * i] = m;
    t[2 * i + 1] = (a == m ? k[1] : 0) + (b == m ? k[3] : 0);
}

/* The inner nodes of a max-tree of the given leaves (a power of two) over the first used
 * leaves, level by level. The leaves beyond used are padding, -1 for good (a class's
 * rows take positions below used), and so are the nodes above padding alone: they are
 * left as they are (their counts are never read: no pick targets -1). */
static void ks_tree_build(int64_t *restrict t, int64_t leaves, int64_t used)
{
    for (int64_t lo = leaves >> 1, span = 2; lo >= 1; lo >>= 1, span <<= 1) {
        int64_t hi = lo + (used + span - 1) / span;
        for (int64_t i = lo; i < hi; i++)
            ks_tree_node(t, i);
    }
}

/* Leaf pos of the max-tree takes value v; its ancestors follow. */
static inline void ks_tree_set(int64_t *restrict t, int64_t leaves, int64_t pos, int64_t v)
{
    int64_t i = pos + leaves;
    t[2 * i] = v;
    for (i >>= 1; i >= 1; i >>= 1)
        ks_tree_node(t, i);
}

/* One of the cnt >= 1 tied rows tb[0..cnt) (in static row order): tb[ks_below(cnt)], no
 * draw for a single row. */
static inline int64_t ks_pick_tied(const int32_t *tb, int64_t cnt, uint64_t *state)
{
    return tb[cnt > 1 ? ks_below(state, cnt) : 0];
}

/* The score channels beyond the first of each normalisation kind (the REVERSE_MAX one is
 * ``taints``, the MAX one ``aff`` below), those that vary for the pod's class: per
 * channel its raw values by row, its weight, its kind (rev: REVERSE_MAX) and the largest
 * raw value over the pod's feasible rows. */
enum { KS_EXTRA = 8 };
typedef struct {
    const int32_t *raw[KS_EXTRA];
    int64_t w[KS_EXTRA], max[KS_EXTRA];
    int rev[KS_EXTRA];
    int64_t n;
} ks_extra;

/* One channel's normalised score, as kube-scheduler's DefaultNormalizeScore: x / max
 * scaled to 0..100 (0 everywhere when max is 0), reversed for REVERSE_MAX (100 everywhere
 * when max is 0). Raw values are non-negative: C's division is the floor. */
static inline int64_t ks_norm(int64_t x, int64_t mx, int rev)
{
    if (rev)
        return mx == 0 ? 100 : 100 - 100 * x / mx;
    return mx > 0 ? 100 * x / mx : 0;
}

/* The weighted scores of the extra channels on row n. */
static inline int64_t ks_extra_terms(const ks_extra *x, int64_t n)
{
    int64_t t = 0;
    for (int64_t k = 0; k < x->n; k++)
        t += x->w[k] * ks_norm(x->raw[k][n], x->max[k], x->rev[k]);
    return t;
}

/* The best row of rows[0..nf) for one pod: the largest total, ties picked uniformly (the
 * reservoir of ks_offer, drawing from *state). A row's total is its local score (loc[i]
 * by position when loc_by_pos, else loc[n]) plus the normalised scores: TaintToleration
 * (tsc[count] when the table is given, else computed; mt the largest count),
 * NodeAffinity's preferred terms (ma the largest sum), PodTopologySpread's soft
 * constraints (when rawsp is given: raw hi..lo reversed onto 0..100, 0 for rawsp -1),
 * InterPodAffinity's preferred terms (when rawipa is given and ihi > ilo), the extra score
 * channels (when x is given: ks_extra_terms). *score gets
 * the total, *ties the rows holding it; returns the row, -1 when nf is 0.
 *
 * The pick is one draw: ks_below(ties) indexes the tied rows in the order of rows (tb,
 * nf + 1 slots, collects them), and nothing is drawn without a tie. A search that visits
 * rows in another order (ks_pick_tied) reproduces it from the same tied set. */
static inline KS_INLINE int64_t
ks_best_row_in(const int32_t *restrict rows, int64_t nf, const int64_t *restrict loc,
               int loc_by_pos, const int16_t *restrict taints, const int64_t *tsc,
               int64_t w_taint, int64_t mt, const int32_t *restrict aff, int64_t w_aff,
               int64_t ma, const int64_t *restrict rawsp, int64_t w_spread, int64_t hi,
               int64_t lo, const int64_t *restrict rawipa, int64_t w_ipa, int64_t ihi,
               int64_t ilo, const ks_extra *x, int32_t *restrict tb, uint64_t *state,
               int64_t *score, int64_t *ties)
{
    int64_t best = -1, cnt = 0;
    int flat = hi == 0 || hi == lo; /* every counted row scores 100 for spread */
    for (int64_t i = 0; i < nf; i++) {
        int64_t n = rows[i];
        int64_t t = loc[loc_by_pos ? i : n];
        if (tsc)
            t += tsc[taints[n]];
        else if (w_taint)
            t += w_taint * (mt == 0 ? 100 : 100 - 100 * taints[n] / mt);
        if (w_aff && ma > 0)
            t += w_aff * (100 * aff[n] / ma);
        if (rawsp)
            t += w_spread * ks_spread_norm(rawsp[n], flat, hi, lo);
        if (rawipa && ihi > ilo)
            t += w_ipa * ks_ipa_norm(rawipa[n], ihi, ilo);
        if (x)
            t += ks_extra_terms(x, n);
        if (t > best) {
            best = t;
            cnt = 0;
        }
        tb[cnt] = (int32_t)n; /* kept only when it ties (a lower total is overwritten) */
        cnt += t == best;
    }
    *score = best;
    *ties = cnt;
    return cnt == 0 ? -1 : ks_pick_tied(tb, cnt, state);
}

static int64_t ks_best_row(const int32_t *restrict rows, int64_t nf,
                           const int64_t *restrict loc, int loc_by_pos,
                           const int16_t *restrict taints, const int64_t *tsc,
                           int64_t w_taint, int64_t mt,
                           const int32_t *restrict aff, int64_t w_aff, int64_t ma,
                           const int64_t *restrict rawsp, int64_t w_spread, int64_t hi, int64_t lo,
                           const int64_t *restrict rawipa, int64_t w_ipa, int64_t ihi, int64_t ilo,
                           const ks_extra *x, int32_t *restrict tb, uint64_t *state,
                           int64_t *score, int64_t *ties)
{
    /* x is NULL unless the profile has further score channels: the loop is compiled
     * once for each case, so that the common one tests nothing for it per row. */
    if (x)
        return ks_best_row_in(rows, nf, loc, loc_by_pos, taints, tsc, w_taint, mt, aff, w_aff,
                              ma, rawsp, w_spread, hi, lo, rawipa, w_ipa, ihi, ilo, x, tb,
                              state, score, ties);
    return ks_best_row_in(rows, nf, loc, loc_by_pos, taints, tsc, w_taint, mt, aff, w_aff, ma,
                          rawsp, w_spread, hi, lo, rawipa, w_ipa, ihi, ilo, NULL, tb, state,
                          score, ties);
}

/* One pod's first pass over the rows of its static filters (a class's only pod in a
 * chunk): NodeResourcesFit and the hard spread constraints' keys (when those count no pod;
 * NodePorts and the other filters are the caller's), then, for the rows that pass, the
 * local scores, the maxima of the normalised scores and the empty-count spread raw scores.
 * Block by block: the filter loop gathers the local score's operands of the rows it keeps,
 * and a block's rows are still in the first-level cache for the later steps. */
typedef struct {
    /* the rows and their state */
    const int32_t *srows;
    int64_t ns;
    const ks_hot *hot;
    const int64_t *podfree;
    const int64_t *alloc, *req; /* rows x nres, for the further fit columns */
    int64_t nres;
    /* the pod: requests, checked fit columns (besides cpu, memory, pods: xcols) */
    const int64_t *creq;
    int64_t req_cpu, req_mem, req_pods, nz_cpu, nz_mem;
    int chk_cpu, chk_mem, chk_pods;
    const int32_t *xcols;
    int64_t nx;
    const int32_t *const *hkeys; /* dom rows of the hard constraints' keys */
    int64_t nhk;
    /* scores: local (when loc is set), maxima (when taints / aff are set), spread raw
     * scores of constraints counting no pod (when rawsp is set) */
    const int32_t *fixed;
    int64_t w_fit, w_bal;
    const int16_t *taints;
    const int32_t *aff;
    const int32_t *const *skeys;
    const int64_t *skews;
    int64_t nsk;
    int require_all;
    /* outputs: rows[0..nf) feasible, loc / redo by position, rawsp by row, the maxima */
    int32_t *rows;
    int64_t *loc;
    uint8_t *redo;
    int64_t *rawsp;
    int64_t mt, ma, hi, lo;
    /* twin rows (_twins.h; tgroup NULL: none): per row its group (-1: none) and, in the
     * bitset tin, whether its state is still the group's; per group whether a row of it
     * passes the resource filters (gfit) and its local score less the fixed score (gloc,
     * with gredo its redo flag): every row still in the group shares them, so the scan
     * reads neither the row's state nor computes its score */
    const int32_t *tgroup;
    const uint64_t *tin;
    const uint8_t *gfit;
    const int64_t *gloc;
    const uint8_t *gredo;
    int64_t twinned; /* output: the feasible rows whose terms came from their group */
} ks_single;

static int64_t ks_single_scan_twins(ks_single *q);

static int64_t ks_single_scan(ks_single *q)
{
    if (q->tgroup)
        return ks_single_scan_twins(q);
    const int64_t never = INT64_MAX / 4; /* an unchecked request compares against nothing */
    int64_t qc = q->chk_cpu ? q->req_cpu : -never, qm = q->chk_mem ? q->req_mem : -never;
    int64_t qp = q->chk_pods ? q->req_pods : -never;
    ks_ops o;
    const ks_pod pod = {q->req_cpu, q->req_mem, q->nz_cpu, q->nz_mem};
    int64_t nf = 0;
    for (int64_t b = 0; b < q->ns; b += KS_BLOCK) {
        int64_t m = q->ns - b < KS_BLOCK ? q->ns - b : KS_BLOCK;
        int32_t *rows = q->rows + nf;
        int64_t k = 0;
        /* filters, gathering the local score's operands of the rows that pass */
        for (int64_t i = 0; i < m; i++) {
            int32_t n = q->srows[b + i];
            const ks_hot *h = q->hot + n;
            int fits = (h->r0 + qc <= h->a0) & (h->r1 + qm <= h->a1) & (qp <= q->podfree[n]);
            for (int64_t j = 0; j < q->nhk; j++)
                fits &= q->hkeys[j][n] >= 0;
            if (fits && q->nx) {
                const int64_t *a = q->alloc + (int64_t)n * q->nres;
                const int64_t *r = q->req + (int64_t)n * q->nres;
                for (int64_t j = 0; j < q->nx; j++) {
                    int32_t col = q->xcols[j];
                    fits &= r[col] + q->creq[col] <= a[col];
                }
            }
            rows[k] = n;
            ks_pack(&o, k, h, &pod);
            k += fits;
        }
        if (q->loc) {
            for (int64_t i = 0; i < k; i++)
                o.fix[i] = q->fixed[rows[i]];
            ks_local_block(k, &o, q->w_fit, q->w_bal, q->loc + nf, q->redo + nf);
        }
        if (q->taints) {
            int64_t v = ks_max16(rows, k, q->taints);
            q->mt = v > q->mt ? v : q->mt;
        }
        if (q->aff) {
            int64_t v = ks_max32(rows, k, q->aff);
            q->ma = v > q->ma ? v : q->ma;
        }
        if (q->rawsp)
            ks_soft_empty(rows, k, q->skeys, q->skews, q->nsk, q->require_all, q->rawsp, &q->hi,
                          &q->lo);
        nf += k;
    }
    return nf;
}

/* ks_single_scan where twin rows are known (q->tgroup): a row still in its group takes
 * the group's filter verdict and local score (plus its own fixed score and hard keys);
 * the other rows are filtered and scored as ks_single_scan does, their operands packed
 * apart so that ks_local_block stays one vectorised loop, the two merged in row order. */
static int64_t ks_single_scan_twins(ks_single *q)
{
    const int64_t never = INT64_MAX / 4;
    int64_t qc = q->chk_cpu ? q->req_cpu : -never, qm = q->chk_mem ? q->req_mem : -never;
    int64_t qp = q->chk_pods ? q->req_pods : -never;
    ks_ops o;
    int64_t ploc[KS_BLOCK];
    uint8_t predo[KS_BLOCK];
    int32_t tg[KS_BLOCK];
    const ks_pod pod = {q->req_cpu, q->req_mem, q->nz_cpu, q->nz_mem};
    int64_t nf = 0;
    for (int64_t b = 0; b < q->ns; b += KS_BLOCK) {
        int64_t m = q->ns - b < KS_BLOCK ? q->ns - b : KS_BLOCK;
        int32_t *rows = q->rows + nf;
        int64_t k = 0, kp = 0;
        for (int64_t i = 0; i < m; i++) {
            int32_t n = q->srows[b + i];
            int32_t g = q->tgroup[n];
            int fits;
            if (g >= 0 && !((q->tin[n >> 6] >> (n & 63)) & 1))
                g = -1;
            if (g >= 0) {
                fits = q->gfit[g];
            } else {
                const ks_hot *h = q->hot + n;
                fits = (h->r0 + qc <= h->a0) & (h->r1 + qm <= h->a1) & (qp <= q->podfree[n]);
                if (fits && q->nx) {
                    const int64_t *a = q->alloc + (int64_t)n * q->nres;
                    const int64_t *r = q->req + (int64_t)n * q->nres;
                    for (int64_t j = 0; j < q->nx; j++) {
                        int32_t col = q->xcols[j];
                        fits &= r[col] + q->creq[col] <= a[col];
                    }
                }
            }
            for (int64_t j = 0; j < q->nhk; j++)
                fits &= q->hkeys[j][n] >= 0;
            if (!fits)
                continue;
            rows[k] = n;
            tg[k++] = g;
            if (g < 0 && q->loc) {
                ks_pack(&o, kp, q->hot + n, &pod);
                o.fix[kp++] = q->fixed[n];
            }
        }
        if (q->loc) {
            ks_local_block(kp, &o, q->w_fit, q->w_bal, ploc, predo);
            for (int64_t i = 0, j = 0; i < k; i++) {
                int32_t g = tg[i];
                if (g >= 0) {
                    q->loc[nf + i] = q->fixed[rows[i]] + q->gloc[g];
                    q->redo[nf + i] = q->gredo[g];
                } else {
                    q->loc[nf + i] = ploc[j];
                    q->redo[nf + i] = predo[j++];
                }
            }
        }
        for (int64_t i = 0; i < k; i++)
            q->twinned += tg[i] >= 0;
        if (q->taints) {
            int64_t v = ks_max16(rows, k, q->taints);
            q->mt = v > q->mt ? v : q->mt;
        }
        if (q->aff) {
            int64_t v = ks_max32(rows, k, q->aff);
            q->ma = v > q->ma ? v : q->ma;
        }
        if (q->rawsp)
            ks_soft_empty(rows, k, q->skeys, q->skews, q->nsk, q->require_all, q->rawsp, &q->hi,
                          &q->lo);
        nf += k;
    }
    return nf;
}

/* For ks_single_scan_twins: per group g < ngroups with a row still in it (wit[g], else
 * -1), whether that row passes q's resource filters (the hard keys are per row) and its
 * local score less the fixed score, as ks_single_scan computes them. */
static void ks_twin_terms(const ks_single *q, const int32_t *wit, int64_t ngroups,
                          uint8_t *gfit, int64_t *gloc, uint8_t *gredo)
{
    const int64_t never = INT64_MAX / 4;
    int64_t qc = q->chk_cpu ? q->req_cpu : -never, qm = q->chk_mem ? q->req_mem : -never;
    int64_t qp = q->chk_pods ? q->req_pods : -never;
    const ks_pod pod = {q->req_cpu, q->req_mem, q->nz_cpu, q->nz_mem};
    ks_ops o;
    for (int64_t g = 0; g < ngroups; g++) {
        int32_t n = wit[g] >= 0 ? wit[g] : 0;
        const ks_hot *h = q->hot + n;
        int fits = (h->r0 + qc <= h->a0) & (h->r1 + qm <= h->a1) & (qp <= q->podfree[n]);
        if (fits && q->nx) {
            const int64_t *a = q->alloc + (int64_t)n * q->nres;
            const int64_t *r = q->req + (int64_t)n * q->nres;
            for (int64_t j = 0; j < q->nx; j++) {
                int32_t col = q->xcols[j];
                fits &= r[col] + q->creq[col] <= a[col];
            }
        }
        gfit[g] = (uint8_t)(fits && wit[g] >= 0);
        ks_pack(&o, g, h, &pod);
        o.fix[g] = 0;
    }
    ks_local_block(ngroups, &o, q->w_fit, q->w_bal, gloc, gredo);
}

/* Whether row n passes ks_single_scan's filters for q's pod (the same comparisons, one
 * row): the bounded search (ks_levels) filters the rows it visits with it. */
static inline int ks_fits(const ks_single *q, int32_t n)
{
    const int64_t never = INT64_MAX / 4;
    int64_t qc = q->chk_cpu ? q->req_cpu : -never, qm = q->chk_mem ? q->req_mem : -never;
    int64_t qp = q->chk_pods ? q->req_pods : -never;
    const ks_hot *h = q->hot + n;
    int fits = (h->r0 + qc <= h->a0) & (h->r1 + qm <= h->a1) & (qp <= q->podfree[n]);
    for (int64_t j = 0; j < q->nhk; j++)
        fits &= q->hkeys[j][n] >= 0;
    if (fits && q->nx) {
        const int64_t *a = q->alloc + (int64_t)n * q->nres;
        const int64_t *r = q->req + (int64_t)n * q->nres;
        for (int64_t j = 0; j < q->nx; j++) {
            int32_t col = q->xcols[j];
            fits &= r[col] + q->creq[col] <= a[col];
        }
    }
    return fits;
}

/* The rows by allocatable shape and free-capacity level, for a search of a class's only
 * pod that visits the rows best bound first. A row's level is (lf(cpu) + lf(memory)) >> 1
 * with lf = la of ks_local_block before the pod is added; its shape is its (cpu, memory)
 * allocatable (the first KS_SHAPES - 1 met; later ones, and rows whose operands
 * ks_local_block does not take exactly, share the last shape, at level 100, where the
 * bound assumes nothing of the allocatable). Since floor(u - v) <= floor(u) - floor(v),
 * a pod with non-zero requests p adds at most d = floor(100 * p / allocatable) less to
 * each la of a row of a known shape, so its local score on a row of shape h and level L
 * is at most
 *
 *   max fixed + w_fit * (max(S - d0 - d1, min(100, S) - min(d0, d1), 0) >> 1) + w_bal * 100
 *
 * with S = 2L + 1 >= lf(cpu) + lf(memory) (ks_cell_bound; balanced is at most 100). Each
 * (shape, level) cell is a doubly linked list of rows (the order within a cell is free:
 * the search orders the tied rows it keeps), a row moving in O(1) when its requests
 * change. */
#define KS_LEVELS 101
#define KS_SHAPES 64

typedef struct {
    int32_t *next, *prev, *cell; /* per row; -1 ends a list */
    int32_t *head;               /* KS_SHAPES * KS_LEVELS: the first row of each cell */
    int32_t *count;              /* KS_SHAPES * KS_LEVELS: the rows of each cell */
    int64_t sa0[KS_SHAPES], sa1[KS_SHAPES];
    int64_t nshapes;             /* shapes met (the last, KS_SHAPES - 1, is the catch-all) */
} ks_levels;

static inline int ks_exact(const ks_hot *h)
{
    const int64_t big = ((int64_t)1 << 52) / 100;
    return h->a0 > 0 && h->a1 > 0 && h->a0 < big && h->a1 < big && h->z0 >= 0 && h->z1 >= 0;
}

static inline int64_t ks_level_of(const ks_hot *h)
{
    if (!ks_exact(h))
        return KS_LEVELS - 1;
    int64_t l0 = h->z0 > h->a0 ? 0 : (h->a0 - h->z0) * 100 / h->a0;
    int64_t l1 = h->z1 > h->a1 ? 0 : (h->a1 - h->z1) * 100 / h->a1;
    return (l0 + l1) >> 1;
}

/* Row n's cell: its shape's (found or added) at its level, the catch-all's level 100
 * when the shape is not known or the operands not exact. */
static inline int32_t ks_cell_of(ks_levels *b, const ks_hot *h, int add)
{
    int64_t sh = KS_SHAPES - 1;
    if (ks_exact(h)) {
        for (int64_t i = 0; i < b->nshapes; i++) {
            if (b->sa0[i] == h->a0 && b->sa1[i] == h->a1) {
                sh = i;
                break;
            }
        }
        if (sh == KS_SHAPES - 1 && add && b->nshapes < KS_SHAPES - 1) {
            sh = b->nshapes++;
            b->sa0[sh] = h->a0;
            b->sa1[sh] = h->a1;
        }
    }
    return (int32_t)(sh * KS_LEVELS + (sh == KS_SHAPES - 1 ? KS_LEVELS - 1 : ks_level_of(h)));
}

static inline void ks_levels_insert(ks_levels *b, int32_t n, int32_t c)
{
    b->cell[n] = c;
    b->count[c]++;
    b->prev[n] = -1;
    b->next[n] = b->head[c];
    if (b->head[c] >= 0)
        b->prev[b->head[c]] = n;
    b->head[c] = n;
}

static void ks_levels_build(ks_levels *b, const ks_hot *hot, int64_t rows)
{
    b->nshapes = 0;
    for (int64_t c = 0; c < KS_SHAPES * KS_LEVELS; c++) {
        b->head[c] = -1;
        b->count[c] = 0;
    }
    for (int64_t n = rows - 1; n >= 0; n--)
        ks_levels_insert(b, (int32_t)n, ks_cell_of(b, hot + n, 1));
}

/* Row n leaves its cell (a twin row, _twins.h, is searched through its group instead). */
static inline void ks_levels_unlink(ks_levels *b, int32_t n)
{
    int32_t c = b->cell[n];
    if (b->prev[n] >= 0)
        b->next[b->prev[n]] = b->next[n];
    else
        b->head[c] = b->next[n];
    if (b->next[n] >= 0)
        b->prev[b->next[n]] = b->prev[n];
    b->count[c]--;
    b->cell[n] = -1;
}

/* Row n's requests changed: it moves to its new cell (its shape is unchanged). */
static inline void ks_levels_move(ks_levels *b, const ks_hot *hot, int32_t n)
{
    int32_t c = b->cell[n], sh = c / KS_LEVELS;
    int32_t to = sh == KS_SHAPES - 1 ? c : (int32_t)(sh * KS_LEVELS + ks_level_of(hot + n));
    if (to == c)
        return;
    ks_levels_unlink(b, n);
    ks_levels_insert(b, n, to);
}

/* Row n (in no cell) joins the cell of its shape and level. */
static inline void ks_levels_add(ks_levels *b, const ks_hot *hot, int32_t n)
{
    ks_levels_insert(b, n, ks_cell_of(b, hot + n, 0));
}

/* How much less than lf a pod's non-zero request p can leave la on allocatable a:
 * floor(100 * p / a), 0 where that is not exact. */
static inline int64_t ks_drop(int64_t p, int64_t a)
{
    return (p <= 0 || a <= 0 || p >= ((int64_t)1 << 52) / 100) ? 0 : p * 100 / a;
}

/* The bound of the fit term's ((la(cpu) + la(memory)) >> 1) for the rows of shape sh at
 * level l, for a pod of non-zero requests nz0 / nz1 (the catch-all: l itself). */
static inline int64_t ks_cell_fit(const ks_levels *b, int64_t sh, int64_t l, int64_t nz0,
                                  int64_t nz1)
{
    if (sh == KS_SHAPES - 1)
        return l;
    int64_t d0 = ks_drop(nz0, b->sa0[sh]), d1 = ks_drop(nz1, b->sa1[sh]);
    int64_t s = 2 * l + 1, m = s < 100 ? s : 100, dm = d0 < d1 ? d0 : d1;
    int64_t v = s - d0 - d1;
    v = m - dm > v ? m - dm : v;
    v = v > 0 ? v : 0;
    return v >> 1;
}

/* The rows of cell c that are in the static set (member: a bitset over the rows, NULL:
 * every row) and pass q's filters, into out; returns how many. *seen counts the rows of
 * the cell. */
static int64_t ks_cell_rows(const ks_levels *b, int64_t c, const uint64_t *member,
                            const ks_single *q, int32_t *out, int64_t *seen)
{
    int64_t k = 0, m = 0;
    for (int32_t n = b->head[c]; n >= 0; n = b->next[n], m++) {
        out[k] = n;
        k += (member == NULL || ((member[n >> 6] >> (n & 63)) & 1)) && ks_fits(q, n);
    }
    *seen += m;
    return k;
}

/* One soft PodTopologySpread constraint of a pod, for ks_soft_scores. */
typedef struct {
    const int32_t *dom;     /* per row: the domain of its topology key, -1 without the key */
    const int32_t *counter; /* per row: the pods the constraint counts there */
    const uint8_t *elig;    /* per row: 1 if the row counts (the inclusion policies) */
    int64_t skew, ndom;     /* maxSkew; domains of the key */
    int64_t drow;           /* its row in dcount / dpresent / weights / missing */
    int host;               /* the key is kubernetes.io/hostname: the row's own count */
} ks_soft;

/* x rounded half away from zero (C's round) for 0 <= x < 2**62: x - trunc(x) is exact. */
static inline int64_t ks_round(double x)
{
    int64_t v = (int64_t)x;
    return x - (double)v >= 0.5 ? v + 1 : v;
}

/* The raw PodTopologySpread score ks_soft_scores gives a row with h matching pods of its
 * own in a zone counting zc, for a pod whose soft constraints are one on the hostname
 * (weight wh, maxSkew skew_h) and one on a zone-like key (wz, skew_z) and a node with both
 * keys: the same sum (floating addition commutes), rounded the same way. */
static inline int64_t ks_host_zone_raw(int64_t h, double wh, int64_t skew_h, int64_t zc,
                                       double wz, int64_t skew_z)
{
    double total = 0.0;
    total += (double)h * wh + (double)(skew_h - 1);
    total += (double)zc * wz + (double)(skew_z - 1);
    return ks_round(total);
}

/* The raw score of row n (having the keys it is scored on) for ks_soft_scores, with the
 * constraints' weights given: the sum over the keys row n has of count * weight + maxSkew
 * - 1, rounded (the kernel's grouped path scores a group's rows by one of them). */
static inline int64_t ks_soft_raw(int32_t n, const ks_soft *k, int64_t nk,
                                  const int64_t *dcount, int64_t maxdom, const double *weights)
{
    double total = 0.0;
    for (int64_t j = 0; j < nk; j++) {
        int32_t d = k[j].dom[n];
        if (d < 0)
            continue;
        int64_t v = k[j].host ? k[j].counter[n] : dcount[k[j].drow * maxdom + d];
        total += (double)v * weights[k[j].drow] + (double)(k[j].skew - 1);
    }
    return ks_round(total);
}

/* PodTopologySpread's raw scores of a pod on its feasible rows rows[0..nf) (nrows rows in
 * all), its nk soft constraints counting pods: per constraint, the domains of the feasible
 * rows that have every key take part (a hostname constraint: each such row), weighted by
 * log(domains + 2) (with require_all off, a row missing a key skips that constraint and
 * "no value" counts as one more domain), and a row's raw score is the sum over the keys it
 * has of count * weight + maxSkew - 1, rounded; rawsp[n] = -1 (scoring 0) for a row
 * missing a key when require_all. *hi / *lo: the range over the rows that score. dcount
 * (given, read only): per zone-like constraint, the matching pods per domain over every
 * row (with all keys, when require_all) its inclusion policies keep, which the caller keeps
 * across a class's pods; dpresent (scratch): rows of stride maxdom; weights / missing: by
 * drow. */
static void ks_soft_scores(const int32_t *restrict rows, int64_t nf,
                           const ks_soft *k, int64_t nk, int require_all,
                           const int64_t *restrict dcount, uint8_t *restrict dpresent,
                           int64_t maxdom,
                           double *restrict weights, uint8_t *restrict missing,
                           int64_t *restrict rawsp, int64_t *hi, int64_t *lo)
{
    int64_t counted = 0, h = 0, l = -1;
    for (int64_t j = 0; j < nk; j++) {
        missing[k[j].drow] = 0;
        if (!k[j].host) {
            for (int64_t d = 0; d < k[j].ndom; d++)
                dpresent[k[j].drow * maxdom + d] = 0;
        }
    }
    for (int64_t i = 0; i < nf; i++) {
        int32_t n = rows[i];
        int all_keys = 1;
        for (int64_t j = 0; j < nk; j++) {
            if (k[j].dom[n] < 0) {
                all_keys = 0;
                if (require_all)
                    break;
                missing[k[j].drow] = 1;
            }
        }
        rawsp[n] = require_all && !all_keys ? -1 : 0;
        if (all_keys || !require_all) {
            counted++;
            for (int64_t j = 0; j < nk; j++) {
                int32_t d = k[j].dom[n];
                if (!k[j].host && d >= 0)
                    dpresent[k[j].drow * maxdom + d] = 1;
            }
        }
    }
    for (int64_t j = 0; j < nk; j++) {
        int64_t domains = missing[k[j].drow];
        if (k[j].host) {
            domains = counted;
        } else {
            for (int64_t d = 0; d < k[j].ndom; d++)
                domains += dpresent[k[j].drow * maxdom + d];
        }
        weights[k[j].drow] = log((double)(domains + 2));
    }
    for (int64_t i = 0; i < nf; i++) {
        int32_t n = rows[i];
        if (rawsp[n] < 0)
            continue;
        int64_t v = ks_soft_raw(n, k, nk, dcount, maxdom, weights);
        rawsp[n] = v;
        h = v > h ? v : h;
        l = (l < 0 || v < l) ? v : l;
    }
    *hi = h;
    *lo = l;
}

#endif
