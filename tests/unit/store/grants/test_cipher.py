"""LocalKeyCipher: AES-GCM under a 0600 key file, bound to its context, refusing any tampering, with
rotation (the first key seals, every key in the file opens)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from foldgate.errors import ConfigError, StoreError
from foldgate.store.grants.cipher import FORMAT_KMS, LocalKeyCipher, key_id

SECRET = b"refresh-token-0123456789"
CONTEXT = '["grant", "acme", "github", "*"]'


def test_round_trip_with_a_fresh_nonce_each_time() -> None:
    cipher = LocalKeyCipher([os.urandom(32)])
    one = cipher.encrypt(SECRET, context=CONTEXT)
    two = cipher.encrypt(SECRET, context=CONTEXT)
    assert one != two  # nonce per message: equal plaintexts do not show as equal ciphertexts
    assert SECRET not in one
    assert cipher.decrypt(one, context=CONTEXT) == SECRET
    assert cipher.decrypt(two, context=CONTEXT) == SECRET


def test_another_context_does_not_open() -> None:
    cipher = LocalKeyCipher([os.urandom(32)])
    sealed = cipher.encrypt(SECRET, context=CONTEXT)
    with pytest.raises(StoreError, match="does not authenticate"):
        cipher.decrypt(sealed, context='["grant", "acme", "github", "mallory"]')


def test_every_flipped_byte_is_refused() -> None:
    cipher = LocalKeyCipher([os.urandom(32)])
    sealed = cipher.encrypt(SECRET, context=CONTEXT)
    for i in range(len(sealed)):
        tampered = bytearray(sealed)
        tampered[i] ^= 0x01
        with pytest.raises(StoreError):
            cipher.decrypt(bytes(tampered), context=CONTEXT)


@pytest.mark.parametrize("cut", [0, 1, 5, 17, 32])
def test_truncated_values_are_refused(cut: int) -> None:
    cipher = LocalKeyCipher([os.urandom(32)])
    sealed = cipher.encrypt(b"", context=CONTEXT)  # the shortest real value: header, nonce, tag
    assert len(sealed) == 33
    with pytest.raises(StoreError):
        cipher.decrypt(sealed[:cut], context=CONTEXT)


def test_another_key_does_not_open() -> None:
    sealed = LocalKeyCipher([os.urandom(32)]).encrypt(SECRET, context=CONTEXT)
    with pytest.raises(StoreError, match="key this key file does not hold"):
        LocalKeyCipher([os.urandom(32)]).decrypt(sealed, context=CONTEXT)


def test_a_value_of_the_kms_format_is_refused_by_name() -> None:
    cipher = LocalKeyCipher([os.urandom(32)])
    sealed = bytearray(cipher.encrypt(SECRET, context=CONTEXT))
    sealed[0] = FORMAT_KMS
    with pytest.raises(StoreError, match="format 0x02"):
        cipher.decrypt(bytes(sealed), context=CONTEXT)


def test_rotation_new_key_seals_old_keys_still_open() -> None:
    old, new = os.urandom(32), os.urandom(32)
    before = LocalKeyCipher([old]).encrypt(SECRET, context=CONTEXT)
    rotated = LocalKeyCipher([new, old])
    assert rotated.decrypt(before, context=CONTEXT) == SECRET
    after = rotated.encrypt(SECRET, context=CONTEXT)
    assert after[1:5] == key_id(new)
    # Once the old key is dropped, what it sealed no longer opens, and what the new one sealed does.
    assert LocalKeyCipher([new]).decrypt(after, context=CONTEXT) == SECRET
    with pytest.raises(StoreError):
        LocalKeyCipher([new]).decrypt(before, context=CONTEXT)


def test_key_file_is_created_0600_once_and_reused(tmp_path: Path) -> None:
    path = tmp_path / "state" / "grants.key"
    sealed = LocalKeyCipher.from_file(path).encrypt(SECRET, context=CONTEXT)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(bytes.fromhex(path.read_text().strip())) == 32
    assert LocalKeyCipher.from_file(path).decrypt(sealed, context=CONTEXT) == SECRET


def test_key_file_with_comments_and_an_old_key_below(tmp_path: Path) -> None:
    old, new = os.urandom(32), os.urandom(32)
    before = LocalKeyCipher([old]).encrypt(SECRET, context=CONTEXT)
    path = tmp_path / "grants.key"
    path.write_text(f"# rotated 2026-11-30\n{new.hex()}\n\n{old.hex()}\n")
    cipher = LocalKeyCipher.from_file(path)
    assert cipher.decrypt(before, context=CONTEXT) == SECRET
    assert cipher.encrypt(SECRET, context=CONTEXT)[1:5] == key_id(new)


@pytest.mark.parametrize("text", ["", "# only a comment\n", "abcd\n", "zz" * 32 + "\n", "ab" * 31 + "\n"])
def test_a_bad_key_file_is_a_config_error_that_never_echoes_it(tmp_path: Path, text: str) -> None:
    path = tmp_path / "grants.key"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        LocalKeyCipher.from_file(path)
    if text.strip() and not text.startswith("#"):
        assert text.strip() not in info.value.message


def test_keys_must_be_32_bytes() -> None:
    with pytest.raises(ConfigError):
        LocalKeyCipher([])
    with pytest.raises(ConfigError):
        LocalKeyCipher([os.urandom(16)])
