"""The swarmgauge command line: a thin dispatcher into the packages."""
