/* Compiled kernels for the per-document hot loops: SimHash of a token list, pinyin-initial DNA and the
 * passage sketch (smallest winnowed seeds).
 *
 * Each function gives exactly what its numpy version in tokens.py/simhash.py and dna.py gives (the
 * tests compare them on real texts): the same token hash, the same IEEE double operations in the same
 * order for weights and DNA levels, and integer sums. Build with -ffp-contract=off so the compiler
 * never fuses a multiply and an add. Tables (IDF, letter codes) are passed in from Python as buffers,
 * so there is one copy of every table and it is built in one place.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_hash.h"
#include "_segment.h"
#include "_syntable.h"

#define DNA_COLUMNS 23          /* dna.py DNA_LETTERS */
#define MAX_CODEPOINT 0x2FFFF   /* dna.py _codepoints: larger code points read the last table entry */

/* BYTE_BITS[v][j] is all ones where bit j of v is set: SimHash adds a weight to those bits. */
static int64_t BYTE_BITS[256][8];

static void init_byte_bits(void)
{
    for (int v = 0; v < 256; v++)
        for (int j = 0; j < 8; j++)
            BYTE_BITS[v][j] = -(int64_t)((v >> j) & 1);
}

typedef struct {
    uint64_t hash;
    int64_t count; /* 0: empty slot */
} Slot;

/* A token the kernels can read: a str, in its canonical form (Python < 3.12 may hold it otherwise). */
static int ready_token(PyObject *token, Py_ssize_t i)
{
    if (!PyUnicode_Check(token)) {
        PyErr_Format(PyExc_TypeError, "token %zd is %.100s, not str", i, Py_TYPE(token)->tp_name);
        return -1;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(token) < 0)
        return -1;
#endif
    return 0;
}

/* One more occurrence of hash h in an open-addressing table of `size` (a power of 2) slots. */
static inline void count_hash(Slot *table, size_t size, uint64_t h)
{
    size_t at = (size_t)(h >> 20) & (size - 1); /* low bits: the IDF buckets use the top 20 */
    while (table[at].count && table[at].hash != h)
        at = (at + 1) & (size - 1);
    table[at].hash = h;
    table[at].count++;
}

/* Distinct token hashes with their counts, in an open-addressing table of `size` (a power of 2) slots. */
static int count_tokens(PyObject *tokens, Slot *table, size_t size)
{
    Py_ssize_t n = PyList_GET_SIZE(tokens);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *token = PyList_GET_ITEM(tokens, i);
        if (ready_token(token, i) < 0)
            return -1;
        count_hash(table, size, token_hash(token));
    }
    return 0;
}

typedef struct {
    const uint64_t *keys;
    const double *values;
    const uint32_t *starts; /* 4 MB, not 8: half the cache lines a look-up misses */
    int bucket_bits;
    double median;
} IdfTable;

/* tokens.py idf_of for each hash: jieba's IDF, the median for unknown words, 0 for non-content.
 * The table (about 9 MB) is far bigger than the caches: the first two passes only prefetch, so the
 * misses of all tokens overlap instead of coming one after another. */
static void idf_of(const IdfTable *t, const uint64_t *hashes, double *out, Py_ssize_t n)
{
    int shift = 64 - t->bucket_bits;
    for (Py_ssize_t i = 0; i < n; i++)
        __builtin_prefetch(&t->starts[hashes[i] >> shift]);
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t at = t->starts[hashes[i] >> shift];
        __builtin_prefetch(&t->keys[at]);
        __builtin_prefetch(&t->values[at]);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t h = hashes[i], b = h >> shift;
        out[i] = t->median;
        for (uint32_t k = t->starts[b]; k < t->starts[b + 1]; k++)
            if (t->keys[k] == h) {
                out[i] = t->values[k];
                break;
            }
    }
}

static int get_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, Py_ssize_t min_items, const char *name)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->itemsize != itemsize || view->len / itemsize < min_items) {
        PyErr_Format(PyExc_ValueError, "%s: expected at least %zd items of %zd bytes", name, min_items, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static void release_buffers(Py_buffer *views, int n)
{
    while (n--)
        PyBuffer_Release(&views[n]);
}

/* Borrows n buffers, each at least min_items[k] items of itemsize[k] bytes; none is kept on failure. */
static int get_buffers(PyObject *const *objs, Py_buffer *views, int n, const Py_ssize_t *itemsize,
                       const Py_ssize_t *min_items, const char *const *names)
{
    for (int k = 0; k < n; k++)
        if (get_buffer(objs[k], &views[k], itemsize[k], min_items[k], names[k]) < 0) {
            release_buffers(views, k);
            return -1;
        }
    return 0;
}

/* tokens.py idf_buckets() as buffers (keys, values, starts), checked so no lookup reads past an end. */
static int idf_table(PyObject *const *objs, int bucket_bits, double median, Py_buffer *views, IdfTable *t)
{
    if (bucket_bits < 1 || bucket_bits > 30) {
        PyErr_SetString(PyExc_ValueError, "bucket_bits must be 1..30");
        return -1;
    }
    static const char *const names[3] = {"keys", "values", "starts"};
    const Py_ssize_t buckets = (Py_ssize_t)1 << bucket_bits, itemsize[3] = {8, 8, 4}, min_items[3] = {0, 0, buckets + 1};
    if (get_buffers(objs, views, 3, itemsize, min_items, names) < 0)
        return -1;
    *t = (IdfTable){views[0].buf, views[1].buf, views[2].buf, bucket_bits, median};
    if (views[1].len < views[0].len) {
        PyErr_SetString(PyExc_ValueError, "values: fewer than keys");
    } else if ((Py_ssize_t)t->starts[buckets] > views[0].len / 8) {
        PyErr_SetString(PyExc_ValueError, "starts points past the end of keys");
    } else {
        return 0;
    }
    release_buffers(views, 3);
    return -1;
}

/* Adds each distinct hash's weight to the bits where it has a 1: tokens.py hashed_weights + simhash_hashed. */
static uint64_t simhash_bits(const Slot *distinct, const double *idfs, Py_ssize_t n, int tfidf)
{
    int64_t ones[64] = {0}, sum = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!(idfs[i] > 0))
            continue;
        /* tokens.py: counts * (idf or 1.0), then * WEIGHT_SCALE, rounded half to even */
        int64_t weight = (int64_t)nearbyint((double)distinct[i].count * (tfidf ? idfs[i] : 1.0) * 1000.0);
        uint64_t h = distinct[i].hash;
        sum += weight;
        for (int k = 0; k < 8; k++) {
            const int64_t *mask = BYTE_BITS[(h >> (8 * k)) & 0xFF];
            for (int j = 0; j < 8; j++) /* contiguous lanes, no shifts: the compiler vectorises this */
                ones[8 * k + j] += weight & mask[j];
        }
    }
    uint64_t fp = 0;
    for (int b = 0; b < 64; b++)
        if (2 * ones[b] - sum > 0) /* + weight where the bit is 1, - where it is 0 */
            fp |= 1ULL << b;
    return fp;
}

