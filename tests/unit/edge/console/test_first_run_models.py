"""The first-run fixes' view-model pieces: the reindex outcome as a sentence, the word diff of a changed
line (plain text segments, bounded), `server__tool` names of canonical keys, the token scope picked
from the tenant's servers, and the sealed one-time flash that carries a new token's secret."""

from __future__ import annotations

from foldgate.edge.console.approvals import by_server, side_by_side, word_diff
from foldgate.edge.console.flash import FLASH_SECONDS, FlashSealer
from foldgate.edge.console.fleet import reindex_sentence
from foldgate.edge.console.tokens import scope_servers
from foldgate.model.naming import display_name

SID = "0" * 32


def test_a_reindex_outcome_is_one_sentence_for_every_reindexer_result() -> None:
    done = {
        "reindex": "done", "version": "v1-ab", "changed": True, "tools": 42, "awaiting_approval": 1,
        "flagged": 1, "error": None, "recovered": None,
    }  # fmt: skip
    assert reindex_sentence({"state": "done", "elapsed": 1.5, "result": done}) == (
        "Reindex finished in 1.5 s: new catalog version v1-ab with 42 tools; "
        "1 tool awaits approval (1 flagged by the scan)."
    )
    same = {**done, "changed": False, "awaiting_approval": 0, "flagged": 0, "error": "tickets: timed out"}
    assert reindex_sentence({"state": "done", "elapsed": 0.2, "result": same}) == (
        "Reindex finished in 0.2 s: nothing changed (42 tools); 0 tools await approval. "
        "Some servers could not be listed: tickets: timed out."
    )
    failing = {**same, "error": None, "failed_servers": [
        {"server": "tickets", "error": "tickets: tools/list failed: 502", "kept_tools": 7,
         "serving": "its last good 7 tools keep serving"},
    ]}  # fmt: skip
    assert reindex_sentence({"state": "done", "elapsed": 0.2, "result": failing}) == (
        "Reindex finished in 0.2 s: nothing changed (42 tools); 0 tools await approval. "
        "tickets could not be listed (tickets: tools/list failed: 502): its last good 7 tools keep serving."
    )
    requested = reindex_sentence({"state": "done", "elapsed": 0.1, "result": {"reindex": "requested"}})
    assert requested.startswith("Reindex requested: the indexer runs it now")
    failed = {"state": "done", "elapsed": 0.1, "result": {"reindex": "failed", "error": "no upstream"}}
    assert reindex_sentence(failed) == "Reindex failed in 0.1 s: no upstream."
    assert reindex_sentence({"state": "failed", "detail": "TimeoutError"}) == "Reindex failed: TimeoutError."
    assert reindex_sentence({"state": "idle"}) == "No reindex started from this console."
    # Whatever a reindexer returns, the sentence never shows a dict.
    assert "{" not in reindex_sentence({"state": "done", "elapsed": 1, "result": {"odd": {"x": 1}}})


def test_a_changed_line_is_diffed_word_by_word_into_plain_segments() -> None:
    left, right = word_diff("Find contacts by name.", "Find contacts by <b>name</b> now.")
    assert [s["kind"] for s in left] == ["same", "removed"]
    assert "".join(s["text"] for s in left) == "Find contacts by name."
    assert "".join(s["text"] for s in right) == "Find contacts by <b>name</b> now."
    assert [s["text"] for s in right if s["kind"] == "added"] == ["<b>name</b> now."]
    [row] = side_by_side("a b c", "a B c")
    assert row["kind"] == "changed"
    assert [s["text"] for s in row["right_words"] if s["kind"] == "added"] == ["B"]


def test_a_line_too_long_to_diff_word_by_word_is_marked_whole() -> None:
    long = " ".join(["word"] * 5000)
    assert word_diff(long, long + " more") is None
    [row] = side_by_side(long, long + " more")
    assert "right_words" not in row


def test_keys_are_shown_as_server__tool_names() -> None:
    assert display_name("crm:find_contact") == "crm__find_contact"
    # Rewritten as the indexer would publish it (characters outside the client rules, too long).
    assert display_name("crm:find contact!") == "crm__find_contact"
    assert len(display_name("crm:" + "x" * 100)) == 64
    assert display_name("tok_123") == "tok_123"


def test_held_tools_are_grouped_by_server_with_their_pending_ones() -> None:
    held = [
        {"server": "tickets", "state": "pending"},
        {"server": "crm", "state": "changed"},
        {"server": "tickets", "state": "flagged"},
    ]
    groups = by_server(held)
    assert [(g["server"], len(g["tools"]), len(g["pending"])) for g in groups] == [
        ("crm", 1, 0),
        ("tickets", 2, 1),
    ]


def test_a_tokens_scope_is_picked_from_the_tenants_servers_only() -> None:
    known = ["crm", "tickets"]
    assert scope_servers({"scope__tickets": "1", "scope__crm": "1"}, known) == ("crm,tickets", None)
    assert scope_servers({"label": "x"}, known) == ("", None)
    servers, error = scope_servers({"scope__crm": "1", "scope__../etc": "1"}, known)
    assert servers == ""
    assert error is not None
    assert "../etc" in error


def test_a_flash_opens_once_for_its_session_only_and_not_after_it_expires() -> None:
    sealer = FlashSealer(b"operator-key-0123456789")
    value = sealer.seal(SID, {"token": "fgt_secret", "id": "0011223344556677"}, now=1000.0)
    assert "fgt_secret" not in value
    assert sealer.open(SID, value, now=1001.0) == {"token": "fgt_secret", "id": "0011223344556677"}
    assert sealer.open("1" * 32, value, now=1001.0) is None  # another session
    assert sealer.open(SID, value, now=1000.0 + FLASH_SECONDS) is None  # expired
    assert FlashSealer(b"another-operator-key-0123").open(SID, value, now=1001.0) is None  # rotated key
    tampered = value[:-2] + ("A" if value[-2] != "A" else "B") + value[-1]
    for bad in (tampered, "", "not base64 !", "x" * 5000, None):
        assert sealer.open(SID, bad, now=1001.0) is None
