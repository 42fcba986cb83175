"""Published prompts, resources and templates: namespaced identities, unchanged content otherwise,
keys that can never equal a tool's, and a content hash that moves exactly with the listed entry."""

from __future__ import annotations

from foldgate.model.catalog import CatalogVersion
from foldgate.model.offerings import IndexedItem, publish_items
from foldgate.model.uris import origin_uri


def test_prompts_of_two_servers_never_collide() -> None:
    items = publish_items(
        "prompt", [("a", {"name": "greet"}), ("b", {"name": "greet"}), ("a", {"name": "greet"})]
    )
    assert [i.published for i in items] == ["a__greet", "b__greet"]  # the duplicate keeps its first
    assert items[0].to_wire() == {"name": "a__greet"}


def test_prompt_names_follow_the_tool_naming_rules() -> None:
    items = publish_items("prompt", [("a", {"name": "weird name/é" + "x" * 80, "description": "d"})])
    assert len(items[0].published) <= 64
    assert items[0].published.startswith("a__")
    assert items[0].upstream_id.startswith("weird name/é")
    assert items[0].to_wire()["description"] == "d"


def test_resources_and_templates_are_published_under_their_server() -> None:
    resources = publish_items(
        "resource", [("a", {"uri": "file:///x", "name": "x"}), ("b", {"uri": "file:///x", "name": "x"})]
    )
    assert [origin_uri(r.published) for r in resources] == [("a", "file:///x"), ("b", "file:///x")]
    templates = publish_items("template", [("a", {"uriTemplate": "t://{id}", "name": "t"})])
    assert templates[0].to_wire()["uriTemplate"] == "foldgate://a/t%3A%2F%2F{id}"


def test_prompt_keys_are_never_tool_keys() -> None:
    item = publish_items("prompt", [("a", {"name": "x"})])[0]
    assert item.key == "a#prompt:x"
    assert item.key.split(":", 1)[0] == "a#prompt"  # '#' is outside the server-name alphabet


def test_hash_follows_the_entry() -> None:
    one = IndexedItem("prompt", "a", "a__x", {"name": "x", "description": "one"})
    two = IndexedItem("prompt", "a", "a__x", {"name": "x", "description": "two"})
    assert one.content_hash != two.content_hash
    assert (
        one.content_hash
        == IndexedItem("prompt", "a", "other", {"description": "one", "name": "x"}).content_hash
    )


def test_catalog_stores_and_fingerprints_offerings() -> None:
    items = tuple(publish_items("resource", [("a", {"uri": "u://1", "name": "one"})]))
    bare = CatalogVersion("t", "v1", 0.0, ())
    with_items = CatalogVersion("t", "v1", 0.0, (), offerings=items)
    assert bare.fingerprint != with_items.fingerprint
    again = CatalogVersion.from_doc(with_items.to_doc())
    assert again.offerings == items
    assert again.fingerprint == with_items.fingerprint
    assert CatalogVersion.from_doc(bare.to_doc()).fingerprint == bare.fingerprint
