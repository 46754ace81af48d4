/* jieba's default segmentation (cut(text, hmm=True)) as rjieba 0.2.2 / jieba-rs 0.11.0 does it, giving
 * the same tokens: part of the fingerprint's version, so any difference is a bug (tests compare both).
 *
 * The text is split into blocks (runs of Han, ASCII letters, digits and +#&._%-; everything else is one
 * token a character, "\r\n" one token). In a block the best route through the dictionary words starting
 * at each character is the one of largest sum of ln(freq) - ln(total) (a character no word starts with
 * counts freq 1), a tie going to the longer word (as jieba-rs compares (probability, end) pairs); runs
 * of one-character steps that are not a dictionary word go to the HMM (Viterbi over B/E/M/S for
 * U+4E00..U+9FD5; elsewhere alphanumeric runs joined by . _ - are kept whole, the rest as gaps). The
 * tables (a trie of the dictionary, the HMM) come from Python (fingerprint/segmenter.py) as buffers.
 *
 * The cut runs in two phases: token ends into a scratch array (no Python calls), then str objects, taken
 * from a cache of recent tokens when they are there. Time goes to cache misses in the dictionary (~486,000
 * trie edges): the edges below the root are hashed (one cache line a step, with the word's ln(freq)), a
 * Bloom filter that stays in cache answers most steps to no edge without reading that table, and every
 * position's second step is looked up first, each slot prefetched ahead of its use.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#include "_segment.h"

#define TABLE_NAME "fingerprint._speedups.jieba_table"
#define ROOT_SIZE 0x30000      /* the root's children are indexed by code point below this */
#define HMM_LO 0x4E00          /* the HMM's Han range: U+4E00..U+9FD5 */
#define HMM_HI 0x9FD5
#define MIN_FLOAT (-3.14e100)  /* jieba's log-probability of an emission the model has no entry for */
enum { ST_B = 0, ST_E = 1, ST_M = 2, ST_S = 3 };
/* The two states that may precede each state, the larger index second: it wins a tie. */
static const int PREV_STATES[4][2] = {{ST_E, ST_S}, {ST_B, ST_M}, {ST_B, ST_M}, {ST_E, ST_S}};

/* A trie node as segmenter.py builds it: the code point of the edge into it (WORD set when a word ends
 * here), its first child (children are consecutive, sorted by code point, and end at the next node's
 * first child), and ln(freq) of its word. The cut reads the nodes of the root's children only; deeper
 * edges are looked up in the Edge hash table built from them at load. */
#define WORD 0x80000000u
typedef struct {
    uint32_t cp;
    int32_t first;
    double logfreq;
} Node;

typedef struct {
    uint64_t slot;   /* parent << 43 | cp << 22 | word << 21 | child; 0 when empty */
    double logfreq;
} Edge;

#define PREFETCH_AHEAD 16    /* positions between asking for an edge's slot and reading it */
#define TOKEN_CACHE_BITS 14  /* 16,384 recent tokens kept (~1.2 MB): a page has ~600 distinct ones */
#define SCRATCH_KEEP 262144  /* longer texts cut in scratch freed after the call (~70 bytes a character) */

typedef struct {
    Py_UCS4 *text;   /* the text's code points */
    double *prob;    /* route: best log-probability from a position to the block's end */
    uint32_t *n2;    /* route: the trie edge of text[x:x + 2], 0 if none */
    double *lf2;     /* route: its ln(freq) */
    int32_t *next;   /* route: where the best word from a position ends */
    int32_t *ends;   /* token ends, in order */
    double *v;       /* Viterbi scores, 4 a character */
    uint8_t *back;   /* Viterbi back-pointers, 4 a character */
    uint8_t *path;
    Py_ssize_t cap;  /* characters the buffers hold */
} Scratch;

