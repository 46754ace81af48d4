/* tokens.py's token hash, shared by the kernels (fingerprint/_speedups.c) and the synonym table
 * (fingerprint/_syntable.c): sum(c_j * P^(L-1-j)) over the token's code points, then mix64. */
#ifndef FINGERPRINT_HASH_H
#define FINGERPRINT_HASH_H
#include <Python.h>
#include <stdint.h>

#define POLY_P 0x100000001B3ULL /* tokens.py _P */

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

/* The hash of a ready str. */
static inline uint64_t token_hash(PyObject *token)
{
    int kind = PyUnicode_KIND(token);
    const void *data = PyUnicode_DATA(token);
    Py_ssize_t len = PyUnicode_GET_LENGTH(token);
    uint64_t h = 0;
    for (Py_ssize_t i = 0; i < len; i++)
        h = h * POLY_P + (uint64_t)PyUnicode_READ(kind, data, i);
    return mix64(h);
}

/* The hash of the token whose code points are cps[0:len]. */
static inline uint64_t cps_hash(const Py_UCS4 *cps, Py_ssize_t len)
{
    uint64_t h = 0;
    for (Py_ssize_t i = 0; i < len; i++)
        h = h * POLY_P + (uint64_t)cps[i];
    return mix64(h);
}

#endif
