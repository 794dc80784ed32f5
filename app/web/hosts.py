"""Host names and addresses as the server compares them: what a Host header or URL names,
what an operator may write for --host and --allowed-host, and which names are this machine."""

from __future__ import annotations

import ipaddress
import re

# Host names any server answers to: only this machine can be behind them.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}
# Listening on these means "every interface": they name no host a browser would use.
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})

_NAME = re.compile(r"^[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?$")


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def split_host(value: str | None) -> str | None:
    """The host name in a Host header or URL authority ("name", "name:port", "[v6]:port"),
    lower case without a trailing dot; None when it is not one."""
    if not value:
        return None
    v = value.strip().lower()
    if v.startswith("["):
        end = v.find("]")
        if end < 0:
            return None
        try:
            name = ipaddress.IPv6Address(v[1:end]).compressed
        except ValueError:
            return None
        port = v[end + 1 :]
    else:
        name, colon, rest = v.partition(":")
        port = colon + rest
        name = name.rstrip(".")
    if port and not (port.startswith(":") and port[1:].isascii() and port[1:].isdigit()):
        return None
    return name or None


def host_entry(value: str) -> str:
    """A host name or address as an operator writes it (--allowed-host, --host), normalised
    like split_host; ValueError with a readable reason otherwise."""
    text = value.strip()
    try:
        return ipaddress.ip_address(text.strip("[]")).compressed  # bare IPv6 is fine here
    except ValueError:
        pass
    name = split_host(text)
    if name is None or not (_NAME.match(name) or name.count(":") > 1):
        raise ValueError(
            f"{text[:80]!r} is not a host name or address (for example 192.168.1.20 or "
            "classroom-pc.local; no http://, no path)"
        )
    return name