typedef struct {
    Py_buffer views[5];
    int nviews;
    const int32_t *root;        /* code point -> child node of the root, 0 if none */
    const Node *node;           /* N nodes and a sentinel whose `first` is N (node 0 is the root) */
    const double *emit;         /* (HMM_HI - HMM_LO + 1) x 4 emission log-probabilities */
    const double *model;        /* 4 start log-probabilities, then the 4 x 4 transitions */
    Py_ssize_t nodes;
    Edge *edges;                /* the edges below the root, hashed (see child()) */
    uint64_t *filter;           /* which edge keys may be in `edges` (see may_have()) */
    uint64_t mask;
    int shift;
    double log_total;
    Scratch scratch;
    PyObject *tokens[1 << TOKEN_CACHE_BITS];  /* recent tokens by a hash of their code points */
    int busy;                   /* scratch in use (a re-entrant call makes its own) */
} Table;

typedef struct {
    const Table *t;
    const Py_UCS4 *text;
    Scratch *s;
    Py_ssize_t count;  /* tokens so far */
} Cut;

#define CH(c, i) ((c)->text[i])

static void scratch_free(Scratch *s)
{
    void *buffers[] = {s->text, s->prob, s->n2, s->lf2, s->next, s->ends, s->v, s->back, s->path};
    for (size_t i = 0; i < sizeof(buffers) / sizeof(buffers[0]); i++)
        free(buffers[i]);
    memset(s, 0, sizeof(*s));
}

static int scratch_reserve(Scratch *s, Py_ssize_t n)
{
    if (n <= s->cap)
        return 0;
    scratch_free(s);
    if ((size_t)n > SIZE_MAX / (4 * sizeof(double)) - 1)
        return -1;
    size_t m = (size_t)n + 1;
    s->text = malloc(m * sizeof(Py_UCS4));
    s->prob = malloc(m * sizeof(double));
    s->n2 = malloc(m * sizeof(uint32_t));
    s->lf2 = malloc(m * sizeof(double));
    s->next = malloc(m * sizeof(int32_t));
    s->ends = malloc(m * sizeof(int32_t));
    s->v = malloc(4 * m * sizeof(double));
    s->back = malloc(4 * m);
    s->path = malloc(m);
    if (!s->text || !s->prob || !s->n2 || !s->lf2 || !s->next || !s->ends || !s->v || !s->back || !s->path) {
        scratch_free(s);
        return -1;
    }
    s->cap = n;
    return 0;
}

static inline void emit_end(Cut *c, Py_ssize_t end)
{
    c->s->ends[c->count++] = (int32_t)end;
}