/* The SimHash of a counted table: its distinct hashes compacted to the front (in place: the k-th kept slot
lies at or after k), their IDF weights looked up (scratch and idfs hold one entry per distinct hash). */
static uint64_t weigh_table(Slot *table, size_t size, uint64_t *scratch, double *idfs, const IdfTable *idf,
                            int tfidf)
{
    Py_ssize_t distinct = 0;
    for (size_t i = 0; i < size; i++)
        if (table[i].count)
            table[distinct++] = table[i];
    for (Py_ssize_t i = 0; i < distinct; i++)
        scratch[i] = table[i].hash;
    idf_of(idf, scratch, idfs, distinct);
    return simhash_bits(table, idfs, distinct, tfidf);
}

/* SimHash of a token list; -1 with an exception set on a bad token or no memory. */
static int simhash_of(PyObject *tokens, const IdfTable *idf, int tfidf, uint64_t *fp)
{
    Py_ssize_t n = PyList_GET_SIZE(tokens);
    size_t size = 16;
    while (size < 2 * (size_t)n)
        size <<= 1;
    Slot *table = calloc(size, sizeof(Slot));
    uint64_t *hashes = malloc(sizeof(uint64_t) * (size_t)n + 1);
    double *idfs = malloc(sizeof(double) * (size_t)n + 1);
    int err = -1;
    if (!table || !hashes || !idfs)
        PyErr_NoMemory();
    else if (count_tokens(tokens, table, size) == 0) {
        *fp = weigh_table(table, size, hashes, idfs, idf, tfidf);
        err = 0;
    }
    free(table);
    free(hashes);
    free(idfs);
    return err;
}

PyDoc_STRVAR(simhash_tokens_doc,
"simhash_tokens(tokens, keys, values, starts, bucket_bits, median, tfidf) -> int\n\n"
"SimHash of a token list, equal to simhash_hashed(*Tokenizer.hashed_weights(...)).");

static PyObject *simhash_tokens(PyObject *self, PyObject *args)
{
    PyObject *tokens, *tables[3];
    int bucket_bits, tfidf;
    double median;
    if (!PyArg_ParseTuple(args, "O!OOOidp", &PyList_Type, &tokens, &tables[0], &tables[1], &tables[2],
                          &bucket_bits, &median, &tfidf))
        return NULL;
    Py_buffer views[3];
    IdfTable idf;
    if (idf_table(tables, bucket_bits, median, views, &idf) < 0)
        return NULL;
    uint64_t fp;
    int err = simhash_of(tokens, &idf, tfidf, &fp);
    release_buffers(views, 3);
    return err < 0 ? NULL : PyLong_FromUnsignedLongLong(fp);
}

typedef struct {
    int granularity, step, levels, anchored;
    const uint8_t *codes_of;   /* code point -> letter code 1..26, 0 for none */
    const uint8_t *is_end;     /* code point -> sentence end */
    const int64_t *column;     /* letter code -> DNA column (DNA_COLUMNS: a spare column) */
    const double *shares;      /* expected share of each column's letter */
} DnaSpec;

typedef struct {
    uint8_t *letters;    /* letter codes of the text's Han characters */
    Py_ssize_t n;        /* how many */
    Py_ssize_t *bounds;  /* 0, the sentence ends strictly inside the stream, n: window boundaries */
    Py_ssize_t n_bounds, capacity;
} Stream;

static int add_bound(Stream *s, Py_ssize_t at)
{
    if (s->n_bounds && s->bounds[s->n_bounds - 1] == at)
        return 0;
    if (s->n_bounds == s->capacity) {
        Py_ssize_t *grown = realloc(s->bounds, sizeof(Py_ssize_t) * (size_t)(2 * s->capacity));
        if (!grown)
            return -1;
        s->bounds = grown;
        s->capacity *= 2;
    }
    s->bounds[s->n_bounds++] = at;
    return 0;
}

/* dna.py _stream and the bounds of windows(): letter codes, and the letter indices where sentences end. */
static int letter_stream(PyObject *text, const DnaSpec *spec, Stream *s)
{
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t len = PyUnicode_GET_LENGTH(text);
    s->n = s->n_bounds = 0;
    s->capacity = 64;
    s->letters = malloc((size_t)len + 1);
    s->bounds = malloc(sizeof(Py_ssize_t) * (size_t)s->capacity);
    if (!s->letters || !s->bounds || add_bound(s, 0) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < len; i++) {
        Py_UCS4 cp = PyUnicode_READ(kind, data, i);
        if (cp > MAX_CODEPOINT)
            cp = MAX_CODEPOINT;
        uint8_t code = spec->codes_of[cp];
        if (code)
            s->letters[s->n++] = code;
        else if (spec->anchored && spec->is_end[cp] && add_bound(s, s->n) < 0)
            return -1;
    }
    if (s->n_bounds > 1 && s->bounds[s->n_bounds - 1] == s->n)
        s->n_bounds--; /* an end after the last letter is the stream's own end, added next */
    return add_bound(s, s->n);
}

/* dna.py windows, anchored: the first bound >= at if it is <= limit, else min(at, n). */
static Py_ssize_t next_bound(const Stream *s, Py_ssize_t *i, Py_ssize_t at, Py_ssize_t limit)
{
    while (*i < s->n_bounds && s->bounds[*i] < at)
        (*i)++;
    if (*i < s->n_bounds && s->bounds[*i] <= limit)
        return s->bounds[*i];
    return at < s->n ? at : s->n;
}

