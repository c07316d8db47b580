"""The host tier runs two workers (scripts/test.sh: --dist loadgroup). Each file is one group (its
module fixtures built once); the files that boot a lab VM of their own form one group together,
so their boots (software emulation: CPU-bound for ~30-60 s each) take turns on one worker instead
of starving each other, while the other worker runs the files that need no VM."""

from __future__ import annotations

import pytest

BOOTS_A_VM = {"test_cli_lifecycle.py", "test_vm.py", "test_results_anywhere.py"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        name = item.path.name
        item.add_marker(pytest.mark.xdist_group("lab-vm" if name in BOOTS_A_VM else name))
