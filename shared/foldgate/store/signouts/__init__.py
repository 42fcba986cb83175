"""Console sessions signed out before their expiry: interface, SQLite and DynamoDB backends."""
