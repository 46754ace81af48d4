/* The synonym table the canonical kernels read (fingerprint/_syntable.c): each thesaurus word with its
 * canonical member, both as code points in one array, hashed by tokens.py's token hash. A look-up touches
 * one slot and the word's code points, never a Python object (the str objects of 32,000 words lay spread
 * over the heap: two cache misses a replaced token). */
#ifndef FINGERPRINT_SYNTABLE_H
#define FINGERPRINT_SYNTABLE_H
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    uint64_t key;                /* the word's token hash | 1; 0: an empty slot */
    uint64_t canon_hash;         /* the token hash of its canonical member */
    uint32_t word_at, canon_at;  /* where their code points start in SynIndex.cps */
    uint16_t word_len, canon_len;
    uint32_t index;              /* the word's position in the lists the table was built from */
} SynSlot;

typedef struct {
    SynSlot *slots;
    uint64_t mask;
    int shift;
    Py_UCS4 *cps;
    PyObject *canon;             /* the canonical members, as str (canonical_tokens returns them) */
} SynIndex;

PyObject *synonym_table(PyObject *self, PyObject *args);
extern const char synonym_table_doc[];
/* The table in a capsule from synonym_table(); NULL with TypeError set when it is not one. */
const SynIndex *syn_index(PyObject *capsule);

static inline void syn_prefetch(const SynIndex *t, uint64_t hash)
{
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(&t->slots[(hash | 1) >> t->shift]);
#endif
}

/* The slot of the word whose code points are cps[0:len] (its token hash `hash`), NULL if it is no word. */
static inline const SynSlot *syn_find(const SynIndex *t, uint64_t hash, const Py_UCS4 *cps, Py_ssize_t len)
{
    uint64_t key = hash | 1;
    for (uint64_t i = key >> t->shift;; i = (i + 1) & t->mask) {
        const SynSlot *s = &t->slots[i];
        if (!s->key)
            return NULL;
        if (s->key == key && s->word_len == len && !memcmp(t->cps + s->word_at, cps, (size_t)len * sizeof(Py_UCS4)))
            return s;
    }
}

/* syn_find for a str token (ready). */
static inline const SynSlot *syn_find_str(const SynIndex *t, uint64_t hash, PyObject *token)
{
    uint64_t key = hash | 1;
    Py_ssize_t len = PyUnicode_GET_LENGTH(token);
    int kind = PyUnicode_KIND(token);
    const void *data = PyUnicode_DATA(token);
    for (uint64_t i = key >> t->shift;; i = (i + 1) & t->mask) {
        const SynSlot *s = &t->slots[i];
        if (!s->key)
            return NULL;
        if (s->key != key || s->word_len != len)
            continue;
        Py_ssize_t k = 0;
        while (k < len && PyUnicode_READ(kind, data, k) == t->cps[s->word_at + k])
            k++;
        if (k == len)
            return s;
    }
}

#endif
