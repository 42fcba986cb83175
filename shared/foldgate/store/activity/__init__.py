"""The activity log: call and operator events, newest first per tenant, kept for a retention period."""
