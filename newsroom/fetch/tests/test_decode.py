"""Capped decompression and charset detection. No Django, no network."""

from __future__ import annotations

import gzip
import zlib

import pytest

from newsroom.fetch.decode import (
    BodyTooLarge,
    CappedDecoder,
    CorruptBody,
    UnsupportedEncoding,
    decode_text,
    detect_charset,
)


def _feed_all(decoder: CappedDecoder, data: bytes, chunk: int = 4096) -> bytes:
    out = [decoder.feed(data[i : i + chunk]) for i in range(0, len(data), chunk)]
    out.append(decoder.flush())
    return b"".join(out)


def test_gzip_round_trip():
    body = b"hello " * 1000
    assert _feed_all(CappedDecoder("gzip", 10_000), gzip.compress(body)) == body


def test_concatenated_gzip_members_are_all_read():
    data = gzip.compress(b"one ") + gzip.compress(b"two")
    assert _feed_all(CappedDecoder("gzip", 100), data) == b"one two"


def test_deflate_zlib_wrapped_and_raw():
    body = b"deflated " * 100
    assert _feed_all(CappedDecoder("deflate", 10_000), zlib.compress(body)) == body
    raw = zlib.compressobj(wbits=-15)
    data = raw.compress(body) + raw.flush()
    assert _feed_all(CappedDecoder("deflate", 10_000), data) == body


def test_gzip_bomb_stops_at_the_cap_without_inflating_it():
    bomb = gzip.compress(b"\0" * (50 * 1024 * 1024), compresslevel=9)
    decoder = CappedDecoder("gzip", 1024 * 1024)
    with pytest.raises(BodyTooLarge):
        # One chunk holding the whole bomb: the decoder must still stop at the cap.
        decoder.feed(bomb)
    assert decoder.size <= 1024 * 1024


def test_identity_body_over_the_cap_is_refused():
    decoder = CappedDecoder("", 10)
    decoder.feed(b"12345")
    with pytest.raises(BodyTooLarge):
        decoder.feed(b"678901")


def test_unknown_encoding_is_named():
    with pytest.raises(UnsupportedEncoding, match="'compress'"):
        CappedDecoder("compress", 10)


def test_corrupt_gzip_is_reported():
    with pytest.raises(CorruptBody):
        _feed_all(
            CappedDecoder("gzip", 100), b"\x1f\x8b\x08\x00garbage that is not gzip"
        )


CHARSETS = {
    "header": ("text/xml; charset=ISO-8859-1", b"<rss/>", "iso8859-1", ""),
    "header quoted": ('text/html; charset="utf-8"', b"", "utf-8", ""),
    "utf-8 bom": ("text/xml", b"\xef\xbb\xbf<rss/>", "utf-8", ""),
    "utf-16 bom": ("", "<rss/>".encode("utf-16"), "utf-16", ""),
    "xml declaration": (
        "application/rss+xml",
        b"<?xml version='1.0' encoding='windows-1252'?><rss/>",
        "cp1252",
        "",
    ),
    "html meta": ("text/html", b'<html><head><meta charset="koi8-r">', "koi8-r", ""),
    "missing": ("application/rss+xml", b"<rss/>", None, ""),
    "unknown in header falls back to declaration": (
        "text/xml; charset=bogus-9",
        b'<?xml version="1.0" encoding="utf-8"?><rss/>',
        "utf-8",
        "unknown charset 'bogus-9'",
    ),
    "unknown everywhere": (
        "text/xml; charset=nope",
        b"<rss/>",
        None,
        "unknown charset 'nope'",
    ),
}


@pytest.mark.parametrize(
    "content_type,body,charset,note", CHARSETS.values(), ids=CHARSETS.keys()
)
def test_charset_detection(content_type, body, charset, note):
    found, found_note = detect_charset(content_type, body)
    assert found == charset
    assert note in found_note
    assert bool(note) == bool(found_note)


def test_wrong_charset_costs_characters_not_the_page():
    latin1 = "Café résumé".encode("latin-1")
    text = decode_text(latin1, "utf-8")
    assert text.startswith("Caf") and "\ufffd" in text


def test_utf8_bom_is_dropped_from_text():
    assert decode_text(b"\xef\xbb\xbfhi", "utf-8") == "hi"
