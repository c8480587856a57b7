"""Decompressing bodies under a hard cap, and finding their charset. Pure.

httpx's own decoders have no output limit (64 KiB of gzip inflated to 67 MB
when measured), so the fetcher reads the raw stream and inflates it here, never
asking a decompressor for more than the bytes still allowed plus one: a gzip
bomb stops at the cap instead of filling memory.
"""

from __future__ import annotations

import codecs
import re
import zlib
from typing import Protocol


class BodyTooLarge(Exception):
    """The body, decompressed, is larger than the cap."""


class UnsupportedEncoding(Exception):
    """The server compressed the body in a way we cannot (or will not) undo."""


class CorruptBody(Exception):
    """The compressed body could not be decompressed."""


class _Stage(Protocol):
    def feed(self, data: bytes, limit: int) -> bytes: ...
    def flush(self, limit: int) -> bytes: ...


class _Identity:
    def feed(self, data: bytes, limit: int) -> bytes:
        return data

    def flush(self, limit: int) -> bytes:
        return b""


class _Zlib:
    """gzip (with concatenated members) or deflate (zlib-wrapped or raw)."""

    def __init__(self, wbits: int, raw_fallback: bool = False) -> None:
        self._wbits = wbits
        self._raw_fallback = raw_fallback
        self._d = zlib.decompressobj(wbits)
        self._started = False

    def feed(self, data: bytes, limit: int) -> bytes:
        out = bytearray()
        while data and len(out) <= limit:
            try:
                chunk = self._d.decompress(data, limit + 1 - len(out))
            except zlib.error as e:
                if self._raw_fallback and not self._started:
                    # Some servers send raw deflate under "deflate"; retry that way.
                    self._raw_fallback = False
                    self._wbits = -zlib.MAX_WBITS
                    self._d = zlib.decompressobj(self._wbits)
                    continue
                raise CorruptBody(f"the compressed body is corrupt ({e})") from None
            self._started = True
            out += chunk
            if self._d.unconsumed_tail:
                data = self._d.unconsumed_tail
            elif self._d.eof and self._d.unused_data.strip(b"\x00"):
                # A further gzip member follows; trailing zero padding is not one.
                data = self._d.unused_data
                self._d = zlib.decompressobj(self._wbits)
            else:
                data = b""
        return bytes(out)

    def flush(self, limit: int) -> bytes:
        return self._d.flush()[: limit + 1] if not self._d.eof else b""


class _Limited:
    """Decompressors with decompress(data, max_length) and needs_input (zstd)."""

    def __init__(self, decompressor) -> None:
        self._d = decompressor

    def feed(self, data: bytes, limit: int) -> bytes:
        out = bytearray()
        try:
            out += self._d.decompress(data, limit + 1)
            while not self._d.needs_input and not self._d.eof and len(out) <= limit:
                out += self._d.decompress(b"", limit + 1 - len(out))
        except Exception as e:  # each library raises its own error type
            raise CorruptBody(f"the compressed body is corrupt ({e})") from None
        return bytes(out)

    def flush(self, limit: int) -> bytes:
        return b""


class _Brotli:
    def __init__(self, module) -> None:
        self._d = module.Decompressor()

    def feed(self, data: bytes, limit: int) -> bytes:
        out = bytearray()
        try:
            out += self._d.process(data, output_buffer_limit=limit + 1)
            while not self._d.can_accept_more_data() and len(out) <= limit:
                out += self._d.process(b"", output_buffer_limit=limit + 1 - len(out))
        except Exception as e:
            raise CorruptBody(f"the compressed body is corrupt ({e})") from None
        return bytes(out)

    def flush(self, limit: int) -> bytes:
        return b""


def _zstd_factory():
    try:
        from compression import zstd  # Python 3.14+
    except ImportError:
        return None
    return lambda: _Limited(zstd.ZstdDecompressor())


def _brotli_factory():
    try:
        import brotli
    except ImportError:
        return None
    # Only versions whose decompressor can bound its output are safe to use.
    if not hasattr(brotli.Decompressor, "can_accept_more_data"):
        return None
    return lambda: _Brotli(brotli)


