"""l2_learning: an OpenFlow 1.3 learning switch that installs flows (like Ryu's simple_switch_13).

The first packet towards an unknown destination crosses the controller (packet-in, flood by
packet-out); once both MACs are learned a flow per (in_port, dst MAC) forwards the rest in the
datapath. Learned flows carry cookie 0x1, which lets linklab forget them between measurements.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from os_ken.base import app_manager  # noqa: E402
from os_ken.controller import ofp_event  # noqa: E402
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls  # noqa: E402
from os_ken.lib.packet import ethernet, ether_types, packet  # noqa: E402

from _common import LEARNED_COOKIE, OFP_VERSIONS, add_flow, packet_out, table_miss_to_controller  # noqa: E402


class L2Learning(app_manager.OSKenApp):
    OFP_VERSIONS = OFP_VERSIONS

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.mac_to_port = {}

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def features(self, ev):
        table_miss_to_controller(ev.msg.datapath)

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def packet_in(self, ev):
        msg = ev.msg
        dp = msg.datapath
        ofp, parser = dp.ofproto, dp.ofproto_parser
        in_port = msg.match["in_port"]
        eth = packet.Packet(msg.data).get_protocols(ethernet.ethernet)[0]
        if eth.ethertype == ether_types.ETH_TYPE_LLDP:
            return
        table = self.mac_to_port.setdefault(dp.id, {})
        table[eth.src] = in_port
        out_port = table.get(eth.dst, ofp.OFPP_FLOOD)
        actions = [parser.OFPActionOutput(out_port)]
        if out_port != ofp.OFPP_FLOOD:
            add_flow(dp, 1, parser.OFPMatch(in_port=in_port, eth_dst=eth.dst), actions, cookie=LEARNED_COOKIE)
        packet_out(dp, msg, in_port, actions)
