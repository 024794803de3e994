"""Benchmarks: print figures and write them to JSON; they never assert on time."""
