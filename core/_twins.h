/* Twin rows for the bounded search of a class's only pod (core/_place.pyx's
 * _single_bounded): rows whose whole node state (allocatable, requested and non-zero
 * requested, every column) is the same score alike for a pod apart from the per-row
 * tables (static filters, fixed scores, PreferNoSchedule counts), and pass or fail the
 * resource filters alike. Such rows (a twin group; a fleet's empty nodes of one shape, or
 * its nodes running the same daemon pods) are kept as one bitset per group over the rows,
 * a bit set while the row's state is still the group's (a placement clears it, undoing
 * that placement sets it again). With the tables' rows as bitsets too (one per distinct
 * value), the rows of a group that share one total are an AND of a few bitsets: their
 * count is a popcount and the k-th of them in row order a select, both in rows / 64 word
 * operations, without visiting the rows.
 */
#ifndef KUBESALVO_TWINS_H
#define KUBESALVO_TWINS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_scan.h" /* KS_CLONES */

#define KS_TWIN_GROUPS 64 /* the largest groups kept (each costs a little per search) */
#define KS_VALUES 4       /* a table row with more distinct values has no bitsets */

typedef struct {
    int64_t words;      /* uint64 words of a bitset over the rows */
    int64_t ngroups;
    int32_t *group;     /* per row: its group, -1 for none */
    uint64_t *in;       /* KS_TWIN_GROUPS x words: the rows still in the group's state */
    uint64_t *all_in;   /* words: the union of the groups' `in` */
    int64_t *count;     /* per group: the bits set in its `in` */
    int64_t *hint;      /* per group: no bit of `in` is set below this word */
    int64_t *base;      /* KS_TWIN_GROUPS x (nres + 2): the group's requested, non-zero cpu,
                           memory */
    int64_t nres;
} ks_twins;

static inline uint64_t ks_twin_hash(const int64_t *a, const int64_t *r, const int64_t *z,
                                    int64_t nres)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL;
    for (int64_t k = 0; k < nres; k++) {
        h = (h ^ (uint64_t)a[k]) * 0xBF58476D1CE4E5B9ULL;
        h = (h ^ (uint64_t)r[k]) * 0x94D049BB133111EBULL;
    }
    h = (h ^ (uint64_t)z[0]) * 0xBF58476D1CE4E5B9ULL;
    h = (h ^ (uint64_t)z[1]) * 0x94D049BB133111EBULL;
    return h ^ (h >> 31);
}

static inline int ks_twin_equal(int64_t m, int64_t n, const int64_t *alloc, const int64_t *req,
                                const int64_t *nz, int64_t nres)
{
    return memcmp(alloc + m * nres, alloc + n * nres, (size_t)nres * sizeof(int64_t)) == 0 &&
           memcmp(req + m * nres, req + n * nres, (size_t)nres * sizeof(int64_t)) == 0 &&
           nz[2 * m] == nz[2 * n] && nz[2 * m + 1] == nz[2 * n + 1];
}

/* Group rows [0, rows) by their whole state (a hash table of each state's first row and
 * count), keep the largest KS_TWIN_GROUPS of at least min_size rows, and set their
 * bitsets (every row in). Returns 0, or -1 when memory runs out (then no group). */
static int ks_twins_build(ks_twins *t, const int64_t *alloc, const int64_t *req,
                          const int64_t *nz, int64_t nres, int64_t rows, int64_t min_size)
{
    int64_t size = 16, n, i;
    t->ngroups = 0;
    t->nres = nres;
    for (n = 0; n < rows; n++)
        t->group[n] = -1;
    memset(t->in, 0, (size_t)(KS_TWIN_GROUPS * t->words) * sizeof(uint64_t));
    memset(t->all_in, 0, (size_t)t->words * sizeof(uint64_t));
    while (size < 2 * rows)
        size *= 2;
    int64_t *first = malloc((size_t)size * sizeof(int64_t));
    int64_t *count = malloc((size_t)size * sizeof(int64_t));
    int32_t *slot = malloc((size_t)(rows > 0 ? rows : 1) * sizeof(int32_t));
    if (first == NULL || count == NULL || slot == NULL) {
        free(first);
        free(count);
        free(slot);
        return -1;
    }
    for (i = 0; i < size; i++)
        first[i] = -1;
    for (n = 0; n < rows; n++) {
        uint64_t h = ks_twin_hash(alloc + n * nres, req + n * nres, nz + 2 * n, nres);
        i = (int64_t)(h & (uint64_t)(size - 1));
        while (first[i] >= 0 && !ks_twin_equal(first[i], n, alloc, req, nz, nres))
            i = (i + 1) & (size - 1);
        if (first[i] < 0) {
            first[i] = n;
            count[i] = 0;
        }
        count[i]++;
        slot[n] = (int32_t)i;
    }
    /* the states of at least min_size rows (at most rows / min_size of them), then the
     * largest first: KS_TWIN_GROUPS picks, each a pass over those */
    int64_t ncand = 0;
    int64_t *cand = malloc((size_t)(rows / (min_size > 0 ? min_size : 1) + 1) * sizeof(int64_t));
    if (cand == NULL) {
        free(first);
        free(count);
        free(slot);
        return -1;
    }
    for (i = 0; i < size; i++) {
        if (first[i] >= 0 && count[i] >= min_size)
            cand[ncand++] = i;
    }
    for (int64_t g = 0; g < KS_TWIN_GROUPS; g++) {
        int64_t top = -1;
        for (int64_t k = 0; k < ncand; k++) {
            i = cand[k];
            if (count[i] >= min_size && (top < 0 || count[i] > count[top]))
                top = i;
        }
        if (top < 0)
            break;
        t->count[g] = count[top];
        t->hint[g] = 0;
        memcpy(t->base + g * (nres + 2), req + first[top] * nres,
               (size_t)nres * sizeof(int64_t));
        t->base[g * (nres + 2) + nres] = nz[2 * first[top]];
        t->base[g * (nres + 2) + nres + 1] = nz[2 * first[top] + 1];
        count[top] = -1 - g; /* taken: the rows of this slot go to group g */
        t->ngroups++;
    }
    for (n = 0; n < rows; n++) {
        int64_t c = count[slot[n]];
        if (c < 0) {
            int64_t g = -1 - c;
            t->group[n] = (int32_t)g;
            t->in[g * t->words + (n >> 6)] |= (uint64_t)1 << (n & 63);
            t->all_in[n >> 6] |= (uint64_t)1 << (n & 63);
        }
    }
    free(first);
    free(count);
    free(slot);
    free(cand);
    return 0;
}

