"""The ``WWW-Authenticate`` challenge parser (the SDK's, fed through foldgate): quoted and bare values,
an absent header, and a hostile oversized one, which is cut before parsing."""

from __future__ import annotations

from foldgate.upstream.oauth.discovery import Challenge, challenge_of


def test_quoted_and_bare_parameters() -> None:
    header = (
        'Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata=https://x/prm'
    )
    assert challenge_of(header) == Challenge("https://x/prm", "files:read files:write", "insufficient_scope")


def test_no_header_is_an_empty_challenge() -> None:
    assert challenge_of(None) == Challenge()
    assert challenge_of("") == Challenge()


def test_an_oversized_header_is_cut_before_parsing() -> None:
    header = "Bearer " + "x" * 100_000 + ' scope="late"'
    assert challenge_of(header).scope is None
