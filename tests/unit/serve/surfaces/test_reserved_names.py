"""Every meta-tool a surface lists is a reserved name: a bare upstream tool can never take one (it
would shadow the meta-tool, or be shadowed by it, on the surfaces that list both). A meta-tool added
to a surface without reserving its name fails here."""

from __future__ import annotations

from foldgate.model.naming import RESERVED_NAMES
from foldgate.serve.surfaces.call import META_TOOLS
from foldgate.serve.surfaces.code import CODE_TOOL_NAME
from foldgate.serve.surfaces.describe import DESCRIBE_TOOL_NAME


def test_every_surfaces_meta_tools_are_reserved() -> None:
    meta = {*META_TOOLS, CODE_TOOL_NAME, DESCRIBE_TOOL_NAME}
    assert meta <= RESERVED_NAMES, sorted(meta - RESERVED_NAMES)
