"""The tool, prompt and resource pages' view-models: each prompt's approval state as the serving path
treats it (a changed one stays listed but is not fetched; a pending one is not listed), a disabled
server's entries shown as not served, the deferral rule named with its setting, and Try it's starting
arguments built from whatever shape an upstream's schema has."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from foldgate.config.tenant import parse_tenant_config
from foldgate.edge.console.offerings import prompts_view, resources_view
from foldgate.edge.console.tool_detail import TOOLS_PER_PAGE, deferral_reason, example_arguments, tools_view
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.offerings import publish_items
from foldgate.model.tool import Tool
from foldgate.serve.views import build_view


def catalog(withheld: dict[str, Any] | None = None) -> Any:
    items = [
        *publish_items("prompt", [("crm", {"name": "brief"}), ("crm", {"name": "changed_one"})]),
        *publish_items("resource", [("crm", {"uri": "mem://a"}), ("vault", {"uri": "mem://b"})]),
        *publish_items("template", [("vault", {"uriTemplate": "mem://{id}"})]),
    ]
    tools = [
        Tool("crm", f"t{i}", "d", {"type": "object"}, annotations={"readOnlyHint": True}) for i in range(3)
    ]
    return replace(catalog_from_tools("t", tools), offerings=tuple(items), withheld=withheld or {})


def config(**crm: Any) -> Any:
    servers = [{"name": "crm", "url": "http://127.0.0.1:9/crm", **crm},
               {"name": "vault", "url": "http://127.0.0.1:9/vault", "enabled": False}]  # fmt: skip
    return parse_tenant_config({"servers": servers, "defer_threshold": 2})


def test_prompt_states_follow_the_approval_hold() -> None:
    held = {
        "crm#prompt:changed_one": {"state": "changed", "server": "crm", "kind": "prompt", "hash": "h"},
        "crm#prompt:fresh": {"state": "pending", "server": "crm", "kind": "prompt", "hash": "h2",
                             "prompt": {"name": "fresh", "arguments": [{"name": "who", "required": True}]}},
    }  # fmt: skip
    rows = {r["upstream"]: r for r in prompts_view(build_view(catalog(held), config()))}
    assert rows["brief"]["state"] == "approved"
    assert rows["brief"]["served"] is True
    # Changed: agents still list the approved entry, and fetching it is refused until approved.
    assert rows["changed_one"]["served"] is True
    assert "fetching it is refused" in rows["changed_one"]["meaning"]
    # Pending: never published, so not listed, with the arguments the upstream declared.
    assert rows["fresh"]["published"] == ""
    assert rows["fresh"]["served"] is False
    assert rows["fresh"]["arguments"] == "who*"


def test_a_disabled_servers_resources_are_listed_as_not_served() -> None:
    model = resources_view(build_view(catalog(), config()))
    served = {(r["server"], r["upstream"]): r["served"] for r in model["resources"] + model["templates"]}
    assert served == {("crm", "mem://a"): True, ("vault", "mem://b"): False, ("vault", "mem://{id}"): False}


def test_the_deferral_reason_names_the_rule_and_its_setting() -> None:
    view = build_view(catalog(), config())
    tool = view.resolve("crm__t0")
    assert tool is not None
    assert deferral_reason(view, tool) == "its server has more than defer_threshold (2) tools"
    eager = build_view(catalog(), config(tool_loading="eager"))
    assert deferral_reason(eager, eager.resolve("crm__t0")) == "its server's tool_loading is eager"  # type: ignore[arg-type]
    assert [r["listed"] for r in tools_view(view, "crm")["rows"]] == ["deferred"] * 3


def test_the_tools_list_is_paged() -> None:
    tools = [Tool("crm", f"t{i:03d}", "d", {"type": "object"}) for i in range(TOOLS_PER_PAGE + 5)]
    view = build_view(catalog_from_tools("t", tools), config())
    second = tools_view(view, "", 2)
    assert (second["total"], second["page"], second["pages"]) == (TOOLS_PER_PAGE + 5, 2, 2)
    assert [r["id"] for r in second["rows"]] == [
        f"crm__t{i:03d}" for i in range(TOOLS_PER_PAGE, TOOLS_PER_PAGE + 5)
    ]
    assert tools_view(view, "", 99)["page"] == 2
    assert tools_view(view, "vault", 1)["rows"] == []


def test_try_its_starting_arguments_fill_the_required_params_and_survive_any_schema() -> None:
    schema = {"type": "object", "required": ["q", "n", "opts", 7], "properties": {
        "q": {"type": "string"}, "n": {"type": "integer"}, "opts": {"type": ["object", "null"]}}}  # fmt: skip
    tools = [Tool("crm", "a", "", schema), Tool("crm", "b", "", {"type": "object", "properties": [1],
                                                                   "required": "q"})]  # fmt: skip
    built = catalog_from_tools("t", tools)
    assert example_arguments(built.tools[0]) == '{\n  "q": "",\n  "n": 0,\n  "opts": "",\n  "7": ""\n}'
    assert example_arguments(built.tools[1]) == "{}"