static inline int is_alnum(Py_UCS4 ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

/* jieba-rs's block class: CJK ideographs (main block and extensions), ASCII alphanumerics, +#&._%- */
static inline int is_block_char(Py_UCS4 ch)
{
    if (ch >= 0x4E00 && ch <= 0x9FFF)
        return 1;
    if (ch < 0x80)
        return is_alnum(ch) || ch == '+' || ch == '#' || ch == '&' || ch == '.' || ch == '_' || ch == '%' || ch == '-';
    return (ch >= 0x3400 && ch <= 0x4DBF) || (ch >= 0xF900 && ch <= 0xFAFF) || (ch >= 0x20000 && ch <= 0x2A6DF)
        || (ch >= 0x2A700 && ch <= 0x2EBEF) || (ch >= 0x2F800 && ch <= 0x2FA1F);
}

/* The child of `node` along code point ch, with WORD set if a word ends there; 0 if none (node 0 is the
 * root). Below the root the edges are in one hash table, each slot with the ln(freq) of its word, so a
 * step costs one cache line (a sorted search of a node's children missed the cache at every step). */
#define NODE_BITS 21
#define EDGE_KEY(parent, cp) (((uint64_t)(parent) << 21) | (uint64_t)(cp))
#define EDGE_HASH(t, key) (((key) * 0x9E3779B97F4A7C15ULL) >> (t)->shift)

/* A blocked Bloom filter of the edge keys (~486,000 edges, ~8.6 bits each): three bits in one 64-bit word,
 * all from one product's high bits. */
#define FILTER_BITS 16   /* 2^16 words: 512 KB, a core's L2 here */
#define FILTER_MIX(key) (((key) ^ ((key) >> 29)) * 0xC2B2AE3D27D4EB4FULL)
#define FILTER_WORD(h) ((h) >> (64 - FILTER_BITS))
#define FILTER_MASK(h) ((1ULL << (((h) >> 42) & 63)) | (1ULL << (((h) >> 36) & 63)) | (1ULL << (((h) >> 30) & 63)))

/* False when no edge has this key, as for most steps where no word goes on: the 16 MB table is then not
 * read (its cache misses were most of a cut's time). True for every edge, and for ~3% of absent ones. */
static inline int may_have(const Table *t, uint64_t key)
{
    uint64_t h = FILTER_MIX(key), bits = FILTER_MASK(h);
    return (t->filter[FILTER_WORD(h)] & bits) == bits;
}

static inline uint32_t child(const Table *t, uint32_t node, Py_UCS4 ch, double *logfreq)
{
    if (node == 0) {
        if (ch >= ROOT_SIZE || !t->root[ch])
            return 0;
        int32_t c = t->root[ch];
        *logfreq = t->node[c].logfreq;
        return (uint32_t)c | (t->node[c].cp & WORD);
    }
    uint64_t key = EDGE_KEY(node, ch);
    if (!may_have(t, key))
        return 0;
    for (uint64_t i = EDGE_HASH(t, key);; i = (i + 1) & t->mask) {
        const Edge *e = &t->edges[i];
        if (!e->slot)
            return 0;
        if (e->slot >> (NODE_BITS + 1) == key) {
            *logfreq = e->logfreq;
            return (uint32_t)(e->slot & ((1u << NODE_BITS) - 1)) | ((e->slot >> NODE_BITS) & 1 ? WORD : 0);
        }
    }
}

/* Asks for the slot of the edge with this key ahead of its use. */
static inline void prefetch_slot(const Table *t, uint64_t key)
{
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(&t->edges[EDGE_HASH(t, key)]);
#endif
}

/* Asks for the filter's word of the edge node -> ch ahead of prefetch_edge's look at it (node 0: none). */
static inline void prefetch_filter(const Table *t, uint32_t node, Py_UCS4 ch)
{
#if defined(__GNUC__) || defined(__clang__)
    if (node)
        __builtin_prefetch(&t->filter[FILTER_WORD(FILTER_MIX(EDGE_KEY(node, ch)))]);
#endif
}

/* Asks for the slot of the edge node -> ch ahead of its use, when the filter says it may be there (node 0:
 * none). */
static inline void prefetch_edge(const Table *t, uint32_t node, Py_UCS4 ch)
{
#if defined(__GNUC__) || defined(__clang__)
    if (node && may_have(t, EDGE_KEY(node, ch)))
        prefetch_slot(t, EDGE_KEY(node, ch));
#endif
}

/* The hash table of the edges below the root (see child()); -1 when out of memory. */
static int build_edges(Table *t)
{
    uint64_t n = 0, size = 1;
    int bits = 0;
    for (Py_ssize_t i = 1; i < t->nodes; i++)
        n += (uint64_t)(t->node[i + 1].first - t->node[i].first);
    while (size * 3 < n * 5 || size < 2) {  /* at most 60% full */
        size <<= 1;
        bits++;
    }
    size_t bytes = size * sizeof(Edge);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    size_t huge = 1 << 21;
    bytes = (bytes + huge - 1) / huge * huge;
    if (!(t->edges = aligned_alloc(huge, bytes)))
        return -1;
    madvise(t->edges, bytes, MADV_HUGEPAGE);  /* fewer TLB misses where the kernel allows: a hint only */
#else
    if (!(t->edges = malloc(bytes)))
        return -1;
#endif
    memset(t->edges, 0, bytes);
    t->mask = size - 1;
    t->shift = 64 - bits;
    /* Children of the nodes below the root are the nodes from node[1].first on (see segmenter.py); each
     * insertion misses the cache, so their slots are asked for ahead, which needs every node's parent. */
    int32_t *parent = malloc((size_t)t->nodes * sizeof(int32_t));
    t->filter = calloc((size_t)1 << FILTER_BITS, sizeof(uint64_t));
    if (!parent || !t->filter) {
        free(parent);
        return -1;
    }
    for (Py_ssize_t p = 1; p < t->nodes; p++)
        for (int32_t c = t->node[p].first; c < t->node[p + 1].first; c++)
            parent[c] = (int32_t)p;
    for (int32_t c = t->node[1].first; c < t->nodes; c++) {
        if (c + PREFETCH_AHEAD < t->nodes)   /* not through the filter: it is being filled */
            prefetch_slot(t, EDGE_KEY(parent[c + PREFETCH_AHEAD], t->node[c + PREFETCH_AHEAD].cp & ~WORD));
        uint64_t key = EDGE_KEY(parent[c], t->node[c].cp & ~WORD);
        uint64_t i = EDGE_HASH(t, key);
        while (t->edges[i].slot)
            i = (i + 1) & t->mask;
        t->edges[i].slot = key << (NODE_BITS + 1) | (uint64_t)((t->node[c].cp & WORD) != 0) << NODE_BITS | (uint64_t)c;
        t->edges[i].logfreq = t->node[c].logfreq;
        uint64_t h = FILTER_MIX(key);
        t->filter[FILTER_WORD(h)] |= FILTER_MASK(h);
    }
    free(parent);
    return 0;
}

/* Whether text[a:b] is a dictionary word (any frequency, 0 included). */
static int is_word(const Cut *c, Py_ssize_t a, Py_ssize_t b)
{
    uint32_t edge = 0;
    double lf;
    for (Py_ssize_t i = a; i < b; i++)
        if ((edge = child(c->t, edge & ~WORD, CH(c, i), &lf)) == 0)
            return 0;
    return (edge & WORD) != 0;
}

/* The best route over the block text[a:b], from its end backwards. */
static void route(Cut *c, Py_ssize_t a, Py_ssize_t b)
{
    const Table *t = c->t;
    const Py_UCS4 *text = c->text;
    double *prob = c->s->prob, *lf2 = c->s->lf2;
    int32_t *next = c->s->next;
    uint32_t *n2 = c->s->n2;
    /* First every position's second step (text[x] -> text[x + 1]), each filter word and then each slot asked
     * for ahead of its use: these look-ups miss the cache, and independent ones overlap. */
    n2[b - 1] = 0;
    for (Py_ssize_t x = b - 2; x >= a; x--) {
        Py_ssize_t far = x - 2 * PREFETCH_AHEAD;
        if (far >= a)
            prefetch_filter(t, t->root[text[far] < ROOT_SIZE ? text[far] : 0], text[far + 1]);
        if (x - PREFETCH_AHEAD >= a)
            prefetch_edge(t, t->root[text[x - PREFETCH_AHEAD] < ROOT_SIZE ? text[x - PREFETCH_AHEAD] : 0],
                          text[x - PREFETCH_AHEAD + 1]);
        Py_UCS4 ch = text[x];
        n2[x] = ch < ROOT_SIZE && t->root[ch] ? child(t, (uint32_t)t->root[ch], text[x + 1], &lf2[x]) : 0;
    }
    prob[b] = 0.0;
    for (Py_ssize_t x = b - 1; x >= a; x--) {
        Py_ssize_t far = x - 2 * PREFETCH_AHEAD;
        if (far >= a && far + 2 < b && n2[far])
            prefetch_filter(t, n2[far] & ~WORD, text[far + 2]);   /* the third step */
        if (x - PREFETCH_AHEAD >= a && x - PREFETCH_AHEAD + 2 < b && n2[x - PREFETCH_AHEAD])
            prefetch_edge(t, n2[x - PREFETCH_AHEAD] & ~WORD, text[x - PREFETCH_AHEAD + 2]);
        int found = 0;
        double best = 0.0, lf = 0.0;
        Py_ssize_t best_end = x + 1;
        uint32_t edge = child(t, 0, text[x], &lf);
        for (Py_ssize_t y = x; edge; ) {  /* edge: text[x:y + 1] is a prefix of a word */
            if (edge & WORD) {
                double p = lf - t->log_total + prob[y + 1];
                if (!found || p > best || (p == best && y + 1 > best_end)) {
                    best = p;
                    best_end = y + 1;
                    found = 1;
                }
            }
            if (++y >= b)
                break;
            if (y == x + 1) {
                edge = n2[x];
                lf = lf2[x];
            } else {
                edge = child(t, edge & ~WORD, text[y], &lf);
            }
        }
        if (!found)
            best = 0.0 - t->log_total + prob[x + 1];
        prob[x] = best;
        next[x] = (int32_t)best_end;
    }
}

/* Viterbi over text[a:b] (all in the HMM's range, two characters or more): B/E/M/S tokens. */
static void viterbi(Cut *c, Py_ssize_t a, Py_ssize_t b)
{
    const double *start = c->t->model, *trans = c->t->model + 4;
    double *v = c->s->v;
    uint8_t *back = c->s->back, *path = c->s->path;
    Py_ssize_t n = b - a;
    const double *em = c->t->emit + 4 * (Py_ssize_t)(CH(c, a) - HMM_LO);
    for (int y = 0; y < 4; y++)
        v[y] = start[y] + em[y];
    for (Py_ssize_t i = 1; i < n; i++) {
        em = c->t->emit + 4 * (Py_ssize_t)(CH(c, a + i) - HMM_LO);
        const double *pv = v + 4 * (i - 1);
        for (int y = 0; y < 4; y++) {
            int y0 = PREV_STATES[y][0], y1 = PREV_STATES[y][1];
            double p0 = pv[y0] + trans[4 * y0 + y] + em[y];
            double p1 = pv[y1] + trans[4 * y1 + y] + em[y];
            v[4 * i + y] = p0 > p1 ? p0 : p1;
            back[4 * i + y] = (uint8_t)(p0 > p1 ? y0 : y1);
        }
    }
    const double *last = v + 4 * (n - 1);
    int state = last[ST_E] > last[ST_S] ? ST_E : ST_S;
    for (Py_ssize_t i = n - 1; i >= 0; i--) {
        path[i] = (uint8_t)state;
        state = back[4 * i + state];
    }
    Py_ssize_t next = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (path[i] == ST_E || path[i] == ST_S) {
            emit_end(c, a + i + 1);
            next = i + 1;
        }
    if (next < n)
        emit_end(c, b);
}

/* Length of the alphanumeric token at text[i] (alphanumeric) within text[:b]: runs joined by . _ -, then %. */
static Py_ssize_t skip_match(const Cut *c, Py_ssize_t i, Py_ssize_t b)
{
    Py_ssize_t end = i;
    for (;;) {
        while (end < b && is_alnum(CH(c, end)))
            end++;
        if (end + 1 < b) {
            Py_UCS4 ch = CH(c, end);
            if ((ch == '.' || ch == '_' || ch == '-') && is_alnum(CH(c, end + 1))) {
                end++;
                continue;
            }
        }
        break;
    }
    if (end < b && CH(c, end) == '%')
        end++;
    return end;
}

/* A part of an HMM run outside the HMM's Han range: alphanumeric tokens and the gaps between them. */
static void skip_split(Cut *c, Py_ssize_t a, Py_ssize_t b)
{
    Py_ssize_t pos = a;
    while (pos < b) {
        Py_ssize_t cur = pos;
        while (cur < b && !is_alnum(CH(c, cur)))
            cur++;
        if (cur > pos)
            emit_end(c, cur);
        if (cur == b)
            break;
        pos = skip_match(c, cur, b);
        emit_end(c, pos);
    }
}

/* jieba's HMM cut of text[a:b]: Han runs through Viterbi, the rest split by skip_split. */
static void hmm_cut(Cut *c, Py_ssize_t a, Py_ssize_t b)
{
    Py_ssize_t i = a;
    while (i < b) {
        Py_ssize_t j = i;
        Py_UCS4 ch = CH(c, i);
        int han = ch >= HMM_LO && ch <= HMM_HI;
        while (j < b) {
            ch = CH(c, j);
            if ((ch >= HMM_LO && ch <= HMM_HI) != han)
                break;
            j++;
        }
        if (!han)
            skip_split(c, i, j);
        else if (j - i > 1)
            viterbi(c, i, j);
        else
            emit_end(c, j);
        i = j;
    }
}

/* A run of one-character route steps text[a:b]: one token if it is a word, else the HMM's tokens. */
static void unjoined(Cut *c, Py_ssize_t a, Py_ssize_t b)
{
    if (b - a == 1)
        emit_end(c, b);
    else if (!is_word(c, a, b))
        hmm_cut(c, a, b);
    else
        for (Py_ssize_t x = a + 1; x <= b; x++)
            emit_end(c, x);
}

static void cut_block(Cut *c, Py_ssize_t a, Py_ssize_t b)
{
    route(c, a, b);
    const int32_t *next = c->s->next;
    Py_ssize_t x = a, left = -1;
    while (x < b) {
        Py_ssize_t y = next[x];
        if (y - x == 1) {
            if (left < 0)
                left = x;
        } else {
            if (left >= 0) {
                unjoined(c, left, x);
                left = -1;
            }
            emit_end(c, y);
        }
        x = y;
    }
    if (left >= 0)
        unjoined(c, left, b);
}

static void cut_text(Cut *c, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n) {
        Py_ssize_t j = i;
        while (j < n && is_block_char(CH(c, j)))
            j++;
        if (j > i) {
            cut_block(c, i, j);
            i = j;
            continue;
        }
        Py_ssize_t step = (CH(c, i) == '\r' && i + 1 < n && CH(c, i + 1) == '\n') ? 2 : 1;
        emit_end(c, i + step);
        i += step;
    }
}

