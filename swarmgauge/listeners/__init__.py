"""Locust event listeners: per-step statistics, the resource sampler, SLO checks, the run directory."""
