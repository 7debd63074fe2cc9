"""Benchmarks run by ``make bench``: each ``*_bench.py`` measures against a baseline in the same run."""
