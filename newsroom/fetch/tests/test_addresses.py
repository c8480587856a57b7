"""Which addresses a fetch may reach: a table of named cases. No Django, no network."""

from __future__ import annotations

import pytest

from newsroom.fetch.addresses import blocked_reason

BLOCKED = {
    "loopback v4": ("127.0.0.1", "loopback"),
    "loopback v4 other": ("127.10.20.30", "loopback"),
    "loopback v6": ("::1", "loopback"),
    "private 10/8": ("10.0.0.5", "private"),
    "private 172.16/12": ("172.16.1.1", "private"),
    "private 192.168/16": ("192.168.1.1", "private"),
    "link-local v4 (cloud metadata)": ("169.254.169.254", "link-local"),
    "link-local v6": ("fe80::1", "link-local"),
    "multicast v4": ("224.0.0.1", "multicast"),
    "multicast v6": ("ff02::1", "multicast"),
    "unspecified v4": ("0.0.0.0", "unspecified"),
    "this network 0/8": ("0.1.2.3", "unspecified"),
    "unspecified v6": ("::", "unspecified"),
    "cgnat": ("100.64.0.1", "carrier-grade NAT"),
    "cgnat top": ("100.127.255.254", "carrier-grade NAT"),
    "ipv4-mapped loopback": ("::ffff:127.0.0.1", "IPv4-mapped"),
    "ipv4-mapped public": ("::ffff:93.184.216.34", "IPv4-mapped"),
    "nat64 well-known": ("64:ff9b::7f00:1", "NAT64"),
    "nat64 local-use": ("64:ff9b:1::a00:5", "NAT64"),
    "ula": ("fd00::1", "unique-local"),
    "site-local": ("fec0::1", "site-local"),
    "6to4 of private": ("2002:0a00:0005::1", "6to4"),
    "teredo": ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
    "reserved 240/4": ("240.0.0.1", "reserved"),
    "broadcast": ("255.255.255.255", ""),
    "documentation": ("192.0.2.1", ""),
    "benchmarking": ("198.18.0.1", ""),
}


@pytest.mark.parametrize("address,words", BLOCKED.values(), ids=BLOCKED.keys())
def test_non_public_addresses_are_blocked_with_a_reason(address, words):
    reason = blocked_reason(address)
    assert reason is not None
    assert words in reason


@pytest.mark.parametrize(
    "address",
    ["93.184.216.34", "8.8.8.8", "2606:2800:220:1:248:1893:25c8:1946", "1.1.1.1"],
)
def test_public_addresses_pass(address):
    assert blocked_reason(address) is None