static void table_free(PyObject *capsule)
{
    Table *t = PyCapsule_GetPointer(capsule, TABLE_NAME);
    if (!t)
        return;
    for (int i = 0; i < t->nviews; i++)
        PyBuffer_Release(&t->views[i]);
    scratch_free(&t->scratch);
    free(t->edges);
    free(t->filter);
    for (Py_ssize_t i = 0; i < (1 << TOKEN_CACHE_BITS); i++)
        Py_XDECREF(t->tokens[i]);
    PyMem_Free(t);
}

/* Reads one table argument as a C-contiguous buffer of `count` items of `itemsize` bytes (-1: any count). */
static const void *take(Table *t, PyObject *obj, Py_ssize_t itemsize, Py_ssize_t *count, const char *name)
{
    Py_buffer *view = &t->views[t->nviews];
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    t->nviews++;
    if (view->len % itemsize || (*count >= 0 && view->len / itemsize != *count)) {
        PyErr_Format(PyExc_ValueError, "jieba_table: %s has the wrong size", name);
        return NULL;
    }
    *count = view->len / itemsize;
    return view->buf;
}

/* Every node index a table holds must lie in the table: checked once, so cuts need no bounds checks. */
static int check_table(const Table *t)
{
    if (t->nodes < 1 || t->nodes >= (1 << NODE_BITS) || t->node[0].first < 1 || t->node[t->nodes].first != t->nodes)
        return -1;
    for (Py_ssize_t i = 0; i < t->nodes; i++)
        if (t->node[i].first > t->node[i + 1].first || t->node[i].first < 1 || (t->node[i].cp & ~WORD) > 0x10FFFF)
            return -1;
    for (Py_ssize_t i = 0; i < ROOT_SIZE; i++)
        if (t->root[i] < 0 || t->root[i] >= t->nodes)
            return -1;
    return 0;
}

