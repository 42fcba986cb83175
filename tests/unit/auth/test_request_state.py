"""The gateway's sealed requestState: it opens only for the principal and call it was sealed for,
within its expiry, unaltered, under the same key; every refusal reads the same."""

from __future__ import annotations

import pytest

from foldgate.auth.request_state import InvalidStateError, StateSealer, call_binding

SECRET = b"s" * 32
ME = "default\x1ftoken-a"


def _sealed(sealer: StateSealer, now: float = 1_000.0) -> str:
    return sealer.seal({"s": "upstream-state"}, call_binding(ME, "crm__delete", {"id": 1}), now=now)


def test_a_state_opens_for_its_principal_and_call() -> None:
    sealer = StateSealer(SECRET)
    token = _sealed(sealer)
    assert sealer.open(token, call_binding(ME, "crm__delete", {"id": 1}), now=1_001.0) == {
        "s": "upstream-state"
    }


def test_the_upstreams_state_is_not_readable_in_the_token() -> None:
    assert "upstream-state" not in _sealed(StateSealer(SECRET))


def test_arguments_bind_by_value_not_by_key_order() -> None:
    sealer = StateSealer(SECRET)
    token = sealer.seal({}, call_binding(ME, "t", {"a": 1, "b": 2}), now=0.0)
    assert sealer.open(token, call_binding(ME, "t", {"b": 2, "a": 1}), now=1.0) == {}


@pytest.mark.parametrize(
    "binding",
    [
        call_binding("default\x1ftoken-b", "crm__delete", {"id": 1}),  # another principal
        call_binding("other\x1ftoken-a", "crm__delete", {"id": 1}),  # another tenant
        call_binding(ME, "crm__create", {"id": 1}),  # another tool
        call_binding(ME, "crm__delete", {"id": 2}),  # other arguments
    ],
    ids=["another principal", "another tenant", "another tool", "other arguments"],
)
def test_a_state_is_refused_for_another_principal_or_call(binding: str) -> None:
    sealer = StateSealer(SECRET)
    with pytest.raises(InvalidStateError, match="requestState is not valid"):
        sealer.open(_sealed(sealer), binding, now=1_001.0)


def test_an_expired_state_is_refused() -> None:
    sealer = StateSealer(SECRET, ttl=60)
    token = _sealed(sealer, now=1_000.0)
    binding = call_binding(ME, "crm__delete", {"id": 1})
    assert sealer.open(token, binding, now=1_059.0)
    with pytest.raises(InvalidStateError):
        sealer.open(token, binding, now=1_060.0)


def test_a_tampered_state_is_refused() -> None:
    sealer = StateSealer(SECRET)
    token = _sealed(sealer)
    binding = call_binding(ME, "crm__delete", {"id": 1})
    for i in (4, len(token) // 2, len(token) - 2):
        flipped = token[:i] + ("A" if token[i] != "A" else "B") + token[i + 1 :]
        with pytest.raises(InvalidStateError):
            sealer.open(flipped, binding, now=1_001.0)
    for bad in ("", "fg1.", "fg1.!!!", token[:-8], "v1." + token[4:], None, 12):
        with pytest.raises(InvalidStateError):
            sealer.open(bad, binding, now=1_001.0)


def test_a_state_sealed_under_another_key_is_refused() -> None:
    token = _sealed(StateSealer(b"t" * 32))
    with pytest.raises(InvalidStateError):
        StateSealer(SECRET).open(token, call_binding(ME, "crm__delete", {"id": 1}), now=1_001.0)


def test_another_instance_with_the_same_secret_opens_it() -> None:
    token = _sealed(StateSealer(SECRET))
    assert StateSealer(SECRET).open(token, call_binding(ME, "crm__delete", {"id": 1}), now=1_001.0)
