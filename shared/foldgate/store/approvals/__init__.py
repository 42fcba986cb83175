"""Approved tool versions: interface, SQLite and DynamoDB backends."""
