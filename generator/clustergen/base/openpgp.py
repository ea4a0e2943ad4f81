"""OpenPGP public keys as pull mode's signers give them (ansible.pull.signers[].gpg_key):
the ASCII armor taken off, and the primary key's fingerprint, so that validate proves the
key a reviewer reads is the fingerprint the spec names.

[src: RFC 4880 section 6.2 (armor: header lines, a blank line, base64, an optional
"=" CRC-24 line), 4.2 (packet headers, old and new format lengths), 5.5.2 (a version 4
public key packet) and 12.2 (a V4 fingerprint is the SHA-1 of 0x99, the two-octet length
of the public key packet's body, and the body).]
"""

from __future__ import annotations

import base64
import binascii
import hashlib

BEGIN = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
END = "-----END PGP PUBLIC KEY BLOCK-----"
PUBLIC_KEY_TAG = 6


class NotAPublicKey(ValueError):
    """The armored text is no OpenPGP version 4 public key."""


def dearmor(text: str) -> bytes:
    """The packets of one armored public key block."""
    lines = text.strip().splitlines()
    if not lines or lines[0] != BEGIN or lines[-1] != END:
        raise NotAPublicKey(f"not one armored public key ({BEGIN} ... {END})")
    body = lines[1:-1]
    if "" in body:  # armor headers (Comment:, Version:) end at the first blank line
        body = body[body.index("") + 1 :]
    data = "".join(line for line in body if not line.startswith("="))
    try:
        return base64.b64decode(data, validate=True)
    except binascii.Error as error:
        raise NotAPublicKey(f"its base64 does not decode ({error})") from None


def _first_packet(data: bytes) -> tuple[int, bytes]:
    """(tag, body) of the first packet."""
    if not data or not data[0] & 0x80:
        raise NotAPublicKey("it holds no OpenPGP packet")
    first = data[0]
    if first & 0x40:  # new format: tag in the low six bits, then a length of 1, 2 or 5
        tag, octet = first & 0x3F, data[1] if len(data) > 1 else 0
        if octet < 192:
            start, length = 2, octet
        elif octet < 224:
            start, length = 3, ((octet - 192) << 8) + data[2] + 192
        elif octet == 255:
            start, length = 6, int.from_bytes(data[2:6], "big")
        else:
            raise NotAPublicKey("its first packet has a partial length, which a key never has")
    else:  # old format: tag in bits 5-2, the length's size in bits 1-0
        tag, size = (first >> 2) & 0x0F, {0: 1, 1: 2, 2: 4}.get(first & 0x03)
        if size is None:
            raise NotAPublicKey("its first packet has an indeterminate length")
        start, length = 1 + size, int.from_bytes(data[1 : 1 + size], "big")
    body = data[start : start + length]
    if len(body) != length:
        raise NotAPublicKey("its first packet is cut short")
    return tag, body


def fingerprint(text: str) -> str:
    """The primary key's V4 fingerprint, 40 upper-case hex digits."""
    tag, body = _first_packet(dearmor(text))
    if tag != PUBLIC_KEY_TAG:
        raise NotAPublicKey(f"its first packet is not a public key (tag {tag})")
    if not body or body[0] != 4:
        version = body[0] if body else "none"
        raise NotAPublicKey(f"it is a version {version} key; gpgv on the nodes checks version 4")
    digest = hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body, usedforsecurity=False)
    return digest.hexdigest().upper()
