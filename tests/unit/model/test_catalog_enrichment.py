"""A catalog version stores each tool's enrichment; documents written before enrichment still load."""

from __future__ import annotations

from dataclasses import replace

from foldgate.index.indexer import catalog_from_tools
from foldgate.model.catalog import CatalogVersion, IndexedTool
from foldgate.model.enrichment import Enrichment
from foldgate.model.tool import Tool


def catalog() -> CatalogVersion:
    return catalog_from_tools("t", [Tool("crm", "find_customer", "Find a customer.")], now=1.0)


def test_an_enrichment_round_trips_through_the_stored_document() -> None:
    base = catalog()
    tool = base.tools[0]
    made = Enrichment("Use to look a customer up.", ("find bob",), tool.tool.content_hash, "x:y")
    doc = replace(base, tools=(replace(tool, enrichment=made),)).to_doc()
    assert CatalogVersion.from_doc(doc).tools[0].enrichment == made


def test_a_document_written_before_enrichment_loads_without_one() -> None:
    doc = catalog().tools[0].to_doc()
    assert "enrichment" not in doc  # an un-enriched tool's document is what it always was
    assert IndexedTool.from_doc(doc).enrichment is None
    doc["enrichment"] = {"hint": "no hash"}  # malformed: treated as absent, never a failed load
    assert IndexedTool.from_doc(doc).enrichment is None


def test_enrichment_changes_the_fingerprint_only_when_present() -> None:
    base = catalog()
    tool = base.tools[0]
    made = Enrichment("Use to look a customer up.", (), tool.tool.content_hash, "x:y")
    enriched = replace(base, tools=(replace(tool, enrichment=made),))
    assert enriched.fingerprint != base.fingerprint
    assert replace(base, version="other").fingerprint == base.fingerprint


def test_an_enrichment_made_for_another_version_of_the_tool_is_not_stored() -> None:
    tool = Tool("crm", "find_customer", "Find a customer.")
    stale = Enrichment("old hint", (), "not-this-hash", "x:y")
    built = catalog_from_tools("t", [tool], enrichments={tool.key: stale})
    assert built.tools[0].enrichment is None
