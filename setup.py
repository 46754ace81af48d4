"""Builds fingerprint/_speedups.c (with the segmenter, fingerprint/_segment.c, and the synonym table,
fingerprint/_syntable.c); everything else about the package is in pyproject.toml.

The extension is optional: without a C compiler the install still succeeds and fingerprint/ uses its
numpy code, which gives the same fingerprints, about 1.6x slower.
"""
import sys

from setuptools import Extension, setup

# Never fuse a multiply and an add: the kernel's floating point must equal numpy's operation for operation.
FLAGS = [] if sys.platform == "win32" else ["-O3", "-ffp-contract=off", "-fno-fast-math"]

SOURCES = ["fingerprint/_speedups.c", "fingerprint/_segment.c", "fingerprint/_syntable.c"]
setup(ext_modules=[Extension("fingerprint._speedups", SOURCES,
                             depends=["fingerprint/_segment.h", "fingerprint/_syntable.h", "fingerprint/_hash.h"],
                             extra_compile_args=FLAGS, optional=True)])
