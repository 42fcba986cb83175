"""Telemetry: what the activity log's events become outside the log (metrics), and traces."""
