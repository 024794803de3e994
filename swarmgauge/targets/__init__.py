"""Embedded reference targets for the default run, the tests and calibration."""
