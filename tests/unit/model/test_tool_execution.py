"""A tool's 2025-11-25 ``execution`` (issue 28): only a known ``taskSupport`` survives a hostile listing,
it is listed with the tool (the gateway serves such calls as its own tasks), and it is no part of the
content hash (approved versions stand)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from foldgate.model.listing import deferred_entry, full_entry
from foldgate.model.tool import tool_from_wire

BASE = {"name": "export", "description": "Exports.", "inputSchema": {"type": "object"}}


@pytest.mark.parametrize(
    ("execution", "kept"),
    [
        ({"taskSupport": "optional"}, {"taskSupport": "optional"}),
        ({"taskSupport": "required", "evil": "x" * 1000}, {"taskSupport": "required"}),
        ({"taskSupport": "forbidden"}, {"taskSupport": "forbidden"}),
        ({"taskSupport": "always"}, None),
        ({"taskSupport": ["optional"]}, None),
        ("optional", None),
        (None, None),
    ],
)
def test_only_a_known_task_support_is_kept(execution: Any, kept: dict[str, Any] | None) -> None:
    tool = tool_from_wire("crm", {**BASE, "execution": execution})
    assert tool.execution == kept
    assert tool.declares_tasks is (kept is not None and kept["taskSupport"] != "forbidden")
    assert tool_from_wire("crm", tool.to_wire()).execution == kept  # survives the catalog round trip


def test_execution_is_listed_and_not_hashed() -> None:
    plain = tool_from_wire("crm", BASE)
    tasked = tool_from_wire("crm", {**BASE, "execution": {"taskSupport": "optional"}})
    assert tasked.content_hash == plain.content_hash
    assert full_entry(tasked, "crm__export")["execution"] == {"taskSupport": "optional"}
    assert deferred_entry(tasked, "crm__export")["execution"] == {"taskSupport": "optional"}
    assert "execution" not in json.dumps(full_entry(plain, "crm__export"))
