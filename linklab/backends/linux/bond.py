"""Linux bond options <-> netlink (IFLA_BOND_*) values, and reading a bond back."""

from __future__ import annotations

from typing import Any

from linklab.model.topology import BOND_MODE_NUMBER, BOND_MODES, OPTION_MODES

ENUMS: dict[str, dict[str, int]] = {
    "xmit_hash_policy": {"layer2": 0, "layer3+4": 1, "layer2+3": 2, "encap2+3": 3, "encap3+4": 4, "vlan+srcmac": 5},
    "lacp_rate": {"slow": 0, "fast": 1},
    "ad_select": {"stable": 0, "bandwidth": 1, "count": 2},
    "arp_validate": {"none": 0, "active": 1, "backup": 2, "all": 3, "filter": 4, "filter_active": 5,
                     "filter_backup": 6},
    "arp_all_targets": {"any": 0, "all": 1},
    "primary_reselect": {"always": 0, "better": 1, "failure": 2},
    "fail_over_mac": {"none": 0, "active": 1, "follow": 2},
}

# The kernel's defaults (bonding.rst): an option absent from the topology is put back to these,
# so that sweeping from one bond setting to another leaves nothing behind.
KERNEL_DEFAULTS: dict[str, Any] = {
    "miimon": 0, "updelay": 0, "downdelay": 0, "use_carrier": True, "arp_interval": 0,
    "arp_validate": "none", "arp_all_targets": "any", "primary_reselect": "always",
    "fail_over_mac": "none", "xmit_hash_policy": "layer2", "resend_igmp": 1, "num_peer_notif": 1,
    "all_slaves_active": False, "min_links": 0, "lp_interval": 1, "packets_per_slave": 1,
    "lacp_rate": "slow", "ad_select": "stable", "tlb_dynamic_lb": True, "ad_actor_sys_prio": 65535,
    "ad_user_port_key": 0,
}


def applicable(option: str, mode: str) -> bool:
    return mode in OPTION_MODES.get(option, BOND_MODES)


def desired_options(mode: str, options: dict[str, Any]) -> dict[str, Any]:
    """Every option that applies to `mode`: the topology's value, else the kernel default."""
    full = {k: v for k, v in KERNEL_DEFAULTS.items() if applicable(k, mode)}
    full.update({k: v for k, v in options.items() if applicable(k, mode)})
    return full


def to_netlink(options: dict[str, Any], member_index: dict[str, int]) -> dict[str, Any]:
    """{'lacp_rate': 'fast', 'primary': 'bond0-m1'} -> {'bond_ad_lacp_rate': 1, 'bond_primary': 7}"""
    out: dict[str, Any] = {}
    for k, v in options.items():
        if k in ENUMS:
            v = ENUMS[k][v]
        elif isinstance(v, bool):
            v = int(v)
        elif k == "primary":
            v = member_index[v]
        key = {"lacp_rate": "ad_lacp_rate"}.get(k, k)
        out[f"bond_{key}"] = v
    return out


def from_netlink(linkinfo_data) -> dict[str, Any]:
    """IFLA_INFO_DATA of a bond -> {'mode': 'balance-rr', 'miimon': 100, ...} (names as in sysfs)."""
    attrs = dict(linkinfo_data.get("attrs", [])) if linkinfo_data else {}
    rev = {opt: {n: s for s, n in table.items()} for opt, table in ENUMS.items()}
    out: dict[str, Any] = {}
    for nla, value in attrs.items():
        if not nla.startswith("IFLA_BOND_"):
            continue
        key = nla[len("IFLA_BOND_"):].lower()
        key = {"ad_lacp_rate": "lacp_rate"}.get(key, key)
        if key == "mode":
            out["mode"] = BOND_MODES[value] if value < len(BOND_MODES) else value
        elif key in rev:
            out[key] = rev[key].get(value, value)
        elif key in KERNEL_DEFAULTS and isinstance(KERNEL_DEFAULTS[key], bool):
            out[key] = bool(value)
        elif key == "ad_info":
            info = dict(value.get("attrs", [])) if hasattr(value, "get") else {}
            out["ad_info"] = {
                "aggregator": info.get("IFLA_BOND_AD_INFO_AGGREGATOR"),
                "num_ports": info.get("IFLA_BOND_AD_INFO_NUM_PORTS"),
                "actor_key": info.get("IFLA_BOND_AD_INFO_ACTOR_KEY"),
                "partner_key": info.get("IFLA_BOND_AD_INFO_PARTNER_KEY"),
                "partner_mac": info.get("IFLA_BOND_AD_INFO_PARTNER_MAC"),
            }
        else:
            out[key] = value
    return out


def differs(actual: dict[str, Any], mode: str, wanted: dict[str, Any], index_to_name: dict[int, str]) -> list[str]:
    """Names of options whose live value is not what we want (mode first)."""
    diff = []
    if actual.get("mode") != mode:
        diff.append("mode")
    for k, v in wanted.items():
        have = actual.get(k)
        if k == "primary":
            have = index_to_name.get(have) if have else None
        if k == "arp_ip_target":
            have = [str(a) for a in (have or [])]
        if have != v:
            diff.append(k)
    return diff


def mode_number(mode: str) -> int:
    return BOND_MODE_NUMBER[mode]
