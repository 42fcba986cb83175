"""Enrichment in the search indexes: the hint and queries are BM25F fields of their own, appended to
the dense text, bound to the tool version they were made for; indexes serialised before these
fields (six weights) still load and rank as they were built."""

from __future__ import annotations

from foldgate.model.enrichment import Enrichment
from foldgate.model.tool import Tool
from foldgate.search import DEFAULT, SearchConfig, SearchIndex, build_search_index
from foldgate.search.dense import build_dense_index, dense_text
from foldgate.search.fields import Field, field_texts
from tests.unit.search.fakes import FakeEmbedder

TOOLS = [
    Tool("crm", "find_contact", "Look a person up by name or email."),
    Tool("crm", "create_contact", "Add a person to the address book."),
    Tool("tickets", "close_ticket", "Close a support ticket."),
]


def made_for(tool: Tool, hint: str = "Use to find who someone is.", *queries: str) -> Enrichment:
    return Enrichment(hint, queries or ("whois lookup",), tool.content_hash, "fixed:v1")


def test_hint_and_queries_fill_their_own_fields_only_for_the_version_they_were_made_for() -> None:
    tool = TOOLS[0]
    texts = field_texts(tool, made_for(tool, "Use it for a rolodex.", "who is bob", "find alice"))
    assert texts[Field.HINT] == "Use it for a rolodex."
    assert texts[Field.QUERIES] == "who is bob find alice"
    assert texts[Field.DESCRIPTION] == tool.description
    stale = Enrichment("Use it for a rolodex.", (), "another-version", "fixed:v1")
    assert Field.HINT not in field_texts(tool, stale)


def test_a_word_only_in_the_generated_queries_finds_the_tool_and_none_without_them() -> None:
    enrichments = {TOOLS[0].key: made_for(TOOLS[0], "Use for a lookup.", "rolodex entry for bob")}
    with_it = build_search_index(TOOLS, enrichments=enrichments)
    assert [h.key for h in with_it.search("rolodex", limit=3)] == ["crm:find_contact"]
    assert build_search_index(TOOLS).search("rolodex", limit=3) == []


def test_the_hint_field_is_searched_when_its_weight_is_set() -> None:
    enrichments = {TOOLS[0].key: made_for(TOOLS[0], "Use for a rolodex lookup.", "who is bob")}
    assert build_search_index(TOOLS, enrichments=enrichments).search("rolodex", limit=3) == []
    weights = list(DEFAULT.weights)
    weights[Field.HINT] = 1.0
    tuned = build_search_index(TOOLS, enrichments=enrichments, config=DEFAULT.replace(weights=tuple(weights)))
    assert [h.key for h in tuned.search("rolodex", limit=3)] == ["crm:find_contact"]


def test_the_default_weights_are_the_ones_measured_on_the_tuning_sets() -> None:
    # The local model's hint lost a golden query at every weight tried; its queries at 0.1 did not.
    assert DEFAULT.weights[Field.HINT] == 0.0
    assert DEFAULT.weights[Field.QUERIES] == 0.1


def test_an_index_serialised_with_six_field_weights_loads_with_the_new_fields_off() -> None:
    doc = build_search_index(TOOLS).to_doc()
    doc["config"]["weights"] = doc["config"]["weights"][:6]
    doc["config"]["b"] = doc["config"]["b"][:6]
    loaded = SearchIndex.from_doc(doc)
    assert loaded.config.weights[Field.HINT] == 0.0
    assert loaded.config.weights[Field.QUERIES] == 0.0
    assert loaded.config.weights[:6] == DEFAULT.weights[:6]
    assert [h.key for h in loaded.search("close ticket", limit=1)] == ["tickets:close_ticket"]
    assert SearchConfig.from_doc({"weights": [1, 1, 1, 1, 0, 0], "b": [0.5] * 6}).b[Field.QUERIES] == 0.75


def test_the_dense_text_carries_the_enrichment_and_a_new_enrichment_is_embedded_again() -> None:
    tool = TOOLS[0]
    first = made_for(tool, "Use for a rolodex lookup.")
    assert dense_text(tool, first).endswith(": Look a person up by name or email. Use for a rolodex lookup.")
    assert dense_text(tool, Enrichment("x", (), "another-version", "s")) == dense_text(tool)
    model = FakeEmbedder()
    plain = build_dense_index(model, TOOLS)
    assert plain is not None
    model.calls.clear()
    enriched = build_dense_index(model, TOOLS, plain.reusable_for(model), enrichments={tool.key: first})
    assert enriched is not None
    assert model.calls == [dense_text(tool, first)]  # only the enriched tool, the rest reused
    model.calls.clear()
    again = build_dense_index(model, TOOLS, enriched.reusable_for(model), enrichments={tool.key: first})
    assert again is not None
    assert model.calls == []
    redone = made_for(tool, "Use for a different hint.")
    build_dense_index(model, TOOLS, again.reusable_for(model), enrichments={tool.key: redone})
    assert model.calls == [dense_text(tool, redone)]
