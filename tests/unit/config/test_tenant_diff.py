"""The diff `foldgate tenant diff` prints: a unified diff of canonical YAML (key order never shows),
with every literal header and stdio env value hidden, marked changed when it changes."""

from __future__ import annotations

from foldgate.config.diff import document_diff


def test_equal_documents_in_another_key_order_give_no_diff() -> None:
    old = {"tools_limit": 5, "servers": [{"name": "a", "url": "https://a"}]}
    new = {"servers": [{"url": "https://a", "name": "a"}], "tools_limit": 5}
    assert document_diff(old, new, "old", "new") == []


def test_header_and_env_values_are_hidden_and_said_changed_when_they_change() -> None:
    old = {
        "servers": [
            {"name": "a", "url": "https://a", "headers": {"X-Key": "old-canary", "X-Same": "same-canary"}}
        ]
    }
    new = {
        "servers": [
            {"name": "a", "url": "https://a", "headers": {"X-Key": "new-canary", "X-Same": "same-canary"}},
            {"name": "t", "transport": "stdio", "command": ["t"], "env": {"TOKEN": "env-canary"}},
        ]
    }
    text = "".join(document_diff(old, new, "old", "new"))
    assert "canary" not in text
    assert "-    X-Key: <hidden>\n" in text
    assert "+    X-Key: <hidden, changed>\n" in text
    assert "     X-Same: <hidden>\n" in text  # unchanged: a context line
    assert "+    TOKEN: <hidden>\n" in text


def test_a_changed_header_value_alone_is_a_difference() -> None:
    old = {"servers": [{"name": "a", "url": "https://a", "headers": {"X-Key": "one"}}]}
    new = {"servers": [{"name": "a", "url": "https://a", "headers": {"X-Key": "two"}}]}
    assert document_diff(old, new, "old", "new") != []


def test_nothing_stored_is_all_additions() -> None:
    lines = document_diff(None, {"tools_limit": 5}, "stored (none)", "file")
    assert lines[:2] == ["--- stored (none)\n", "+++ file\n"]
    assert "+tools_limit: 5\n" in lines
