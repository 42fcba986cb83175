"""Token material sealed under a local key file: AES-256-GCM (local mode).

A sealed value is ``format (1 byte) | key id (4 bytes) | nonce (12 bytes) | ciphertext and tag``.
The format byte says which cipher sealed it (``0x01`` here, ``0x02`` for the KMS envelope), so a blob
handed to the wrong cipher is refused by name instead of failing obscurely. The key id is the first
four bytes of SHA-256 of the key: it picks the key to open with, which is what lets keys rotate.

The key file holds one key per line, 64 hex characters each (32 random bytes); the first line seals,
every line opens. It is created on first use with mode 0600 (``foldgate.store.key_file``: written whole,
then linked into place, so two processes starting together share one key). To rotate, put a new key
on the first line (``openssl rand -hex 32``) and keep the old ones below it until every grant has been
rewritten (grants are rewritten at each refresh).

The associated data is the header plus the ``context`` (the row's identity), so a sealed value copied
onto another row, or with a header edited, fails authentication. Any failure is a StoreError; a
plaintext is never returned unless the tag verified.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from foldgate.errors import ConfigError, StoreError
from foldgate.store.grants.base import GrantCipher
from foldgate.store.key_file import read_or_create_key

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = ["FORMAT_KMS", "FORMAT_LOCAL", "NONCE_BYTES", "LocalKeyCipher", "aad", "key_id"]

FORMAT_LOCAL: Final = 0x01
FORMAT_KMS: Final = 0x02
NONCE_BYTES: Final = 12
_KEY_BYTES: Final = 32
_KID_BYTES: Final = 4
_HEADER: Final = 1 + _KID_BYTES


def key_id(key: bytes) -> bytes:
    """The 4-byte id of a key: a prefix of its SHA-256 (reveals nothing usable about a 256-bit key)."""
    return hashlib.sha256(key).digest()[:_KID_BYTES]


def aad(header: bytes, context: str) -> bytes:
    """The associated data: the sealed value's header and the row identity it belongs to."""
    # surrogatepass: any str encodes, and distinct strings stay distinct.
    return header + b"\x00" + context.encode("utf-8", "surrogatepass")


def _parse_keys(text: str, source: str) -> list[bytes]:
    keys: list[bytes] = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            key = bytes.fromhex(line)
        except ValueError:
            key = b""
        if len(key) != _KEY_BYTES:
            # Never echo the line: it is (part of) a key.
            raise ConfigError(f"key file {source} line {number} is not 64 hex characters (32 bytes)")
        keys.append(key)
    if not keys:
        raise ConfigError(f"key file {source} holds no key")
    return keys


class LocalKeyCipher(GrantCipher):
    """AES-256-GCM under local keys: the first seals, all open (rotation)."""

    def __init__(self, keys: Sequence[bytes]) -> None:
        if not keys or any(len(k) != _KEY_BYTES for k in keys):
            raise ConfigError("a grant cipher needs one or more 32-byte keys")
        self._sealing = keys[0]
        self._header = bytes([FORMAT_LOCAL]) + key_id(keys[0])
        # A later duplicate id (astronomically unlikely) must not shadow the sealing key.
        self._keys: dict[bytes, bytes] = {}
        for key in keys:
            self._keys.setdefault(key_id(key), key)
        self._by_id: dict[bytes, AESGCM] = {}

    def _cipher(self, kid: bytes) -> AESGCM | None:
        """The AEAD for a key id (built on first use), None when no key of ours has that id."""
        cipher = self._by_id.get(kid)
        if cipher is None and kid in self._keys:
            # Loaded on first use: cryptography's bindings are ~25 ms of a cold start otherwise.
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM

            cipher = self._by_id[kid] = AESGCM(self._keys[kid])
        return cipher

    @classmethod
    def from_file(cls, path: str | Path) -> LocalKeyCipher:
        """The keys of ``path``, which is created (one new key, mode 0600) when absent."""
        path = Path(path)
        return cls(_parse_keys(read_or_create_key(path), str(path)))

    def encrypt(self, plaintext: bytes, *, context: str) -> bytes:
        """Seal under the first key with a fresh random nonce (96 bits: safe for 2^32 seals per key)."""
        nonce = os.urandom(NONCE_BYTES)
        cipher = self._cipher(self._header[1:])
        assert cipher is not None  # the sealing key is always one of ours
        sealed = cipher.encrypt(nonce, plaintext, aad(self._header, context))
        return self._header + nonce + sealed

    def decrypt(self, sealed: bytes, *, context: str) -> bytes:
        """Open a value this cipher (under any of its keys) sealed for ``context``."""
        sealed = bytes(sealed)
        if len(sealed) < _HEADER + NONCE_BYTES + 16:
            raise StoreError("sealed grant value is truncated")
        if sealed[0] != FORMAT_LOCAL:
            raise StoreError(f"sealed grant value has format {sealed[0]:#04x}, not the local key format")
        header = sealed[:_HEADER]
        cipher = self._cipher(header[1:])
        if cipher is None:
            raise StoreError("sealed grant value is under a key this key file does not hold")
        nonce = sealed[_HEADER : _HEADER + NONCE_BYTES]
        # Loaded with the cipher above (see _cipher).
        from cryptography.exceptions import InvalidTag

        try:
            return cipher.decrypt(nonce, sealed[_HEADER + NONCE_BYTES :], aad(header, context))
        except InvalidTag as exc:
            raise StoreError("sealed grant value does not authenticate (tampered or another row's)") from exc
