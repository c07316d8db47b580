"""multipath: spread flows over parallel switch-to-switch links with OpenFlow select groups
(an SDN alternative to bonding). Parallel links towards one neighbour form one logical port;
OVS picks a bucket per flow by hashing its L2-L4 fields, so one TCP flow stays on one link and
several flows spread (how evenly is hashing luck: record per-link counters)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from os_ken.controller import ofp_event  # noqa: E402
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls  # noqa: E402

from _grouped import GroupedLearning  # noqa: E402


class Multipath(GroupedLearning):
    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def features(self, ev):
        self.switch_ready(ev.msg.datapath)

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def packet_in(self, ev):
        self.forward(ev.msg)
