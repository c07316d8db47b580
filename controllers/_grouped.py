"""A learning switch whose ports may be grouped: a group of ports (a LAG towards a host bond,
or parallel links towards another switch) is one logical port, reached through an OpenFlow
select group. Shared by the lacp and multipath apps.

linklab passes the switch's layout in the environment, as JSON in LINKLAB_SWITCH:
  {"ports": [1, 2, 3, 4], "groups": [[1, 2]]}     OpenFlow port numbers; each group one logical port
Floods go out of each logical port once (through its select group), never back into the logical
port they came from, so parallel links make no loop.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from os_ken.base import app_manager  # noqa: E402
from os_ken.lib.packet import ethernet, ether_types, packet  # noqa: E402

from _common import LEARNED_COOKIE, OFP_VERSIONS, add_flow, packet_out, table_miss_to_controller  # noqa: E402


def layout():
    cfg = json.loads(os.environ.get("LINKLAB_SWITCH", "{}"))
    return [int(p) for p in cfg.get("ports", [])], [[int(p) for p in g] for g in cfg.get("groups", [])]


class GroupedLearning(app_manager.OSKenApp):
    OFP_VERSIONS = OFP_VERSIONS

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.ports, self.groups = layout()
        self.group_of = {p: gid for gid, g in enumerate(self.groups, start=1) for p in g}
        self.live = {gid: list(g) for gid, g in enumerate(self.groups, start=1)}  # members carrying traffic
        self.mac_to = {}  # (dpid, mac) -> ('port', n) or ('group', gid)
        self.logger.info("layout: ports %s, groups %s", self.ports, self.groups)

    # -- set-up ---------------------------------------------------------------------------
    def switch_ready(self, dp):
        table_miss_to_controller(dp)
        for gid in self.live:
            self.write_group(dp, gid, add=True)

    def write_group(self, dp, gid, add=False):
        ofp, parser = dp.ofproto, dp.ofproto_parser
        buckets = [parser.OFPBucket(weight=1, watch_port=p, watch_group=ofp.OFPG_ANY,
                                    actions=[parser.OFPActionOutput(p)]) for p in self.live[gid]]
        cmd = ofp.OFPGC_ADD if add else ofp.OFPGC_MODIFY
        dp.send_msg(parser.OFPGroupMod(dp, cmd, ofp.OFPGT_SELECT, gid, buckets))

    def forget_learned(self, dp):
        ofp, parser = dp.ofproto, dp.ofproto_parser
        dp.send_msg(parser.OFPFlowMod(datapath=dp, cookie=LEARNED_COOKIE, cookie_mask=0xFFFFFFFFFFFFFFFF,
                                      table_id=ofp.OFPTT_ALL, command=ofp.OFPFC_DELETE,
                                      out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY))
        self.mac_to = {k: v for k, v in self.mac_to.items() if k[0] != dp.id}

    # -- forwarding -----------------------------------------------------------------------
    def logical(self, port):
        gid = self.group_of.get(port)
        return ("group", gid) if gid else ("port", port)

    def action(self, parser, where):
        kind, n = where
        return parser.OFPActionGroup(n) if kind == "group" else parser.OFPActionOutput(n)

    def forward(self, msg):
        dp = msg.datapath
        parser = dp.ofproto_parser
        in_port = msg.match["in_port"]
        eth = packet.Packet(msg.data).get_protocols(ethernet.ethernet)[0]
        if eth.ethertype == ether_types.ETH_TYPE_LLDP:
            return
        src_at = self.logical(in_port)
        self.mac_to[(dp.id, eth.src)] = src_at
        dst_at = self.mac_to.get((dp.id, eth.dst))
        if dst_at is not None and dst_at != src_at:
            actions = [self.action(parser, dst_at)]
            add_flow(dp, 1, parser.OFPMatch(in_port=in_port, eth_dst=eth.dst), actions, cookie=LEARNED_COOKIE)
        else:
            everywhere = {self.logical(p) for p in self.ports} - {src_at}
            actions = [self.action(parser, w) for w in sorted(everywhere)]
        packet_out(dp, msg, in_port, actions)
