"""Serving: the gateway (catalog, view and search caches; dispatch to surfaces), views, the shared call
path and result shapes. Protocol-free: the edge maps results and errors to the wire."""
