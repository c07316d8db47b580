"""Overrides: `path=value` edits applied to a topology's data before validation.

This is how a sweep or `linklab set` changes a running lab: the edited topology is validated
like a file (same errors, same paths) and the lab is reconciled to it.

Path grammar (dots between keys, brackets select list items):
    defaults.mtu=9000
    links[0].bond.mode=802.3ad            by index
    links[h1-h2].impair.delay=5ms         by link name (given, or the automatic 'a-b')
    links[*].mtu=9000                     every item
    hosts.h1.sysctls."net.ipv4.tcp_reordering"=127    quoted key containing dots
Values are YAML scalars (or flow collections: `links[0].bond.options={miimon: 50}`).
"""

from __future__ import annotations

import copy
import re
from typing import Any

import yaml

from linklab.errors import UsageError

_TOKEN = re.compile(r'\s*(?:"(?P<q>[^"]*)"|\[(?P<sel>[^\]]*)\]|(?P<key>[^.\[\]"=]+))\s*(?P<dot>\.)?')


def parse_path(path: str) -> list[tuple[str, str]]:
    """'links[0].bond.mode' -> [('key','links'), ('sel','0'), ('key','bond'), ('key','mode')]"""
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if not m or m.end() == pos:
            raise UsageError(f"bad override path {path!r} at {path[pos:]!r}",
                             hint='write e.g. links[0].mtu=9000 or hosts.h1.sysctls."net.ipv4.tcp_reordering"=127')
        if m["q"] is not None:
            out.append(("key", m["q"]))
        elif m["sel"] is not None:
            out.append(("sel", m["sel"].strip()))
        else:
            out.append(("key", m["key"].strip()))
        pos = m.end()
    if not out:
        raise UsageError("empty override path")
    return out


def split_assignment(text: str) -> tuple[str, Any]:
    # The first '=' outside quotes separates path from value.
    in_q = False
    for i, ch in enumerate(text):
        if ch == '"':
            in_q = not in_q
        elif ch == "=" and not in_q:
            path, raw = text[:i].strip(), text[i + 1:].strip()
            try:
                value = yaml.safe_load(raw) if raw else None
            except yaml.YAMLError:
                value = raw
            return path, value
    raise UsageError(f"override {text!r} has no '='", hint="write PATH=VALUE, e.g. links[0].mtu=9000")


def link_auto_name(item: dict) -> str | None:
    eps = item.get("endpoints") if isinstance(item, dict) else None
    if isinstance(eps, list) and len(eps) == 2:
        return "-".join(str(e).split(":")[0] for e in eps)
    return None


def _select(items: list, sel: str, path: str) -> list[int]:
    if sel == "*":
        return list(range(len(items)))
    if sel.lstrip("-").isdigit():
        i = int(sel)
        if not -len(items) <= i < len(items):
            raise UsageError(f"override {path}: index {i} out of range (there are {len(items)})")
        return [i % len(items)]
    hits = [i for i, it in enumerate(items) if isinstance(it, dict) and sel in (it.get("name"), link_auto_name(it))]
    if not hits:
        names = [it.get("name") or link_auto_name(it) for it in items if isinstance(it, dict)]
        raise UsageError(f"override {path}: no item named {sel!r} (valid: {', '.join(map(str, names))})")
    return hits


def apply_overrides(data: dict, overrides: list[tuple[str, Any]]) -> dict:
    """Return a copy of `data` with every override applied, in order."""
    data = copy.deepcopy(data)
    for path, value in overrides:
        tokens = parse_path(path)
        _set(data, tokens, value, path)
    return data


def _set(node: Any, tokens: list[tuple[str, str]], value: Any, path: str) -> None:
    kind, name = tokens[0]
    rest = tokens[1:]
    if kind == "sel":
        if not isinstance(node, list):
            raise UsageError(f"override {path}: [{name}] selects list items, but this is not a list")
        for i in _select(node, name, path):
            if rest:
                _set(node[i], rest, value, path)
            else:
                node[i] = copy.deepcopy(value)
        return
    if not isinstance(node, dict):
        raise UsageError(f"override {path}: cannot set {name!r} inside a {type(node).__name__}")
    if not rest:
        node[name] = copy.deepcopy(value)
        return
    child = node.get(name)
    if child is None:
        child = [] if rest[0][0] == "sel" else {}
        node[name] = child
    _set(child, rest, value, path)
