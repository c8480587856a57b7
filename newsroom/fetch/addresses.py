"""Which IP addresses a fetch may connect to. Pure: imports no Django.

A reader's source URL must never reach the machine itself or its private
network (SSRF). The check runs on the addresses DNS actually returned, and the
connection is then made to one of those checked addresses (see network.py), so
a name that resolves differently a moment later (DNS rebinding) cannot slip
through.
"""

from __future__ import annotations

import ipaddress

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_ULA = ipaddress.ip_network("fc00::/7")
_SITE_LOCAL = ipaddress.ip_network("fec0::/10")
_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")


def blocked_reason(address: str | IPAddress) -> str | None:
    """Why a fetch must not connect to `address`, in words ("a private address");
    None when it is a public address."""
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv6Address):
        # Forms that embed an IPv4 address reach IPv4 hosts however they are
        # written, so they are refused outright rather than decoded and trusted.
        if ip.ipv4_mapped is not None:
            return f"an IPv4-mapped IPv6 address (for {ip.ipv4_mapped})"
        if any(ip in net for net in _NAT64):
            return "a NAT64 address"
        if ip.sixtofour is not None and blocked_reason(ip.sixtofour):
            return f"a 6to4 address for {ip.sixtofour}"
        if ip.teredo is not None:
            return "a Teredo tunnel address"
        if ip.scope_id:
            return "a scoped IPv6 address"
        if ip in _ULA:
            return "a unique-local IPv6 address"
        if ip in _SITE_LOCAL:
            return "a site-local IPv6 address"
    if ip.is_unspecified or (
        isinstance(ip, ipaddress.IPv4Address) and ip in _THIS_NETWORK
    ):
        return "an unspecified address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_multicast:
        return "a multicast address"
    if isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT:
        return "a shared (carrier-grade NAT) address"
    if ip.is_reserved:
        return "a reserved address"
    if ip.is_private:
        return "a private address"
    if not ip.is_global:
        return "a non-public address"
    return None
