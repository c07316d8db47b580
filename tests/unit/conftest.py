"""Fixtures more than one unit-test module reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from linklab.report.runs import Run

BASELINE_E1 = Path(__file__).resolve().parents[2] / "baselines" / "e1_bonding_mtu-quick-vm-tcg"


@pytest.fixture(scope="module")
def e1base():
    """The stored E1 quick baseline (5 repetitions per point) and its measured noise floor."""
    from linklab.report.noise import for_baseline
    base = Run.load(BASELINE_E1)
    return base, for_baseline(base)
