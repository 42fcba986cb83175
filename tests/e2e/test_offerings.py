"""End to end: server-everything's prompts, resources and resource templates list, read, get and
complete through `foldgate serve` (/mcp/all) with the official Python client, in both protocol eras;
every identity is namespaced and maps back to the right upstream."""

from __future__ import annotations

import re

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from foldgate.model.uris import origin_template, origin_uri

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_resources_list_and_read_through_the_gateway(demo_gateway: str, mode: str) -> None:
    async with Client(demo_gateway, mode=mode) as client:
        caps = client.server_capabilities
        assert caps.resources is not None
        assert caps.prompts is not None
        assert caps.completions is not None
        resources = (await client.list_resources()).resources
        assert resources, "server-everything lists resources"
        assert all(origin_uri(str(r.uri)) is not None for r in resources)
        first = resources[0]
        server, _upstream_uri = origin_uri(str(first.uri)) or ("", "")
        assert server == "everything"
        read = await client.read_resource(str(first.uri))
        assert read.contents
        assert str(read.contents[0].uri) == str(first.uri)

        templates = (await client.list_resource_templates()).resource_templates
        assert templates
        assert all(origin_template(t.uri_template) is not None for t in templates)
        template = templates[0].uri_template
        expanded = re.sub(r"\{[^{}]*\}", "1", template, count=1)
        read = await client.read_resource(expanded)
        assert read.contents
        # The content's URI is the upstream's expansion, published again under the same server.
        assert origin_uri(str(read.contents[0].uri)) == origin_uri(expanded)

        with pytest.raises(MCPError) as unknown:
            await client.read_resource("foldgate://nosuch/x")
        # Resource-not-found: -32002 up to 2025-11-25; -32602 from 2026-07-28 (SEP-2164), which auto
        # negotiates with this gateway. Either way data.uri is the URI the client sent.
        assert unknown.value.code == (-32002 if mode == "legacy" else -32602)
        assert unknown.value.data == {"uri": "foldgate://nosuch/x"}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_prompts_list_get_and_complete_through_the_gateway(demo_gateway: str, mode: str) -> None:
    async with Client(demo_gateway, mode=mode) as client:
        prompts = (await client.list_prompts()).prompts
        assert prompts
        assert all(p.name.startswith("everything__") for p in prompts)
        simple = next(p for p in prompts if not any(a.required for a in p.arguments or []))
        got = await client.get_prompt(simple.name)
        assert got.messages

        with_args = next(p for p in prompts if p.arguments)
        args = {a.name: "x" for a in with_args.arguments or []}
        assert (await client.get_prompt(with_args.name, args)).messages
        # completable-prompt completes its department argument upstream (the context narrows "name").
        ref = types.PromptReference(type="ref/prompt", name="everything__completable-prompt")
        done = await client.complete(ref, {"name": "department", "value": "S"})
        assert done.completion.values == ["Sales", "Support"]
        done = await client.complete(ref, {"name": "name", "value": ""}, {"department": "Sales"})
        assert done.completion.values == ["David", "Eve", "Frank"]
        nothing = types.PromptReference(type="ref/prompt", name="nosuch__prompt")
        assert (await client.complete(nothing, {"name": "x", "value": ""})).completion.values == []

        with pytest.raises(MCPError) as unknown:
            await client.get_prompt("nosuch__prompt")
        assert unknown.value.code == -32602
        if mode == "legacy":
            with pytest.warns(Warning, match="deprecated"):  # the SDK warns: logging is gone from 2026-07-28
                await client.set_logging_level("info")  # accepted, nothing to remember
