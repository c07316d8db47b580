"""Interop with the labs people already use: Mininet scripts, containerlab topologies, a Mininet-style CLI."""

# Here, not in clab_export: the CLI shows it in --help without importing the exporter (and with it
# pyroute2 and the models), which every linklab command would otherwise pay for at start-up.
CLAB_DEFAULT_IMAGE = "nicolaka/netshoot:latest"
CLAB_FRR_IMAGE = "quay.io/frrouting/frr:10.5.1"  # FRR's own image, as containerlab's frr01 example runs it
