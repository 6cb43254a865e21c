"""Benchmarks: one script per target, each printing baseline, ours and the ratio."""
