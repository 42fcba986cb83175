"""Shared request-quota buckets (leased by every serving instance): interface, SQLite and DynamoDB."""