const char jieba_table_doc[] = (
"jieba_table(root, nodes, emit, model, log_total) -> table for jieba_cut (fingerprint/segmenter.py).");

PyObject *jieba_table(PyObject *self, PyObject *args)
{
    PyObject *o[4];
    double log_total;
    if (!PyArg_ParseTuple(args, "OOOOd:jieba_table", &o[0], &o[1], &o[2], &o[3], &log_total))
        return NULL;
    Table *t = PyMem_Calloc(1, sizeof(Table));
    if (!t)
        return PyErr_NoMemory();
    Py_ssize_t root_n = ROOT_SIZE, nodes = -1, emit_n = 4 * (HMM_HI - HMM_LO + 1), model_n = 20;
    int ok = (t->root = take(t, o[0], 4, &root_n, "root")) && (t->node = take(t, o[1], sizeof(Node), &nodes, "nodes"))
        && (t->emit = take(t, o[2], 8, &emit_n, "emit")) && (t->model = take(t, o[3], 8, &model_n, "model"));
    t->nodes = nodes - 1;  /* the last is the sentinel */
    t->log_total = log_total;
    if (ok && check_table(t) < 0) {
        PyErr_SetString(PyExc_ValueError, "jieba_table: inconsistent trie");
        ok = 0;
    }
    if (ok && build_edges(t) < 0) {
        PyErr_NoMemory();
        ok = 0;
    }
    PyObject *capsule = ok ? PyCapsule_New(t, TABLE_NAME, table_free) : NULL;
    if (!capsule) {
        for (int i = 0; i < t->nviews; i++)
            PyBuffer_Release(&t->views[i]);
        free(t->edges);
        free(t->filter);
        PyMem_Free(t);
    }
    return capsule;
}

