"""Measurement: one class per tool (base.py: build argv, parse output with a pure function tested
on captured real output), the window's traffic (traffic.py) and the probes of a repetition
(probes/)."""
