"""KmsEnvelopeCipher against KMS on moto_server: the envelope binds its context (in KMS and in AES-GCM),
pins the key, refuses tampering, and a warm instance unwraps each data key once (bounded, expiring)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from foldgate.errors import StoreError
from foldgate.store.grants.cipher import FORMAT_LOCAL
from foldgate.store.grants.kms import CONTEXT_KEY, KmsEnvelopeCipher

SECRET = b"refresh-token-0123456789"
CONTEXT = '["grant", "acme", "github", "*"]'


class Ticker:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def counting(cipher: KmsEnvelopeCipher) -> dict[str, list[dict[str, Any]]]:
    """The KMS requests the cipher makes, by operation."""
    calls: dict[str, list[dict[str, Any]]] = {"GenerateDataKey": [], "Decrypt": []}
    for op, seen in calls.items():
        cipher.client.meta.events.register(
            f"provide-client-params.kms.{op}", lambda params, seen=seen, **_: seen.append(params)
        )
    return calls


def test_round_trip_and_what_kms_is_asked(kms_key: str) -> None:
    cipher = KmsEnvelopeCipher(kms_key)
    calls = counting(cipher)
    sealed = cipher.encrypt(SECRET, context=CONTEXT)
    assert SECRET not in sealed
    assert sealed != cipher.encrypt(SECRET, context=CONTEXT)  # a data key (and nonce) per seal
    # Another instance (cold cache) asks KMS, under the same context and pinned to the key.
    reader = KmsEnvelopeCipher(kms_key)
    reads = counting(reader)
    assert reader.decrypt(sealed, context=CONTEXT) == SECRET
    assert calls["GenerateDataKey"][0]["EncryptionContext"] == {CONTEXT_KEY: CONTEXT}
    assert calls["GenerateDataKey"][0]["KeySpec"] == "AES_256"
    assert [r["EncryptionContext"] for r in reads["Decrypt"]] == [{CONTEXT_KEY: CONTEXT}]
    assert reads["Decrypt"][0]["KeyId"] == kms_key


def test_a_warm_instance_unwraps_each_data_key_once_until_it_expires(kms_key: str) -> None:
    sealed = KmsEnvelopeCipher(kms_key).encrypt(SECRET, context=CONTEXT)
    ticker = Ticker()
    cipher = KmsEnvelopeCipher(kms_key, cache_seconds=300, clock=ticker)
    calls = counting(cipher)
    for _ in range(5):
        assert cipher.decrypt(sealed, context=CONTEXT) == SECRET
    assert len(calls["Decrypt"]) == 1
    ticker.now += 301
    assert cipher.decrypt(sealed, context=CONTEXT) == SECRET
    assert len(calls["Decrypt"]) == 2


def test_what_an_instance_sealed_it_reads_back_without_kms(kms_key: str) -> None:
    cipher = KmsEnvelopeCipher(kms_key)
    calls = counting(cipher)
    sealed = cipher.encrypt(SECRET, context=CONTEXT)
    assert cipher.decrypt(sealed, context=CONTEXT) == SECRET
    assert calls["Decrypt"] == []


def test_the_cache_is_bounded(kms_key: str) -> None:
    cipher = KmsEnvelopeCipher(kms_key, cache_size=2)
    calls = counting(cipher)
    sealed = [cipher.encrypt(SECRET, context=f"{CONTEXT}{i}") for i in range(3)]
    # The first data key was evicted by the third: reading it costs a KMS call again.
    assert cipher.decrypt(sealed[0], context=f"{CONTEXT}0") == SECRET
    assert cipher.decrypt(sealed[2], context=f"{CONTEXT}2") == SECRET
    assert len(calls["Decrypt"]) == 1


@pytest.mark.parametrize("warm", [True, False])
def test_another_context_does_not_open_warm_or_cold(kms_key: str, warm: bool) -> None:
    sealer = KmsEnvelopeCipher(kms_key)
    sealed = sealer.encrypt(SECRET, context=CONTEXT)
    # Warm: the data key is cached for CONTEXT, and must not serve another context; cold: KMS refuses.
    reader = sealer if warm else KmsEnvelopeCipher(kms_key)
    with pytest.raises(StoreError):
        reader.decrypt(sealed, context='["grant", "acme", "github", "mallory"]')


def test_every_flipped_byte_is_refused(kms_key: str) -> None:
    sealer = KmsEnvelopeCipher(kms_key)
    sealed = sealer.encrypt(b"x", context=CONTEXT)
    for i in range(len(sealed)):
        tampered = bytearray(sealed)
        tampered[i] ^= 0x01
        # Cold instances, so a tampered wrapped key reaches KMS rather than the cache.
        with pytest.raises(StoreError):
            KmsEnvelopeCipher(kms_key).decrypt(bytes(tampered), context=CONTEXT)


@pytest.mark.parametrize("cut", [0, 1, 3, 20, -17])
def test_truncated_values_are_refused(kms_key: str, cut: int) -> None:
    sealed = KmsEnvelopeCipher(kms_key).encrypt(SECRET, context=CONTEXT)
    with pytest.raises(StoreError):
        KmsEnvelopeCipher(kms_key).decrypt(sealed[:cut], context=CONTEXT)


def test_a_local_key_value_is_refused_by_name(kms_key: str) -> None:
    with pytest.raises(StoreError, match="KMS envelope format"):
        KmsEnvelopeCipher(kms_key).decrypt(bytes([FORMAT_LOCAL]) + b"\0" * 60, context=CONTEXT)


def test_a_value_sealed_under_another_key_is_refused(kms_key: str, moto_endpoint: str) -> None:
    other = boto3.client("kms").create_key()["KeyMetadata"]["KeyId"]
    sealed = KmsEnvelopeCipher(other).encrypt(SECRET, context=CONTEXT)
    with pytest.raises(StoreError, match="KMS cannot unwrap"):
        KmsEnvelopeCipher(kms_key).decrypt(sealed, context=CONTEXT)


def test_kms_failures_are_store_errors(moto_endpoint: str) -> None:
    with pytest.raises(StoreError, match="KMS cannot make a data key"):
        KmsEnvelopeCipher("00000000-0000-0000-0000-000000000000").encrypt(SECRET, context=CONTEXT)
