/* The segmenter's entry points (fingerprint/_segment.c), registered by fingerprint/_speedups.c. */
#ifndef FINGERPRINT_SEGMENT_H
#define FINGERPRINT_SEGMENT_H
#include <Python.h>

PyObject *jieba_table(PyObject *self, PyObject *args);
PyObject *jieba_cut(PyObject *self, PyObject *args);
PyObject *jieba_ends(PyObject *self, PyObject *args);
/* The cut's token ends and the text's code points, in new arrays the caller frees (-1: an exception). */
Py_ssize_t jieba_cut_ends(PyObject *capsule, PyObject *text, Py_UCS4 **cps, int32_t **ends);
extern const char jieba_table_doc[];
extern const char jieba_cut_doc[];
extern const char jieba_ends_doc[];

#endif
