"""Index-time processing of upstream tool listings: what is checked before a tool is published."""
