"""foldgate: a serverless MCP gateway that lists every tool and defers schemas until they are needed."""

__version__ = "0.1.0"
