"""Fixtures more than one unit-test module reads."""
