"""hub: every packet crosses the controller, no flow is ever installed.

The table-miss flow sends each packet to the controller (packet-in); the controller floods it
back out (packet-out). This is what packets crossing a Python controller cost: the latency and
throughput a Mininet + Ryu setup shows when its forwarding stays reactive.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from os_ken.base import app_manager  # noqa: E402
from os_ken.controller import ofp_event  # noqa: E402
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls  # noqa: E402

from _common import OFP_VERSIONS, packet_out, table_miss_to_controller  # noqa: E402


class Hub(app_manager.OSKenApp):
    OFP_VERSIONS = OFP_VERSIONS

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def features(self, ev):
        table_miss_to_controller(ev.msg.datapath)

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def packet_in(self, ev):
        msg = ev.msg
        dp = msg.datapath
        ofp, parser = dp.ofproto, dp.ofproto_parser
        packet_out(dp, msg, msg.match["in_port"], [parser.OFPActionOutput(ofp.OFPP_FLOOD)])