/* Whether row n's requested columns (req, nres) and non-zero cpu / memory (nz) are its
 * group g's. */
static inline int ks_twin_same(const ks_twins *t, int64_t g, const int64_t *req,
                               const int64_t *nz)
{
    const int64_t *b = t->base + g * (t->nres + 2);
    return memcmp(b, req, (size_t)t->nres * sizeof(int64_t)) == 0 && b[t->nres] == nz[0] &&
           b[t->nres + 1] == nz[1];
}

/* Row n leaves (in 0) or rejoins (in 1) its group's bitset. */
static inline void ks_twin_set(ks_twins *t, int32_t n, int in)
{
    int64_t g = t->group[n], w = n >> 6;
    uint64_t bit = (uint64_t)1 << (n & 63);
    if (in) {
        t->in[g * t->words + w] |= bit;
        t->all_in[w] |= bit;
        t->count[g]++;
        if (w < t->hint[g])
            t->hint[g] = w;
    } else {
        t->in[g * t->words + w] &= ~bit;
        t->all_in[w] &= ~bit;
        t->count[g]--;
    }
}

static inline int ks_twin_has(const ks_twins *t, int32_t n)
{
    int64_t g = t->group[n];
    return g >= 0 && (t->in[g * t->words + (n >> 6)] >> (n & 63)) & 1;
}

/* A row still in group g (its count above 0), for the group's shared terms. */
static inline int32_t ks_twin_witness(ks_twins *t, int64_t g)
{
    const uint64_t *b = t->in + g * t->words;
    int64_t w = t->hint[g];
    while (b[w] == 0)
        w++;
    t->hint[g] = w;
    return (int32_t)((w << 6) + __builtin_ctzll(b[w]));
}

/* Word w of a AND b AND c AND d, a NULL operand being every row. */
static inline uint64_t ks_and4(const uint64_t *a, const uint64_t *b, const uint64_t *c,
                               const uint64_t *d, int64_t w)
{
    uint64_t x = a[w];
    if (b)
        x &= b[w];
    if (c)
        x &= c[w];
    if (d)
        x &= d[w];
    return x;
}

/* The rows of a AND b AND c AND d (a never NULL), from word lo on. */
static int64_t ks_count4(const uint64_t *a, const uint64_t *b, const uint64_t *c,
                         const uint64_t *d, int64_t lo, int64_t words)
{
    int64_t k = 0;
    for (int64_t w = lo; w < words; w++)
        k += __builtin_popcountll(ks_and4(a, b, c, d, w));
    return k;
}

/* The k-th (from 0) set bit of x, k < popcount(x). */
static inline int64_t ks_select64(uint64_t x, int64_t k)
{
    while (k-- > 0)
        x &= x - 1;
    return __builtin_ctzll(x);
}

/* Whether a AND b AND c (b, c NULL: every row) holds a row, from word lo on. */
static inline int ks_any3(const uint64_t *a, const uint64_t *b, const uint64_t *c, int64_t lo,
                          int64_t words)
{
    for (int64_t w = lo; w < words; w++) {
        if (ks_and4(a, b, c, NULL, w))
            return 1;
    }
    return 0;
}

/* The largest v[n] above m over the rows n in member (NULL: every row) and in no group's
 * `in` that have a bit in one of pos[0..np) and pass q's filters (else m): the
 * PreferNoSchedule maximum over the rows outside the groups, visiting only those with a
 * count. */
