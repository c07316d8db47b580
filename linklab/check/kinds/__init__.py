"""The kinds of check, one module each (base.py says what a kind is and the settings every check
has; measured.py what the measured ones share). Add a kind by writing its module and listing it
here. The registry imports the kinds and no kind imports it back (containerlab's node registry):
the checks file (spec.py) asks it for a kind's parameters.
"""

from __future__ import annotations

from linklab.check.kinds.address import Address
from linklab.check.kinds.base import Kind
from linklab.check.kinds.bond import Bond
from linklab.check.kinds.command import Command
from linklab.check.kinds.failover import Failover
from linklab.check.kinds.goodput import Goodput
from linklab.check.kinds.loss import Loss
from linklab.check.kinds.member_share import MemberShare
from linklab.check.kinds.mtu import Mtu
from linklab.check.kinds.ovs_controller import OvsController
from linklab.check.kinds.ovs_flow import OvsFlow
from linklab.check.kinds.path import Path
from linklab.check.kinds.path_mtu import PathMtu
from linklab.check.kinds.qdisc import Qdisc
from linklab.check.kinds.reach import Reach
from linklab.check.kinds.reorder import Reorder
from linklab.check.kinds.route import Route
from linklab.check.kinds.rtt import Rtt
from linklab.check.kinds.service import Service
from linklab.check.kinds.sysctl import Sysctl
from linklab.errors import UsageError

REGISTRY: dict[str, Kind] = {k.name: k for k in (
    # state, read back from the kernel
    Address(), Mtu(), Bond(), Qdisc(), Sysctl(), OvsController(), OvsFlow(), Route(),
    # the data plane, loss-aware
    Reach(), PathMtu(), Path(), Service(),
    # anything else a command in a node shows
    Command(),
    # measured behaviour: repeated, judged with a tolerance, inconclusive when the emulator limited it
    Goodput(), Loss(), Rtt(), Reorder(), MemberShare(), Failover(),
)}


def get(name: str) -> Kind:
    try:
        return REGISTRY[name]
    except KeyError:
        raise UsageError(f"unknown kind of check {name!r} (valid: {', '.join(REGISTRY)})") from None
