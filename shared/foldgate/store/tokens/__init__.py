"""Agent tokens: interface, SQLite and DynamoDB backends."""