/* dna.py window_values for one window: quantised deviation of letter counts from the reference. */
static uint64_t window_value(const Stream *s, Py_ssize_t start, Py_ssize_t end, const DnaSpec *spec)
{
    int64_t counts[DNA_COLUMNS + 1] = {0};
    for (Py_ssize_t i = start; i < end; i++)
        counts[spec->column[s->letters[i]]]++;
    uint64_t value = 0;
    double half = spec->levels / 2.0, top = spec->levels - 1;
    for (int c = 0; c < DNA_COLUMNS; c++) {
        double expected = (double)(end - start) * spec->shares[c];
        double z = ((double)counts[c] - expected) / sqrt(expected + 1.0);
        double level = floor(z + half);
        level = level < 0 ? 0 : (level > top ? top : level);
        value = value * (uint64_t)spec->levels + (uint64_t)level;
    }
    return value;
}

static int emit(PyObject *out, const Stream *s, Py_ssize_t start, Py_ssize_t end, const DnaSpec *spec)
{
    PyObject *v = PyLong_FromUnsignedLongLong(window_value(s, start, end, spec));
    if (!v)
        return -1;
    int err = PyList_Append(out, v);
    Py_DECREF(v);
    return err;
}

/* dna.py windows() and window_values(): each window's DNA appended to out, in text order. */
static int dna_windows(const Stream *s, const DnaSpec *spec, PyObject *out)
{
    Py_ssize_t n = s->n, m = spec->granularity, step = spec->step;
    if (n == 0)
        return 0;
    if (n <= m)
        return emit(out, s, 0, n, spec);
    if (!spec->anchored) {
        for (Py_ssize_t start = 0; start < n - m + step; start += step)
            if (start < n && (start == 0 || start + m <= n + step / 2))
                if (emit(out, s, start, start + m < n ? start + m : n, spec) < 0)
                    return -1;
        return 0;
    }
    Py_ssize_t start = 0, i = 0;
    for (;;) {
        /* bounds are sorted and every search is at or after the previous start's: i never moves back */
        Py_ssize_t from = i, end = next_bound(s, &i, start + m, start + 2 * m);
        if (emit(out, s, start, end, spec) < 0)
            return -1;
        if (end >= n)
            return 0;
        i = from;
        start = next_bound(s, &i, start + step, start + 2 * step);
    }
}

static int dna_spec(PyObject *args, PyObject **text, DnaSpec *spec, Py_buffer views[4])
{
    PyObject *objs[4];
    if (!PyArg_ParseTuple(args, "UOOOOiiip", text, &objs[0], &objs[1], &objs[2], &objs[3],
                          &spec->granularity, &spec->step, &spec->levels, &spec->anchored))
        return -1;
    if (spec->granularity < 1 || spec->step < 1 || spec->levels < 2) {
        PyErr_SetString(PyExc_ValueError, "granularity and step must be >= 1, levels >= 2");
        return -1;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(*text) < 0)
        return -1;
#endif
    static const char *const names[4] = {"codes_of", "is_end", "column", "shares"};
    const Py_ssize_t itemsize[4] = {1, 1, 8, 8}, min_items[4] = {MAX_CODEPOINT + 1, MAX_CODEPOINT + 1, 27, DNA_COLUMNS};
    if (get_buffers(objs, views, 4, itemsize, min_items, names) < 0)
        return -1;
    spec->codes_of = views[0].buf;
    spec->is_end = views[1].buf;
    spec->column = views[2].buf;
    spec->shares = views[3].buf;
    for (int c = 0; c < 27; c++)
        if (spec->column[c] < 0 || spec->column[c] > DNA_COLUMNS) {
            PyErr_SetString(PyExc_ValueError, "column: values must be 0..23");
            release_buffers(views, 4);
            return -1;
        }
    return 0;
}

PyDoc_STRVAR(dna_doc,
"dna(text, codes_of, is_end, column, shares, granularity, step, levels, anchored) -> list[int]\n\n"
"The DNA window values of a text, equal to dna.py's numpy path.");

static PyObject *dna(PyObject *self, PyObject *args)
{
    PyObject *text;
    DnaSpec spec;
    Py_buffer views[4];
    if (dna_spec(args, &text, &spec, views) < 0)
        return NULL;
    Stream stream = {0};
    PyObject *result = PyList_New(0);
    if (result && letter_stream(text, &spec, &stream) < 0) {
        PyErr_NoMemory();
        Py_CLEAR(result);
    }
    if (result && dna_windows(&stream, &spec, result) < 0)
        Py_CLEAR(result);
    free(stream.letters);
    free(stream.bounds);
    release_buffers(views, 4);
    return result;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The value of each window's leftmost minimum (seeds.py winnow), once per change of position; returns the count. */
static Py_ssize_t winnowed(const uint64_t *h, Py_ssize_t n, Py_ssize_t w, uint64_t *picked)
{
    Py_ssize_t width = n <= w ? n : w, windows = n - width + 1, m = 0, last = -1;
    for (Py_ssize_t i = 0; i < windows; i++) {
        Py_ssize_t best = i, end = i + width - 1;
        if (last >= i) /* the previous minimum is still inside: only the new hash can beat it */
            best = h[end] < h[last] ? end : last;
        else
            for (Py_ssize_t j = i + 1; j <= end; j++)
                if (h[j] < h[best])
                    best = j;
        if (best != last)
            picked[m++] = h[best];
        last = best;
    }
    return m;
}

/* The `size` smallest distinct values of v[0..m), sorted, moved to the front of v; returns how many. */
static Py_ssize_t smallest_distinct(uint64_t *v, Py_ssize_t m, Py_ssize_t size)
{
    uint64_t best[64];
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        uint64_t x = v[i];
        if (count == size && x >= best[count - 1])
            continue;
        Py_ssize_t at = count;
        while (at > 0 && best[at - 1] > x)
            at--;
        if (at > 0 && best[at - 1] == x)
            continue;
        Py_ssize_t last = count < size ? count : size - 1;
        memmove(&best[at + 1], &best[at], sizeof(uint64_t) * (size_t)(last - at));
        best[at] = x;
        if (count < size)
            count++;
    }
    memcpy(v, best, sizeof(uint64_t) * (size_t)count);
    return count;
}

PyDoc_STRVAR(smallest_seeds_doc,
"smallest_seeds(codes, size, k, w) -> list[int]\n\n"
"The `size` smallest distinct winnowed seed hashes of a letter stream (uint8 codes 0..31), equal to\n"
"seeds.py's numpy path.");

