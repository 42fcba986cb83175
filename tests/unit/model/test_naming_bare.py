"""``publish: bare`` naming: a bare server's tools keep their upstream names when nothing else claims
them, and fall back to ``server__tool`` with a reason naming the other claimant when something does."""

from __future__ import annotations

from foldgate.model.naming import RESERVED_NAMES, assign_names


def published(pairs: list[tuple[str, str]], bare: set[str]) -> dict[tuple[str, str], tuple[str, str | None]]:
    return {(n.server, n.tool): (n.published, n.renamed) for n in assign_names(pairs, bare=bare)}


def test_a_bare_servers_tools_keep_their_names_and_others_stay_prefixed() -> None:
    names = published([("conf", "test_simple_text"), ("git", "status")], {"conf"})
    assert names == {
        ("conf", "test_simple_text"): ("test_simple_text", None),
        ("git", "status"): ("git__status", None),
    }


def test_two_bare_servers_listing_one_name_both_fall_back_naming_each_other() -> None:
    names = published([("a", "search"), ("b", "search"), ("a", "only_a")], {"a", "b"})
    assert names[("a", "search")][0] == "a__search"
    assert names[("b", "search")][0] == "b__search"
    assert "bare server b" in str(names[("a", "search")][1])
    assert "bare server a" in str(names[("b", "search")][1])
    assert names[("a", "only_a")] == ("only_a", None)


def test_a_bare_name_equal_to_a_prefixed_name_falls_back_and_names_its_owner() -> None:
    names = published([("a", "git__status"), ("git", "status")], {"a"})
    assert names[("git", "status")] == ("git__status", None)
    bare_one = names[("a", "git__status")]
    assert bare_one[0] != "git__status"
    assert bare_one[0].startswith("a__git__status")
    assert "git:status" in str(bare_one[1])


def test_meta_tool_names_and_invalid_names_are_never_published_bare() -> None:
    pairs = [("a", name) for name in sorted(RESERVED_NAMES)] + [("a", "has space"), ("a", "x" * 65)]
    names = published(pairs, {"a"})
    for (_, tool), (name, reason) in names.items():
        assert name != tool, tool
        assert name.startswith("a__"), tool
        assert str(reason).startswith("bare name refused"), tool
    assert "foldgate's own" in str(names[("a", "read_cache")][1])


def test_without_bare_servers_names_are_unchanged() -> None:
    pairs = [("a", "x"), ("b", "x"), ("a", "bad name")]
    assert assign_names(pairs) == assign_names(pairs, bare=())
    assert [n.published for n in assign_names(pairs)] == ["a__x", "b__x", "a__bad_name"]
