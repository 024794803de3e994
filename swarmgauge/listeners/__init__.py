"""Locust event listeners: per-step statistics, the resource sampler, SLO checks, the run directory."""

from swarmgauge.core.locust_compat import attach_worker_runner_early

# At import, so before any worker runner exists: a worker joining a running master must be seen as a worker by
# the listeners' test_start (its first spawn arrives while it is still being constructed).
attach_worker_runner_early()
