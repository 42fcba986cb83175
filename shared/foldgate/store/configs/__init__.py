"""Tenant config documents and the tenant registry (the ``table`` config source's storage)."""
