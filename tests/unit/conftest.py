"""Fixtures more than one unit-test module reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from linklab.report.runs import Run

# The gate's rules are tested on a fixed real baseline with its floor and speed response: E1's as
# stored until 2026-11-27 (tests/data/runs/README.md). baselines/ holds the one CI gates against,
# re-recorded when the machine kind changes; its own properties: test_report_noise.py.
BASELINE_E1 = Path(__file__).resolve().parents[1] / "data" / "runs" / "e1-baseline-2026-11-25"


@pytest.fixture(scope="module")
def e1base():
    """The stored E1 quick baseline (5 repetitions per point) and its measured noise floor."""
    from linklab.report.noise import for_baseline
    base = Run.load(BASELINE_E1)
    return base, for_baseline(base)