static PyObject *smallest_seeds(PyObject *self, PyObject *args)
{
    PyObject *obj;
    Py_ssize_t size;
    int k, w;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "Onii", &obj, &size, &k, &w))
        return NULL;
    if (k < 1 || k > 12 || w < 1) {
        PyErr_SetString(PyExc_ValueError, "k must be 1..12 and w >= 1");
        return NULL;
    }
    if (get_buffer(obj, &view, 1, 0, "codes") < 0)
        return NULL;
    const uint8_t *c = view.buf;
    Py_ssize_t n = view.len - k + 1;
    for (Py_ssize_t i = 0; i < view.len; i++)
        if (c[i] > 31) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_ValueError, "codes: letter codes must be 0..31");
            return NULL;
        }
    PyObject *out = PyList_New(0);
    if (!out || n <= 0 || size <= 0) {
        PyBuffer_Release(&view);
        return out;
    }
    uint64_t *h = malloc(2 * (size_t)n * sizeof(uint64_t));
    if (!h) {
        PyBuffer_Release(&view);
        Py_DECREF(out);
        return PyErr_NoMemory();
    }
    uint64_t code = 0, mask = ((uint64_t)1 << (5 * k)) - 1;
    for (Py_ssize_t i = 0; i < view.len; i++) {
        code = ((code << 5) | c[i]) & mask;
        if (i >= k - 1)
            h[i - k + 1] = mix64(code);
    }
    PyBuffer_Release(&view);
    uint64_t *picked = h + n;
    Py_ssize_t m = winnowed(h, n, w, picked);
    if (size < 64) /* a few values wanted: kept sorted as they come instead of sorting all (same list) */
        m = smallest_distinct(picked, m, size);
    else
        qsort(picked, (size_t)m, sizeof(uint64_t), cmp_u64);
    for (Py_ssize_t i = 0, taken = 0; i < m && taken < size; i++) {
        if (i > 0 && picked[i] == picked[i - 1])
            continue;
        PyObject *v = PyLong_FromUnsignedLongLong(picked[i]);
        if (!v || PyList_Append(out, v) < 0) {
            Py_XDECREF(v);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(v);
        taken++;
    }
    free(h);
    return out;
}

PyDoc_STRVAR(canonical_tokens_doc,
"canonical_tokens(tokens, synonym_table) -> list\n\n"
"synonyms.canonical_tokens: each token of two or more characters that is a word of the table becomes its\n"
"canonical member (the table holds words of two or more characters only).");

static PyObject *canonical_tokens(PyObject *self, PyObject *args)
{
    PyObject *tokens, *capsule;
    if (!PyArg_ParseTuple(args, "O!O:canonical_tokens", &PyList_Type, &tokens, &capsule))
        return NULL;
    const SynIndex *syn = syn_index(capsule);
    if (!syn)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(tokens);
    uint64_t *hashes = malloc(sizeof(uint64_t) * (size_t)(n + 1));
    PyObject *out = hashes ? PyList_New(n) : PyErr_NoMemory();
    /* two passes, so the table's cache misses of all tokens overlap: hashes (their slots fetched), then the
       look-ups; 0 marks a token not looked up (a hash looked up has its low bit set) */
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *token = PyList_GET_ITEM(tokens, i);
        hashes[i] = PyUnicode_Check(token) && PyUnicode_GET_LENGTH(token) > 1 ? token_hash(token) | 1 : 0;
        if (hashes[i])
            syn_prefetch(syn, hashes[i]);
    }
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *token = PyList_GET_ITEM(tokens, i), *word = token;
        const SynSlot *hit = hashes[i] ? syn_find_str(syn, hashes[i], token) : NULL;
        if (hit)
            word = PyTuple_GET_ITEM(syn->canon, hit->index);
        Py_INCREF(word);
        PyList_SET_ITEM(out, i, word);
    }
    free(hashes);
    return out;
}

/* Looks each token of two or more characters up in the synonym table (canonical_tokens' rule) and gives
 * the word that stands for it (borrowed) and that word's hash (tokens.py's hash). */
static int canonical_words(PyObject *tokens, const SynIndex *syn, PyObject **out, uint64_t *hashes)
{
    Py_ssize_t n = PyList_GET_SIZE(tokens);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *token = PyList_GET_ITEM(tokens, i);
        if (ready_token(token, i) < 0)
            return -1;
        hashes[i] = token_hash(token);
        out[i] = token;
        if (PyUnicode_GET_LENGTH(token) > 1)
            syn_prefetch(syn, hashes[i]);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        const SynSlot *hit = PyUnicode_GET_LENGTH(out[i]) > 1 ? syn_find_str(syn, hashes[i], out[i]) : NULL;
        if (hit) {
            out[i] = PyTuple_GET_ITEM(syn->canon, hit->index);
            hashes[i] = hit->canon_hash;
        }
    }
    return 0;
}

/* The words joined into one new str (each word is canonical, so the widest kind is the join's). */
static PyObject *joined(PyObject **words, Py_ssize_t n)
{
    Py_ssize_t len = 0;
    Py_UCS4 maxchar = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        len += PyUnicode_GET_LENGTH(words[i]);
        if (PyUnicode_MAX_CHAR_VALUE(words[i]) > maxchar)
            maxchar = PyUnicode_MAX_CHAR_VALUE(words[i]);
    }
    PyObject *out = PyUnicode_New(len, maxchar);
    if (!out)
        return NULL;
    int kind = PyUnicode_KIND(out);
    char *dst = PyUnicode_DATA(out);
    for (Py_ssize_t i = 0, at = 0; i < n; i++) {
        Py_ssize_t m = PyUnicode_GET_LENGTH(words[i]);
        if (PyUnicode_KIND(words[i]) == kind) {
            memcpy(dst + at * kind, PyUnicode_DATA(words[i]), (size_t)(m * kind));
        } else {
            int wk = PyUnicode_KIND(words[i]);
            const void *src = PyUnicode_DATA(words[i]);
            for (Py_ssize_t j = 0; j < m; j++)
                PyUnicode_WRITE(kind, dst, at + j, PyUnicode_READ(wk, src, j));
        }
        at += m;
    }
    return out;
}

