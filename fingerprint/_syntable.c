/* The synonym table of the canonical kernels (see _syntable.h): built once a process from the thesaurus
 * words and their canonical members (fingerprint/synonyms.py kernel_table), held in a capsule. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_hash.h"
#include "_syntable.h"

#define SYN_NAME "fingerprint._speedups.synonym_table"

static void syn_free(SynIndex *t)
{
    if (!t)
        return;
    free(t->slots);
    free(t->cps);
    Py_XDECREF(t->canon);
    PyMem_Free(t);
}

static void syn_capsule_free(PyObject *capsule)
{
    syn_free(PyCapsule_GetPointer(capsule, SYN_NAME));
}

const SynIndex *syn_index(PyObject *capsule)
{
    if (!PyCapsule_IsValid(capsule, SYN_NAME)) {
        PyErr_SetString(PyExc_TypeError, "the synonym table must come from synonym_table()");
        return NULL;
    }
    return PyCapsule_GetPointer(capsule, SYN_NAME);
}

/* Code points of all words and canonical members in one array: how many, -1 with an exception set. */
static Py_ssize_t total_length(PyObject *words, PyObject *canon)
{
    Py_ssize_t n = PyList_GET_SIZE(words), total = 0;
    for (Py_ssize_t i = 0; i < 2 * n; i++) {
        PyObject *s = PyList_GET_ITEM(i < n ? words : canon, i % n);
        if (!PyUnicode_Check(s) || PyUnicode_READY(s) < 0) {
            PyErr_Format(PyExc_TypeError, "synonym_table: %s %zd is not str", i < n ? "word" : "canon", i % n);
            return -1;
        }
        if (PyUnicode_GET_LENGTH(s) > UINT16_MAX) {
            PyErr_Format(PyExc_ValueError, "synonym_table: %s %zd is too long", i < n ? "word" : "canon", i % n);
            return -1;
        }
        total += PyUnicode_GET_LENGTH(s);
    }
    if (total >= UINT32_MAX || n >= UINT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "synonym_table: too many code points");
        return -1;
    }
    return total;
}

static uint32_t put(Py_UCS4 *cps, uint32_t at, PyObject *s)
{
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    for (Py_ssize_t k = 0; k < PyUnicode_GET_LENGTH(s); k++)
        cps[at + k] = PyUnicode_READ(kind, data, k);
    return at + (uint32_t)PyUnicode_GET_LENGTH(s);
}

/* Word i into the table (a word given twice keeps its first canonical member, as a dict built in order
 * with setdefault would). */
static void insert(SynIndex *t, PyObject *words, uint32_t i, uint32_t *at)
{
    PyObject *word = PyList_GET_ITEM(words, i), *canon = PyTuple_GET_ITEM(t->canon, i);
    SynSlot s = {token_hash(word) | 1, token_hash(canon), *at, 0, (uint16_t)PyUnicode_GET_LENGTH(word),
                 (uint16_t)PyUnicode_GET_LENGTH(canon), i};
    s.canon_at = put(t->cps, *at, word);
    *at = put(t->cps, s.canon_at, canon);
    if (syn_find(t, s.key, t->cps + s.word_at, s.word_len))
        return;
    uint64_t j = s.key >> t->shift;
    while (t->slots[j].key)
        j = (j + 1) & t->mask;
    t->slots[j] = s;
}

const char synonym_table_doc[] = (
"synonym_table(words, canon) -> table for canonical_tokens and the canonical SimHash kernels: a token equal\n"
"to words[i] (two or more characters) stands for canon[i] (fingerprint/synonyms.py kernel_table).");

PyObject *synonym_table(PyObject *self, PyObject *args)
{
    PyObject *words, *canon;
    if (!PyArg_ParseTuple(args, "O!O!:synonym_table", &PyList_Type, &words, &PyList_Type, &canon))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(words);
    if (PyList_GET_SIZE(canon) != n) {
        PyErr_SetString(PyExc_ValueError, "synonym_table: words and canon differ in length");
        return NULL;
    }
    Py_ssize_t total = total_length(words, canon);
    if (total < 0)
        return NULL;
    SynIndex *t = PyMem_Calloc(1, sizeof(SynIndex));
    if (!t)
        return PyErr_NoMemory();
    uint64_t size = 16;
    int bits = 4;
    while (size < 2 * (uint64_t)n) {   /* at most half full */
        size <<= 1;
        bits++;
    }
    t->mask = size - 1;
    t->shift = 64 - bits;
    t->slots = calloc(size, sizeof(SynSlot));
    t->cps = malloc(((size_t)total + 1) * sizeof(Py_UCS4));
    t->canon = PyList_AsTuple(canon);   /* a copy: the caller's list may change, slots index this one */
    if (!t->slots || !t->cps || !t->canon) {
        int copied = t->canon != NULL;   /* else PyList_AsTuple has set the exception */
        syn_free(t);
        return copied ? PyErr_NoMemory() : NULL;
    }
    uint32_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        insert(t, words, (uint32_t)i, &at);
    PyObject *capsule = PyCapsule_New(t, SYN_NAME, syn_capsule_free);
    if (!capsule)
        syn_free(t);
    return capsule;
}
