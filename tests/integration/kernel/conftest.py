"""Kernel tier: runs where the lab kernel is (inside the lab VM here, natively on a host with
bonding/netem). `make test` starts it through `linklab vm run` when this kernel lacks them."""

import time
from pathlib import Path

import pytest

from linklab import kernel, lab, runner
from linklab.backends.linux.names import netns_name

TOPOLOGIES = "topologies"


@pytest.fixture(scope="session", autouse=True)
def _needs_lab_kernel():
    # A failure, not a skip: a tier that could not run is not a tier that passed.
    missing = kernel.missing_features()
    if missing and not kernel.in_lab_vm():
        pytest.fail(f"this kernel lacks {', '.join(missing)} and this is not the lab VM: the kernel tier did NOT run "
                    "(`make test` runs it there: linklab vm run --if-needed -- pytest tests/integration/kernel)",
                    pytrace=False)


class Lab:
    """A running lab for a test, always taken down afterwards."""

    def __init__(self, topology: str, name: str, overrides=()):
        self.name = name
        self.record = lab.up(topology, name=name, overrides=list(overrides), say=lambda *_: None)

    def ns(self, node: str) -> str:
        return netns_name(self.name, node)

    def run(self, node: str, argv, check=True, timeout=60):
        return runner.run(argv, netns=self.ns(node), check=check, timeout=timeout)

    def set(self, *overrides, replace=False):
        self.record = lab.set_params(self.name, list(overrides), replace=replace, say=lambda *_: None)
        return self.record

    def live(self):
        return lab.status(self.name)["live"]

    def ping_until_ok(self, src: str, dst: str, deadline_s: float = 15.0, extra=()):
        """Ping until a burst gets every reply (a new bond mode or LACP may need seconds)."""
        t0 = time.monotonic()
        while True:
            res = self.run(src, ["ping", "-n", "-c", "5", "-i", "0.2", "-W", "1", *extra, dst], check=False)
            if res.ok and " 0% packet loss" in res.stdout:
                return res, time.monotonic() - t0
            if time.monotonic() - t0 > deadline_s:
                return res, time.monotonic() - t0
            time.sleep(0.5)

    def down(self):
        if lab.state.load(self.name):
            lab.down(self.name, say=lambda *_: None)


@pytest.fixture
def make_lab():
    made = []

    def make(topology, name, overrides=()):
        lb = Lab(str(Path(TOPOLOGIES) / topology), name, overrides)  # an absolute path is taken as it is
        made.append(lb)
        return lb

    yield make
    for lb in made:
        lb.down()