/* SimHash of hashed tokens (one hash per token, repeats counted): simhash_of without hashing again. */
static int simhash_hashes(const uint64_t *hashes, Py_ssize_t n, const IdfTable *idf, int tfidf, uint64_t *fp)
{
    size_t size = 16;
    while (size < 2 * (size_t)n)
        size <<= 1;
    Slot *table = calloc(size, sizeof(Slot));
    uint64_t *unique = malloc(sizeof(uint64_t) * (size_t)n + 1);
    double *idfs = malloc(sizeof(double) * (size_t)n + 1);
    int err = -1;
    if (!table || !unique || !idfs) {
        PyErr_NoMemory();
    } else {
        for (Py_ssize_t i = 0; i < n; i++)
            count_hash(table, size, hashes[i]);
        *fp = weigh_table(table, size, unique, idfs, idf, tfidf);
        err = 0;
    }
    free(table);
    free(unique);
    free(idfs);
    return err;
}

/* The synonym and IDF tables both canonical SimHash kernels read, from their arguments after the cut's. */
typedef struct {
    Py_buffer idf_views[3];
    const SynIndex *syn;
    IdfTable idf;
    int tfidf;
} SimTables;

static int sim_tables(PyObject *args, Py_ssize_t skip, SimTables *t)
{
    PyObject *tail = PyTuple_GetSlice(args, skip, PY_SSIZE_T_MAX), *capsule, *idf_objs[3];
    int idf_bits;
    double median;
    int ok = tail && PyArg_ParseTuple(tail, "OOOOidp:canonical_simhash", &capsule, &idf_objs[0], &idf_objs[1],
                                      &idf_objs[2], &idf_bits, &median, &t->tfidf);
    Py_XDECREF(tail);  /* the capsule stays alive in args */
    if (!ok || !(t->syn = syn_index(capsule)))
        return -1;
    return idf_table(idf_objs, idf_bits, median, t->idf_views, &t->idf);
}

static void sim_tables_release(SimTables *t)
{
    release_buffers(t->idf_views, 3);
}

PyDoc_STRVAR(canonical_simhash_doc,
"canonical_simhash(tokens, synonym_table, idf_keys, idf_values, idf_starts, idf_bucket_bits, median, tfidf)\n"
"    -> (int, str)\n\n"
"(simhash_tokens(c), ''.join(c)) of c = canonical_tokens(tokens): one pass, each token hashed once\n"
"(the table holds the hash of each canonical member).");

static PyObject *canonical_simhash(PyObject *self, PyObject *args)
{
    PyObject *tokens = PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : NULL;
    if (!tokens || !PyList_Check(tokens)) {
        PyErr_SetString(PyExc_TypeError, "canonical_simhash: tokens must be a list");
        return NULL;
    }
    SimTables tables;
    if (sim_tables(args, 1, &tables) < 0)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(tokens);
    uint64_t *hashes = calloc((size_t)n + 1, sizeof(uint64_t));  /* calloc: gcc cannot see canonical_words fill it */
    PyObject **out = malloc(sizeof(PyObject *) * (size_t)n + 1), *result = NULL;
    uint64_t fp = 0;
    if (!hashes || !out) {
        PyErr_NoMemory();
    } else if (canonical_words(tokens, tables.syn, out, hashes) == 0
               && simhash_hashes(hashes, n, &tables.idf, tables.tfidf, &fp) == 0) {
        PyObject *text = joined(out, n);
        result = text ? Py_BuildValue("KN", (unsigned long long)fp, text) : NULL;
    }
    free(hashes);
    free(out);
    sim_tables_release(&tables);
    return result;
}

/* canonical_words over the tokens text[ends[i - 1]:ends[i]] of a code-point array, without str objects:
 * out[i] is the slot of the token's word when it has a canonical member, else NULL (it stands for itself). */
static void canonical_ranges(const Py_UCS4 *cps, const int32_t *ends, Py_ssize_t n, const SynIndex *syn,
                             const SynSlot **out, uint64_t *hashes)
{
    for (Py_ssize_t i = 0, a = 0; i < n; a = ends[i++]) {
        hashes[i] = cps_hash(cps + a, ends[i] - a);
        out[i] = NULL;
        if (ends[i] - a > 1)
            syn_prefetch(syn, hashes[i]);
    }
    for (Py_ssize_t i = 0, a = 0; i < n; a = ends[i++]) {
        const SynSlot *hit = ends[i] - a > 1 ? syn_find(syn, hashes[i], cps + a, ends[i] - a) : NULL;
        if (hit) {
            out[i] = hit;
            hashes[i] = hit->canon_hash;
        }
    }
}

/* The tokens joined into one new str: canonical members where out[i] is a slot, else the text's own range. */
static PyObject *joined_ranges(const Py_UCS4 *cps, const int32_t *ends, Py_ssize_t n, const SynIndex *syn,
                               const SynSlot **out)
{
    Py_ssize_t len = 0;
    Py_UCS4 maxchar = 0;
    for (Py_ssize_t i = 0, a = 0; i < n; a = ends[i++]) {
        const Py_UCS4 *src = out[i] ? syn->cps + out[i]->canon_at : cps + a;
        Py_ssize_t m = out[i] ? out[i]->canon_len : ends[i] - a;
        len += m;
        for (Py_ssize_t k = 0; k < m; k++)
            if (src[k] > maxchar)
                maxchar = src[k];
    }
    PyObject *text = PyUnicode_New(len, maxchar);
    if (!text)
        return NULL;
    int kind = PyUnicode_KIND(text);
    void *dst = PyUnicode_DATA(text);
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0, a = 0; i < n; a = ends[i++]) {
        const Py_UCS4 *src = out[i] ? syn->cps + out[i]->canon_at : cps + a;
        Py_ssize_t m = out[i] ? out[i]->canon_len : ends[i] - a;
        for (Py_ssize_t k = 0; k < m; k++)
            PyUnicode_WRITE(kind, dst, at++, src[k]);
    }
    return text;
}

PyDoc_STRVAR(canonical_simhash_text_doc,
"canonical_simhash_text(segmenter_table, text, synonym_table, idf_keys, idf_values, idf_starts, idf_bucket_bits,\n"
"                       median, tfidf) -> (int, str)\n\n"
"canonical_simhash(jieba_cut(segmenter_table, text), ...) from the cut's token ends: no token objects.");

