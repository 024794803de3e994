"""pandas over a run directory: benchmark-page tables, knee detection, HTML report with plots."""
