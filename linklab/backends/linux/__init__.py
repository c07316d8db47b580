"""The Linux backend (backend.py): one network namespace per node, veth pairs, Linux bonds and
bridges, tc qdiscs, through netlink. Split by concern: the build (build.py), ownership marks
(ownership.py, names.py), hosts files (hostsfile.py), node kinds (kinds/), faults, sysctls,
bonds' options and the OVS daemons each in their own module.
"""