static PyObject *canonical_simhash_text(PyObject *self, PyObject *args)
{
    PyObject *seg = PyTuple_GET_SIZE(args) > 1 ? PyTuple_GET_ITEM(args, 0) : NULL;
    PyObject *text = seg ? PyTuple_GET_ITEM(args, 1) : NULL;
    if (!text || !PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "canonical_simhash_text: (segmenter_table, str, ...) expected");
        return NULL;
    }
    SimTables tables;
    if (sim_tables(args, 2, &tables) < 0)
        return NULL;
    Py_UCS4 *cps = NULL;
    int32_t *ends = NULL;
    Py_ssize_t n = jieba_cut_ends(seg, text, &cps, &ends);
    uint64_t *hashes = n >= 0 ? calloc((size_t)n + 1, sizeof(uint64_t)) : NULL;  /* calloc: as canonical_simhash */
    const SynSlot **out = n >= 0 ? malloc(sizeof(SynSlot *) * (size_t)n + 1) : NULL;
    PyObject *result = NULL;
    uint64_t fp = 0;
    if (n >= 0 && (!hashes || !out)) {
        PyErr_NoMemory();
    } else if (n >= 0) {
        canonical_ranges(cps, ends, n, tables.syn, out, hashes);
        if (simhash_hashes(hashes, n, &tables.idf, tables.tfidf, &fp) == 0) {
            PyObject *joined_text = joined_ranges(cps, ends, n, tables.syn, out);
            result = joined_text ? Py_BuildValue("KN", (unsigned long long)fp, joined_text) : NULL;
        }
    }
    free(cps);
    free(ends);
    free(hashes);
    free((void *)out);
    sim_tables_release(&tables);
    return result;
}

/* Exact k-gram codes of 5-bit letters (seeds.py gram_codes, k <= 12); 0 when a code is over 31. */
static int grams(const uint8_t *c, Py_ssize_t n, int k, uint64_t *out)
{
    uint64_t code = 0, mask = ((uint64_t)1 << (5 * k)) - 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (c[i] > 31)
            return 0;
        code = ((code << 5) | c[i]) & mask;
        if (i >= k - 1)
            out[i - k + 1] = code;
    }
    return 1;
}

typedef struct {
    uint64_t *slots; /* gram code + 1 (0: empty) */
    size_t mask;
} GramSet;

static int gram_set(GramSet *set, const uint64_t *g, Py_ssize_t n)
{
    size_t size = 16;
    while (size < 2 * (size_t)n)
        size <<= 1;
    set->slots = calloc(size, sizeof(uint64_t));
    set->mask = size - 1;
    if (!set->slots)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        size_t at = (size_t)mix64(g[i]) & set->mask;
        while (set->slots[at] && set->slots[at] != g[i] + 1)
            at = (at + 1) & set->mask;
        set->slots[at] = g[i] + 1;
    }
    return 0;
}

static int gram_in(const GramSet *set, uint64_t g)
{
    size_t at = (size_t)mix64(g) & set->mask;
    while (set->slots[at]) {
        if (set->slots[at] == g + 1)
            return 1;
        at = (at + 1) & set->mask;
    }
    return 0;
}

static int append_run(PyObject *out, Py_ssize_t s, Py_ssize_t e)
{
    PyObject *t = Py_BuildValue("(nn)", s, e);
    int err = t ? PyList_Append(out, t) : -1;
    Py_XDECREF(t);
    return err;
}

/* matcher.py _covered + _runs: letters covered by the grams of g found in other, as [start, end) runs,
 * gaps of <= merge_gap letters bridged, runs shorter than min_run dropped. mask: n_letters bytes. */
static PyObject *covered_runs(const uint64_t *g, Py_ssize_t n_grams, Py_ssize_t n_letters, int k,
                              const GramSet *other, Py_ssize_t merge_gap, Py_ssize_t min_run, uint8_t *mask)
{
    Py_ssize_t until = 0;
    for (Py_ssize_t j = 0; j < n_letters; j++) {   /* letter j is covered by a present gram i, i <= j < i + k */
        if (j < n_grams && gram_in(other, g[j]))
            until = j + k;
        mask[j] = j < until;
    }
    PyObject *out = PyList_New(0);
    Py_ssize_t run_s = -1, run_e = -1;
    for (Py_ssize_t j = 0; out && j < n_letters;) {
        if (!mask[j]) {
            j++;
            continue;
        }
        Py_ssize_t s = j;
        while (j < n_letters && mask[j])
            j++;
        if (run_s >= 0 && s - run_e <= merge_gap) {
            run_e = j;
            continue;
        }
        if (run_s >= 0 && run_e - run_s >= min_run && append_run(out, run_s, run_e) < 0)
            Py_CLEAR(out);
        run_s = s;
        run_e = j;
    }
    if (out && run_s >= 0 && run_e - run_s >= min_run && append_run(out, run_s, run_e) < 0)
        Py_CLEAR(out);
    return out;
}

PyDoc_STRVAR(align_runs_doc,
"align_runs(source_codes, suspect_codes, k, merge_gap, min_run) -> (list, list) | None\n\n"
"matcher.align: the letter runs of each stream covered by k-grams the other stream also has, gaps of\n"
"<= merge_gap bridged, runs under min_run dropped; None when a letter code is over 31.");

static PyObject *align_runs(PyObject *self, PyObject *args)
{
    PyObject *objs[2];
    int k;
    Py_ssize_t merge_gap, min_run;
    if (!PyArg_ParseTuple(args, "OOinn", &objs[0], &objs[1], &k, &merge_gap, &min_run))
        return NULL;
    if (k < 1 || k > 12) {
        PyErr_SetString(PyExc_ValueError, "k must be 1..12");
        return NULL;
    }
    Py_buffer v[2];
    static const char *const names[2] = {"source_codes", "suspect_codes"};
    const Py_ssize_t itemsize[2] = {1, 1}, min_items[2] = {0, 0};
    if (get_buffers(objs, v, 2, itemsize, min_items, names) < 0)
        return NULL;
    Py_ssize_t n[2] = {v[0].len, v[1].len}, m[2] = {n[0] - k + 1, n[1] - k + 1};
    if (m[0] <= 0 || m[1] <= 0) {
        release_buffers(v, 2);
        return Py_BuildValue("([],[])");
    }
    uint64_t *g[2] = {malloc(sizeof(uint64_t) * (size_t)m[0]), malloc(sizeof(uint64_t) * (size_t)m[1])};
    uint8_t *mask = malloc((size_t)(n[0] > n[1] ? n[0] : n[1]) + 1);
    GramSet set[2] = {{0}, {0}};
    PyObject *result = NULL, *runs[2] = {NULL, NULL};
    if (!g[0] || !g[1] || !mask) {
        PyErr_NoMemory();
    } else if (!grams(v[0].buf, n[0], k, g[0]) || !grams(v[1].buf, n[1], k, g[1])) {
        result = Py_None;
        Py_INCREF(result);
    } else if (gram_set(&set[0], g[0], m[0]) < 0 || gram_set(&set[1], g[1], m[1]) < 0) {
        PyErr_NoMemory();
    } else {
        for (int side = 0; side < 2; side++)
            runs[side] = covered_runs(g[side], m[side], n[side], k, &set[1 - side], merge_gap, min_run, mask);
        if (runs[0] && runs[1])
            result = PyTuple_Pack(2, runs[0], runs[1]);
    }
    Py_XDECREF(runs[0]);
    Py_XDECREF(runs[1]);
    free(set[0].slots);
    free(set[1].slots);
    free(g[0]);
    free(g[1]);
    free(mask);
    release_buffers(v, 2);
    return result;
}

