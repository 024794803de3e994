"""Runnable scenarios, one per reference workload; each starts an embedded target when no --host is given."""
