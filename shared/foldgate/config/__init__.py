"""Configuration: the tenant schema, process settings and the sources tenants are read from."""
