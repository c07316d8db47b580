"""Low-level Linux access shared by the backend (which builds labs) and measure (which reads
them): netlink requests and dumps (netlink.py), tc qdisc plans and their read-back (tc.py), and
parsers of Open vSwitch's tool output (ovs.py). Nothing here knows what a lab is."""