static Table *table_of(PyObject *capsule)
{
    if (!PyCapsule_IsValid(capsule, TABLE_NAME)) {
        PyErr_SetString(PyExc_TypeError, "jieba_cut: the table must come from jieba_table()");
        return NULL;
    }
    return PyCapsule_GetPointer(capsule, TABLE_NAME);
}

/* Token ends of text into the scratch array (returned count), -1 with an exception set. */
static Py_ssize_t cut_ends(Table *t, PyObject *text, Scratch *s)
{
    if (PyUnicode_READY(text) < 0)
        return -1;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (n >= INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "jieba_cut: text too long");
        return -1;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    if (kind != PyUnicode_1BYTE_KIND)
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_UCS4 ch = PyUnicode_READ(kind, data, i);
            if (ch >= 0xD800 && ch <= 0xDFFF) {  /* not UTF-8: rjieba refuses it the same way */
                if (PyUnicode_AsUTF8AndSize(text, NULL))
                    PyErr_SetString(PyExc_ValueError, "jieba_cut: a surrogate in the text");
                return -1;
            }
        }
    if (scratch_reserve(s, n) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        s->text[i] = PyUnicode_READ(kind, data, i);
    Cut c = {t, s->text, s, 0};
    cut_text(&c, n);
    return c.count;
}