static int64_t ks_untwinned_max16(const ks_twins *t, const uint64_t *member,
                                  const uint64_t *const *pos, int64_t np, const int16_t *v,
                                  const ks_single *q, int64_t m)
{
    for (int64_t w = 0; w < t->words; w++) {
        uint64_t x = 0;
        for (int64_t j = 0; j < np; j++)
            x |= pos[j][w];
        x &= ~t->all_in[w] & (member ? member[w] : ~(uint64_t)0);
        for (; x; x &= x - 1) {
            int32_t n = (int32_t)((w << 6) + __builtin_ctzll(x));
            if (v[n] > m && ks_fits(q, n))
                m = v[n];
        }
    }
    return m;
}

/* The idx-th (from 0) row, in row order, of the union of the nt sets a[k] AND b AND
 * c[k] AND d[k] (disjoint; b, c[k], d[k] NULL: every row) and the ascending rows
 * extra[0..ne) (in none of the sets); -1 past the last. */
static int64_t ks_union_select(const uint64_t *const *a, const uint64_t *b,
                               const uint64_t *const *c, const uint64_t *const *d, int64_t nt,
                               const int32_t *extra, int64_t ne, int64_t words, int64_t idx)
{
    int64_t p = 0;
    for (int64_t w = 0; w < words; w++) {
        uint64_t x = 0;
        for (int64_t k = 0; k < nt; k++)
            x |= ks_and4(a[k], b, c[k], d[k], w);
        for (; p < ne && (extra[p] >> 6) == w; p++)
            x |= (uint64_t)1 << (extra[p] & 63);
        int64_t pc = __builtin_popcountll(x);
        if (idx < pc)
            return (w << 6) + ks_select64(x, idx);
        idx -= pc;
    }
    return -1;
}

/* The rows in member (a bitset, NULL: every row) and in no group's `in`, ascending, into
 * out; returns how many. */
static int64_t ks_untwinned(const ks_twins *t, const uint64_t *member, int64_t rows,
                            int32_t *out)
{
    int64_t k = 0;
    for (int64_t w = 0; w < t->words; w++) {
        uint64_t x = ~t->all_in[w] & (member ? member[w] : ~(uint64_t)0);
        if (w == t->words - 1 && (rows & 63))
            x &= ((uint64_t)1 << (rows & 63)) - 1;
        for (; x; x &= x - 1)
            out[k++] = (int32_t)((w << 6) + __builtin_ctzll(x));
    }
    return k;
}

/* Bit b of the result: p[b] == x, for b < 64 (int32 or int16 rows); a loop the compiler
 * turns into vector compares. */
KS_CLONES
static uint64_t ks_eq64_32(const int32_t *restrict p, int32_t x)
{
    uint64_t r = 0;
    for (int b = 0; b < 64; b++)
        r |= (uint64_t)(p[b] == x) << b;
    return r;
}

KS_CLONES
static uint64_t ks_eq64_16(const int16_t *restrict p, int16_t x)
{
    uint64_t r = 0;
    for (int b = 0; b < 64; b++)
        r |= (uint64_t)(p[b] == x) << b;
    return r;
}

/* One bitset per distinct value of an int row v over the rows (at most KS_VALUES values,
 * in the order met, into vals; bits: KS_VALUES x words): per word of 64 rows, one vector
 * compare per value known, and a value met for the first time (a row no compare hit)
 * added. Returns the values' count (1: every row holds the one value), -1 past
 * KS_VALUES. */
static int64_t ks_value_bits(const void *v, int width, int64_t rows, int64_t words,
                             int64_t *vals, uint64_t *bits)
{
    int64_t nv = 0;
    for (int64_t w = 0; w < words; w++) {
        int64_t lo = w << 6, m = rows - lo < 64 ? rows - lo : 64;
        uint64_t full = m == 64 ? ~(uint64_t)0 : ((uint64_t)1 << m) - 1, hit = 0;
        uint64_t acc[KS_VALUES] = {0};
        for (;;) {
            for (int64_t j = 0; j < nv; j++) {
                if (m == 64)
                    acc[j] = width == 2 ? ks_eq64_16((const int16_t *)v + lo, (int16_t)vals[j])
                                        : ks_eq64_32((const int32_t *)v + lo, (int32_t)vals[j]);
                else
                    for (int64_t b = 0; b < m; b++) {
                        int64_t x = width == 2 ? ((const int16_t *)v)[lo + b]
                                               : ((const int32_t *)v)[lo + b];
                        acc[j] |= (uint64_t)(x == vals[j]) << b;
                    }
                hit |= acc[j];
            }
            if ((hit & full) == full)
                break;
            if (nv == KS_VALUES)
                return -1;
            int64_t b = __builtin_ctzll(~hit & full); /* a row of a value not met yet */
            vals[nv++] = width == 2 ? ((const int16_t *)v)[lo + b] : ((const int32_t *)v)[lo + b];
            hit = 0;
        }
        for (int64_t j = 0; j < KS_VALUES; j++)
            bits[j * words + w] = acc[j];
    }
    return nv;
}

#endif
