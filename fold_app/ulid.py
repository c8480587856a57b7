"""ULIDs: 26-character, time-ordered identifiers (48-bit ms time, 80 random bits).

Within one process, ids issued in the same millisecond increase monotonically, so
the journal order (received_at, id) matches the order ids were issued in.
"""

from __future__ import annotations

import os
import threading
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_lock = threading.Lock()
_last_ms = -1
_last_rand = 0


def _encode(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_ulid(now_ms: int | None = None) -> str:
    global _last_ms, _last_rand
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    with _lock:
        if ms <= _last_ms:
            ms = _last_ms
            _last_rand = (_last_rand + 1) & ((1 << 80) - 1)
        else:
            _last_ms = ms
            _last_rand = int.from_bytes(os.urandom(10), "big") >> 1  # room to increment
        rand = _last_rand
    return _encode(ms, 10) + _encode(rand, 16)


def ulid_time_ms(ulid: str) -> int:
    value = 0
    for ch in ulid[:10].upper():
        value = value * 32 + _ALPHABET.index(ch)
    return value