/* The scratch a call cuts in: the table's own, unless a call is under way (a finalizer run by an allocation
 * cut again) or the text is long enough that keeping its scratch would hold tens of MB after the call. */
static Scratch *pick_scratch(Table *t, PyObject *text, Scratch *own)
{
    int long_text = PyUnicode_READY(text) == 0 && PyUnicode_GET_LENGTH(text) > SCRATCH_KEEP;  /* else cut_ends raises */
    return (t->busy || long_text) ? own : &t->scratch;
}

const char jieba_cut_doc[] = (
"jieba_cut(table, text) -> list of str: rjieba's cut(text, True), tokens identical.");

/* The str of text[a:b], from the table's cache of recent tokens when it holds it: a page repeats its
 * words, and a token object already made costs neither an allocation nor a cold cache line later. */
static PyObject *token(Table *t, PyObject *text, const Py_UCS4 *cps, Py_ssize_t a, Py_ssize_t b)
{
    uint64_t h = 0;
    for (Py_ssize_t i = a; i < b; i++)
        h = h * 0x100000001B3ULL + cps[i];
    h = (h * 0x9E3779B97F4A7C15ULL) >> (64 - TOKEN_CACHE_BITS);
    PyObject *hit = t->tokens[h];
    if (hit && PyUnicode_GET_LENGTH(hit) == b - a) {
        int kind = PyUnicode_KIND(hit);
        const void *data = PyUnicode_DATA(hit);
        Py_ssize_t i = 0;
        while (i < b - a && PyUnicode_READ(kind, data, i) == cps[a + i])
            i++;
        if (i == b - a) {
            Py_INCREF(hit);
            return hit;
        }
    }
    PyObject *tok = PyUnicode_Substring(text, a, b);
    if (tok) {
        PyObject *old = t->tokens[h];  /* read again: the allocation may have run a cut */
        Py_INCREF(tok);
        t->tokens[h] = tok;
        Py_XDECREF(old);
    }
    return tok;
}

