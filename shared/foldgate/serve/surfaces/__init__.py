"""The MCP surfaces: one module each (its tool definitions, argument parsers and handlers), built
into one table (:mod:`.registry`) that the gateway dispatches on."""
