"""Durable MCP tasks (issue 28): interface, SQLite and DynamoDB backends."""
