"""lacp: the switch side of a host's 802.3ad bond. os-ken's lacplib answers LACP on the LAG's
ports (and only that); this app forwards over the LAG itself: a select group whose buckets are
the members lacplib reports enabled, inside a learning switch (learned flows point at the group).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from os_ken.controller import ofp_event  # noqa: E402
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls  # noqa: E402
from os_ken.lib import lacplib  # noqa: E402

from _grouped import GroupedLearning, layout  # noqa: E402


class Lacp(GroupedLearning):
    _CONTEXTS = {"lacplib": lacplib.LacpLib}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.lacp = kwargs["lacplib"]
        dpid = int(os.environ.get("LINKLAB_DPID", "1"))
        for group in layout()[1]:
            self.lacp.add(dpid=dpid, ports=group)

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def features(self, ev):
        self.switch_ready(ev.msg.datapath)

    @set_ev_cls(lacplib.EventPacketIn, MAIN_DISPATCHER)
    def packet_in(self, ev):
        self.forward(ev.msg)

    @set_ev_cls(lacplib.EventSlaveStateChanged, MAIN_DISPATCHER)
    def member_changed(self, ev):
        dp, port, enabled = ev.datapath, ev.port, ev.enabled
        gid = self.group_of.get(port)
        self.logger.info("LAG member %s %s", port, "enabled" if enabled else "disabled")
        if gid is None:
            return
        live = set(self.live[gid])
        live = live | {port} if enabled else live - {port}
        self.live[gid] = sorted(live)
        self.write_group(dp, gid)
        self.forget_learned(dp)
