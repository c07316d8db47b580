#!/usr/bin/env bash
# What the host's network looks like, normalised (lifetimes and counters removed): interfaces,
# addresses, routes, rules, namespaces, qdiscs and net.* sysctls. scripts/test.sh takes one
# before and one after the integration tiers; any difference means linklab touched the host.
set -uo pipefail
echo "## links";      ip -o link show | sed -E 's/\\ +/ /g'
echo "## addresses";  ip -o addr show | sed -E 's/ (valid_lft|preferred_lft) [^ ]+//g; s/\\ +/ /g'
echo "## routes";     ip route show table all | sed -E 's/ expires [^ ]+//'
echo "## routes6";    ip -6 route show table all | sed -E 's/ expires [^ ]+//'
echo "## rules";      ip rule show; ip -6 rule show
echo "## netns";      ip netns list
echo "## qdiscs";     tc qdisc show
echo "## sysctls"
# Counters and caches the kernel changes on its own are left out.
sysctl -a 2>/dev/null | grep '^net\.' | grep -v -E 'nf_conntrack_count|\.route\.(gc_|flush)|stable_secret|neigh\..*\.(base_reachable_time|retrans_time)|net\.ipv6\.conf\.[^.]+\.stable_secret' | sort