PyObject *jieba_cut(PyObject *self, PyObject *args)
{
    PyObject *capsule, *text;
    if (!PyArg_ParseTuple(args, "OU:jieba_cut", &capsule, &text))
        return NULL;
    Table *t = table_of(capsule);
    if (!t)
        return NULL;
    Scratch own = {0};
    Scratch *s = pick_scratch(t, text, &own);  /* the list's allocations may run a finalizer that cuts */
    t->busy++;
    PyObject *list = NULL;
    Py_ssize_t count = cut_ends(t, text, s);
    if (count >= 0 && (list = PyList_New(count))) {
        Py_ssize_t start = 0;
        for (Py_ssize_t i = 0; i < count; i++) {
            PyObject *tok = token(t, text, s->text, start, s->ends[i]);
            if (!tok) {
                Py_CLEAR(list);
                break;
            }
            PyList_SET_ITEM(list, i, tok);
            start = s->ends[i];
        }
    }
    t->busy--;
    if (s == &own)
        scratch_free(&own);
    return list;
}

const char jieba_ends_doc[] = (
"jieba_ends(table, text) -> bytes: the int32 end offset of every token of jieba_cut.");

PyObject *jieba_ends(PyObject *self, PyObject *args)
{
    PyObject *capsule, *text;
    if (!PyArg_ParseTuple(args, "OU:jieba_ends", &capsule, &text))
        return NULL;
    Table *t = table_of(capsule);
    if (!t)
        return NULL;
    Scratch own = {0};
    Scratch *s = pick_scratch(t, text, &own);
    t->busy++;
    Py_ssize_t count = cut_ends(t, text, s);
    PyObject *out = count >= 0 ? PyBytes_FromStringAndSize((const char *)s->ends, count * 4) : NULL;
    t->busy--;
    if (s == &own)
        scratch_free(&own);
    return out;
}

Py_ssize_t jieba_cut_ends(PyObject *capsule, PyObject *text, Py_UCS4 **cps, int32_t **ends)
{
    *cps = NULL;
    *ends = NULL;
    Table *t = table_of(capsule);
    if (!t)
        return -1;
    Scratch own = {0};
    Scratch *s = pick_scratch(t, text, &own);
    t->busy++;
    Py_ssize_t count = cut_ends(t, text, s), n = PyUnicode_GET_LENGTH(text);
    if (count >= 0) {
        *cps = malloc(((size_t)n + 1) * sizeof(Py_UCS4));
        *ends = malloc(((size_t)count + 1) * sizeof(int32_t));
        if (*cps && *ends) {
            if (n)
                memcpy(*cps, s->text, (size_t)n * sizeof(Py_UCS4));
            if (count)
                memcpy(*ends, s->ends, (size_t)count * sizeof(int32_t));
        } else {
            free(*cps);
            free(*ends);
            *cps = NULL;
            *ends = NULL;
            PyErr_NoMemory();
            count = -1;
        }
    }
    t->busy--;
    if (s == &own)
        scratch_free(&own);
    return count;
}