_FACTORIES = {
    "identity": _Identity,
    "gzip": lambda: _Zlib(16 + zlib.MAX_WBITS),
    "x-gzip": lambda: _Zlib(16 + zlib.MAX_WBITS),
    "deflate": lambda: _Zlib(zlib.MAX_WBITS, raw_fallback=True),
}
for _name, _factory in (("br", _brotli_factory()), ("zstd", _zstd_factory())):
    if _factory is not None:
        _FACTORIES[_name] = _factory

ACCEPT_ENCODING = ", ".join(
    n for n in ("gzip", "deflate", "br", "zstd") if n in _FACTORIES
)


class CappedDecoder:
    """Undo a Content-Encoding chain chunk by chunk, never past `max_bytes`.

    Raises BodyTooLarge as soon as the output would exceed the cap, so at most
    `max_bytes + 1` decompressed bytes ever exist per stage."""

    def __init__(self, content_encoding: str, max_bytes: int) -> None:
        names = [n.strip().lower() for n in content_encoding.split(",") if n.strip()]
        self.max_bytes = max_bytes
        self.size = 0
        self._stages: list[_Stage] = []
        # Encodings are listed in the order they were applied: undo them backwards.
        for name in reversed(names):
            factory = _FACTORIES.get(name)
            if factory is None:
                raise UnsupportedEncoding(
                    f"the server compressed the body with {name!r}, which Newsroom "
                    "cannot decompress"
                )
            self._stages.append(factory())

    def feed(self, data: bytes) -> bytes:
        for stage in self._stages:
            data = stage.feed(data, self.max_bytes)
            if len(data) > self.max_bytes:
                raise BodyTooLarge
        return self._count(data)

    def flush(self) -> bytes:
        data = b""
        for stage in self._stages:
            data = stage.feed(data, self.max_bytes) + stage.flush(self.max_bytes)
        return self._count(data)

    def _count(self, data: bytes) -> bytes:
        self.size += len(data)
        if self.size > self.max_bytes:
            raise BodyTooLarge
        return data


# -- charsets -----------------------------------------------------------------

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),  # before UTF-16 LE: it starts with the same bytes
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_XML_DECL = re.compile(
    rb"^\s*<\?xml[^>]*?\sencoding\s*=\s*[\"']([A-Za-z0-9._:-]+)[\"']"
)
_META_CHARSET = re.compile(
    rb"<meta[^>]+charset\s*=\s*[\"']?\s*([A-Za-z0-9._:-]+)", re.I
)


def known_charset(name: str | None) -> str | None:
    """The codec name Python knows `name` by, or None for an unknown charset."""
    if not name:
        return None
    try:
        return codecs.lookup(name.strip().strip("\"'")).name
    except LookupError:
        return None


def header_charset(content_type: str) -> str | None:
    """The raw charset parameter of a Content-Type header value, if any."""
    for param in content_type.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip("\"'")
    return None


def detect_charset(content_type: str, body: bytes) -> tuple[str | None, str]:
    """(charset, note): from the header, else a byte-order mark, else an XML
    declaration or HTML meta tag; None when nothing names one. `note` explains a
    declared charset that was unknown and ignored (empty otherwise)."""
    note = ""
    declared = header_charset(content_type)
    if declared:
        found = known_charset(declared)
        if found:
            return found, note
        note = f"the server declared an unknown charset {declared!r}; ignored it"
    for bom, name in _BOMS:
        if body.startswith(bom):
            return name, note
    head = body[:2048]
    match = _XML_DECL.match(head) or _META_CHARSET.search(head)
    if match:
        name = match.group(1).decode("ascii")
        found = known_charset(name)
        if found:
            return found, note
        note = note or f"the document declared an unknown charset {name!r}; ignored it"
    return None, note


def decode_text(body: bytes, charset: str | None) -> str:
    """Text of a body: its charset, else UTF-8; undecodable bytes become U+FFFD
    so a wrong declaration costs some characters, never the whole page."""
    encoding = charset or "utf-8"
    if encoding == "utf-8":
        encoding = "utf-8-sig"  # drops a byte-order mark
    return body.decode(encoding, errors="replace")
