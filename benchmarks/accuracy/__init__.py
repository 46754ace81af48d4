"""Accuracy benchmark (issue 3): every duplicate/copy method side by side on a built, labelled set.

`python -m benchmarks.accuracy [--quick] [--out DIR]`; see benchmarks/results/accuracy.md.
"""