/* ---- Text kernels (normalize.py, dna.py): one pass over a str instead of numpy arrays and scans ---- */

#define FOLD_DELETE 0xFFFFFFFFu /* normalize.py _DELETE */
#define FOLD_EXPAND 0xFFFFFFFEu /* normalize.py _EXPAND */

/* A str from n UCS4 code points (PyUnicode_FromKindAndData picks the narrowest kind). */
static PyObject *str_of(const Py_UCS4 *cps, Py_ssize_t n)
{
    return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, cps, n);
}

/* The folded code points of data (one loop per kind), or -1 at the first one that maps to FOLD_EXPAND. */
#define FOLD_LOOP(NAME, T)                                                                                \
    static Py_ssize_t NAME(const void *data, Py_ssize_t len, const uint32_t *lut, Py_UCS4 *out)           \
    {                                                                                                     \
        const T *d = data;                                                                                \
        Py_ssize_t n = 0;                                                                                 \
        for (Py_ssize_t i = 0; i < len; i++) {                                                            \
            uint32_t v = lut[d[i]];                                                                       \
            if (v == FOLD_EXPAND)                                                                         \
                return -1;                                                                                \
            if (v != FOLD_DELETE)                                                                         \
                out[n++] = v;                                                                             \
        }                                                                                                 \
        return n;                                                                                         \
    }
FOLD_LOOP(fold_loop_1, Py_UCS1)
FOLD_LOOP(fold_loop_2, Py_UCS2)
FOLD_LOOP(fold_loop_4, Py_UCS4)

PyDoc_STRVAR(fold_text_doc,
"fold_text(text, lut) -> str | None\n\n"
"normalize.py _fold_chars' table path: each code point through lut (0x110000 uint32), _DELETE dropped;\n"
"None when a code point maps to _EXPAND (the caller then runs whole-string NFKC).");

static PyObject *fold_text(PyObject *self, PyObject *args)
{
    PyObject *text, *lut_obj;
    if (!PyArg_ParseTuple(args, "UO", &text, &lut_obj))
        return NULL;
    Py_buffer view;
    if (get_buffer(lut_obj, &view, 4, 0x110000, "lut") < 0)
        return NULL;
    const uint32_t *lut = view.buf;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t len = PyUnicode_GET_LENGTH(text), n = 0;
    Py_UCS4 *out = malloc(sizeof(Py_UCS4) * (size_t)len + 1);
    PyObject *result = NULL;
    if (!out) {
        PyErr_NoMemory();
        goto done;
    }
    n = kind == PyUnicode_2BYTE_KIND ? fold_loop_2(data, len, lut, out)
        : kind == PyUnicode_1BYTE_KIND ? fold_loop_1(data, len, lut, out) : fold_loop_4(data, len, lut, out);
    result = n < 0 ? Py_NewRef(Py_None) : str_of(out, n);
done:
    free(out);
    PyBuffer_Release(&view);
    return result;
}

/* Whether some data[i-1], data[i] is (first[k], second[k]): one loop per kind, so the kind is not tested
 * at every character. */
#define HAS_PAIR_LOOP(T)                                                                                  \
    do {                                                                                                  \
        const T *d = data;                                                                                \
        for (Py_ssize_t i = 1; i < len; i++)                                                              \
            for (int k = 0; k < np_; k++)                                                                 \
                if (d[i - 1] == first[k] && d[i] == second[k])                                            \
                    return 1;                                                                             \
    } while (0)

static int pair_in(const void *data, int kind, Py_ssize_t len, const Py_UCS4 *first, const Py_UCS4 *second, int np_)
{
    if (kind == PyUnicode_2BYTE_KIND)
        HAS_PAIR_LOOP(Py_UCS2);
    else if (kind == PyUnicode_1BYTE_KIND)
        HAS_PAIR_LOOP(Py_UCS1);
    else
        HAS_PAIR_LOOP(Py_UCS4);
    return 0;
}

PyDoc_STRVAR(has_pair_doc,
"has_pair(text, pairs) -> bool\n\n"
"Whether any two-character string of pairs (its characters taken two by two) is in text: `p in text`\n"
"for each p, in one pass.");

static PyObject *has_pair(PyObject *self, PyObject *args)
{
    PyObject *text, *pairs;
    if (!PyArg_ParseTuple(args, "UU", &text, &pairs))
        return NULL;
    Py_ssize_t np_ = PyUnicode_GET_LENGTH(pairs) / 2;
    if (np_ > 8 || PyUnicode_GET_LENGTH(pairs) % 2) {
        PyErr_SetString(PyExc_ValueError, "pairs: an even number of characters, at most 16");
        return NULL;
    }
    Py_UCS4 first[8], second[8];
    for (Py_ssize_t k = 0; k < np_; k++) {
        first[k] = PyUnicode_READ_CHAR(pairs, 2 * k);
        second[k] = PyUnicode_READ_CHAR(pairs, 2 * k + 1);
    }
    if (pair_in(PyUnicode_DATA(text), PyUnicode_KIND(text), PyUnicode_GET_LENGTH(text), first, second, (int)np_))
        Py_RETURN_TRUE;
    Py_RETURN_FALSE;
}

PyDoc_STRVAR(collapse_runs_doc,
"collapse_runs(text, chars) -> str\n\n"
"Every run of two or more characters of chars replaced by its first: re.sub('([C])[C]+', r'\\1', text) for\n"
"C = chars (at most 8), in one pass; text itself when it has no such run.");

