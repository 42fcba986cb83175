"""Token material sealed by envelope encryption under the stack's KMS key (cloud).

Each seal asks KMS for a fresh AES-256 data key (``GenerateDataKey``), encrypts locally with AES-GCM
and stores the data key as KMS wrapped it, so the key never leaves KMS and a seal costs one KMS call,
a read at most one ``Decrypt``. A sealed value is ``0x02 | wrapped key length (2 bytes) | wrapped key
| nonce (12 bytes) | ciphertext and tag``. The ``context`` is bound twice: as the KMS encryption
context ``{"foldgate": context}`` (KMS refuses to unwrap the data key under another, and CloudTrail
records which row each unwrap was for) and as AES-GCM associated data with the header.

A warm instance keeps the data keys it unwrapped (or generated) in a small in-memory cache, keyed by
the wrapped key *and* the context, so a grant read on every call costs no KMS round trip. This is safe
because: the cache lives only in the memory of a process that holds the decrypted tokens those keys
protect anyway; an entry is found only with the exact wrapped key and context KMS already accepted, and
the AES-GCM tag is still checked on every read, so a hit cannot open a tampered or moved value; and
entries expire (``cache_seconds``), so disabling the key or revoking the role's access takes effect on
warm instances within minutes. Nothing is ever cached on disk.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final

from foldgate.errors import StoreError
from foldgate.store.grants.base import GrantCipher
from foldgate.store.grants.cipher import FORMAT_KMS, NONCE_BYTES, aad

__all__ = ["CONTEXT_KEY", "KmsEnvelopeCipher"]

# The one encryption-context key; the key policy allows no other (kms:EncryptionContextKeys).
CONTEXT_KEY: Final = "foldgate"
_LEN_BYTES: Final = 2
_TAG_BYTES: Final = 16


def _kms_client() -> Any:
    # boto3 (~0.3 s) loads only in instances that seal with KMS.
    import boto3
    from botocore.config import Config

    config = Config(retries={"mode": "standard", "max_attempts": 4}, connect_timeout=2, read_timeout=5)
    return boto3.client("kms", config=config)


def _errors() -> tuple[type[Exception], ...]:
    # botocore loads only in instances that seal with KMS.
    from botocore.exceptions import BotoCoreError, ClientError

    return (ClientError, BotoCoreError)


def _describe(exc: Exception) -> str:
    code = getattr(exc, "response", {}).get("Error", {}).get("Code")
    return str(code) if code else (str(exc) or type(exc).__name__)


class KmsEnvelopeCipher(GrantCipher):
    """AES-GCM under per-value data keys from KMS ``key_id``; ``client`` is a ``kms`` client (lazy)."""

    def __init__(
        self,
        key_id: str,
        *,
        client: Any | None = None,
        cache_size: int = 256,
        cache_seconds: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.key_id = key_id
        self._client = client
        self._cache: OrderedDict[tuple[bytes, str], tuple[float, bytes]] = OrderedDict()
        self._cache_size = cache_size
        self._cache_seconds = cache_seconds
        self._clock = clock
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        """The KMS client, made on first use (an instance that never touches a grant never pays)."""
        if self._client is None:
            self._client = _kms_client()
        return self._client

    def _remember(self, wrapped: bytes, context: str, key: bytes) -> None:
        with self._lock:
            self._cache[(wrapped, context)] = (self._clock() + self._cache_seconds, key)
            self._cache.move_to_end((wrapped, context))
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def _cached(self, wrapped: bytes, context: str) -> bytes | None:
        with self._lock:
            entry = self._cache.get((wrapped, context))
            if entry is None:
                return None
            if entry[0] <= self._clock():
                del self._cache[(wrapped, context)]
                return None
            self._cache.move_to_end((wrapped, context))
            return entry[1]

    def encrypt(self, plaintext: bytes, *, context: str) -> bytes:
        """Seal under a new data key; StoreError when KMS refuses or is unreachable."""
        try:
            resp = self.client.generate_data_key(
                KeyId=self.key_id, KeySpec="AES_256", EncryptionContext={CONTEXT_KEY: context}
            )
        except _errors() as exc:
            raise StoreError(f"KMS cannot make a data key: {_describe(exc)}") from exc
        key, wrapped = bytes(resp["Plaintext"]), bytes(resp["CiphertextBlob"])
        if len(wrapped) >= 1 << (8 * _LEN_BYTES):
            raise StoreError("KMS returned an oversized wrapped data key")
        header = bytes([FORMAT_KMS]) + len(wrapped).to_bytes(_LEN_BYTES, "big") + wrapped
        nonce = os.urandom(NONCE_BYTES)
        # Loaded on first use: cryptography's bindings are ~25 ms of a cold start otherwise.
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        sealed = AESGCM(key).encrypt(nonce, plaintext, aad(header, context))
        # The read that follows a write (the caller's own re-read) needs no KMS call.
        self._remember(wrapped, context, key)
        return header + nonce + sealed

    def _unwrap(self, wrapped: bytes, context: str) -> bytes:
        key = self._cached(wrapped, context)
        if key is not None:
            return key
        try:
            # KeyId pins the key: a value wrapped under any other key (an attacker's) is refused.
            resp = self.client.decrypt(
                CiphertextBlob=wrapped, KeyId=self.key_id, EncryptionContext={CONTEXT_KEY: context}
            )
        except _errors() as exc:
            raise StoreError(f"KMS cannot unwrap the grant's data key: {_describe(exc)}") from exc
        key = bytes(resp["Plaintext"])
        self._remember(wrapped, context, key)
        return key

    def decrypt(self, sealed: bytes, *, context: str) -> bytes:
        """Open a value sealed for ``context``; StoreError for anything tampered, moved or unreadable."""
        sealed = bytes(sealed)
        if len(sealed) < 1 + _LEN_BYTES or sealed[0] != FORMAT_KMS:
            raise StoreError("sealed grant value is not in the KMS envelope format")
        size = int.from_bytes(sealed[1 : 1 + _LEN_BYTES], "big")
        start = 1 + _LEN_BYTES + size
        if size == 0 or len(sealed) < start + NONCE_BYTES + _TAG_BYTES:
            raise StoreError("sealed grant value is truncated")
        header, wrapped = sealed[:start], sealed[1 + _LEN_BYTES : start]
        key = self._unwrap(wrapped, context)
        nonce = sealed[start : start + NONCE_BYTES]
        # Loaded on first use: cryptography's bindings are ~25 ms of a cold start otherwise.
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        try:
            return AESGCM(key).decrypt(nonce, sealed[start + NONCE_BYTES :], aad(header, context))
        except (InvalidTag, ValueError) as exc:
            raise StoreError("sealed grant value does not authenticate (tampered or another row's)") from exc
