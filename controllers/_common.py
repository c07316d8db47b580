"""Pieces every bundled app shares (a file starting with _ is not an app itself)."""

from os_ken.ofproto import ofproto_v1_3

# Flows an app learns carry this cookie, so `linklab` can forget them (del-flows cookie=0x1/-1)
# before a measurement whose first packet must cross the controller again.
LEARNED_COOKIE = 0x1


def add_flow(dp, priority, match, actions, cookie=0, idle_timeout=0):
    ofp, parser = dp.ofproto, dp.ofproto_parser
    inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]
    dp.send_msg(parser.OFPFlowMod(datapath=dp, priority=priority, match=match, instructions=inst,
                                  cookie=cookie, idle_timeout=idle_timeout))


def table_miss_to_controller(dp):
    """Priority 0: every packet no other flow matches goes to the controller, whole (no buffering)."""
    ofp, parser = dp.ofproto, dp.ofproto_parser
    add_flow(dp, 0, parser.OFPMatch(), [parser.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)])


def packet_out(dp, msg, in_port, actions):
    ofp, parser = dp.ofproto, dp.ofproto_parser
    data = msg.data if msg.buffer_id == ofp.OFP_NO_BUFFER else None
    dp.send_msg(parser.OFPPacketOut(datapath=dp, buffer_id=msg.buffer_id, in_port=in_port,
                                    actions=actions, data=data))


OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]