static PyObject *collapse_runs(PyObject *self, PyObject *args)
{
    PyObject *text, *chars;
    if (!PyArg_ParseTuple(args, "UU", &text, &chars))
        return NULL;
    Py_ssize_t nc = PyUnicode_GET_LENGTH(chars), len = PyUnicode_GET_LENGTH(text), n = 0;
    if (nc > 8) {
        PyErr_SetString(PyExc_ValueError, "chars: at most 8");
        return NULL;
    }
    Py_UCS4 set[8];
    for (Py_ssize_t k = 0; k < nc; k++)
        set[k] = PyUnicode_READ_CHAR(chars, k);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_UCS4 *out = NULL;
    int prev_in = 0;
    for (Py_ssize_t i = 0; i < len; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        int in = 0;
        for (Py_ssize_t k = 0; k < nc; k++)
            in |= c == set[k];
        if (in && prev_in && out == NULL) { /* the first character to drop: copy what came before */
            out = malloc(sizeof(Py_UCS4) * (size_t)len + 1);
            if (!out)
                return PyErr_NoMemory();
            for (Py_ssize_t j = 0; j < i; j++)
                out[n++] = PyUnicode_READ(kind, data, j);
        }
        if (out != NULL && !(in && prev_in))
            out[n++] = c;
        prev_in = in;
    }
    if (out == NULL)
        return Py_NewRef(text);
    PyObject *result = str_of(out, n);
    free(out);
    return result;
}

PyDoc_STRVAR(keep_chars_doc,
"keep_chars(text, keep) -> str\n\n"
"normalize.py compact: the code points c of text with c < len(keep) and keep[c] (a bool table).");

static PyObject *keep_chars(PyObject *self, PyObject *args)
{
    PyObject *text, *keep_obj;
    if (!PyArg_ParseTuple(args, "UO", &text, &keep_obj))
        return NULL;
    Py_buffer view;
    if (get_buffer(keep_obj, &view, 1, 0, "keep") < 0)
        return NULL;
    const uint8_t *keep = view.buf;
    Py_ssize_t limit = view.len, len = PyUnicode_GET_LENGTH(text), n = 0;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_UCS4 *out = malloc(sizeof(Py_UCS4) * (size_t)len + 1);
    PyObject *result = NULL;
    if (!out) {
        PyErr_NoMemory();
    } else {
        for (Py_ssize_t i = 0; i < len; i++) {
            Py_UCS4 cp = PyUnicode_READ(kind, data, i);
            if (cp < (Py_UCS4)limit && keep[cp])
                out[n++] = cp;
        }
        result = str_of(out, n);
    }
    free(out);
    PyBuffer_Release(&view);
    return result;
}

PyDoc_STRVAR(letter_codes_doc,
"letter_codes(text, codes_of) -> (bytearray, bytearray)\n\n"
"dna.py letter_stream: the letter codes (uint8) of text's characters that have one (codes_of: code point\n"
"-> code, larger code points read its last entry) and their offsets in text (int32, native order).");

static PyObject *letter_codes(PyObject *self, PyObject *args)
{
    PyObject *text, *codes_obj;
    if (!PyArg_ParseTuple(args, "UO", &text, &codes_obj))
        return NULL;
    Py_buffer view;
    if (get_buffer(codes_obj, &view, 1, 1, "codes_of") < 0)
        return NULL;
    const uint8_t *codes_of = view.buf;
    Py_UCS4 last = (Py_UCS4)(view.len - 1);
    Py_ssize_t len = PyUnicode_GET_LENGTH(text), n = 0;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    uint8_t *codes = malloc((size_t)len + 1);
    int32_t *offsets = malloc(sizeof(int32_t) * (size_t)len + 1);
    PyObject *result = NULL;
    if (!codes || !offsets) {
        PyErr_NoMemory();
    } else if (len > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "text longer than 2**31 characters");
    } else {
        for (Py_ssize_t i = 0; i < len; i++) {
            Py_UCS4 cp = PyUnicode_READ(kind, data, i);
            uint8_t code = codes_of[cp < last ? cp : last];
            if (code) {
                codes[n] = code;
                offsets[n++] = (int32_t)i;
            }
        }
        PyObject *c = PyByteArray_FromStringAndSize((const char *)codes, n);
        PyObject *o = c ? PyByteArray_FromStringAndSize((const char *)offsets, n * (Py_ssize_t)sizeof(int32_t)) : NULL;
        result = o ? PyTuple_Pack(2, c, o) : NULL;
        Py_XDECREF(c);
        Py_XDECREF(o);
    }
    free(codes);
    free(offsets);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"fold_text", fold_text, METH_VARARGS, fold_text_doc},
    {"has_pair", has_pair, METH_VARARGS, has_pair_doc},
    {"collapse_runs", collapse_runs, METH_VARARGS, collapse_runs_doc},
    {"keep_chars", keep_chars, METH_VARARGS, keep_chars_doc},
    {"letter_codes", letter_codes, METH_VARARGS, letter_codes_doc},
    {"align_runs", align_runs, METH_VARARGS, align_runs_doc},
    {"canonical_simhash", canonical_simhash, METH_VARARGS, canonical_simhash_doc},
    {"canonical_simhash_text", canonical_simhash_text, METH_VARARGS, canonical_simhash_text_doc},
    {"canonical_tokens", canonical_tokens, METH_VARARGS, canonical_tokens_doc},
    {"simhash_tokens", simhash_tokens, METH_VARARGS, simhash_tokens_doc},
    {"dna", dna, METH_VARARGS, dna_doc},
    {"smallest_seeds", smallest_seeds, METH_VARARGS, smallest_seeds_doc},
    {"jieba_table", jieba_table, METH_VARARGS, jieba_table_doc},
    {"synonym_table", synonym_table, METH_VARARGS, synonym_table_doc},
    {"jieba_cut", jieba_cut, METH_VARARGS, jieba_cut_doc},
    {"jieba_ends", jieba_ends, METH_VARARGS, jieba_ends_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "fingerprint._speedups",
    "Compiled SimHash, DNA and sketch kernels and the jieba segmenter; fingerprint/ falls back to numpy and\n"
    "rjieba without them.", -1, methods,
};

/* Bumped when a kernel's arguments or set of kernels change: fingerprint/speedups.py uses a build of
 * another version as no build at all (numpy: same fingerprints), never with the wrong arguments. */
#define KERNELS_VERSION 4

PyMODINIT_FUNC PyInit__speedups(void)
{
    init_byte_bits();
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddIntConstant(m, "KERNELS_VERSION", KERNELS_VERSION) < 0)
        Py_CLEAR(m);
    return m;
}
