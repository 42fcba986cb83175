"""IndexScheduleFunction: the schedules list the tenants and enqueue one index message per tenant.

Everything is built once per Lambda instance; each invocation fans out one schedule.
"""

from foldgate.app.schedule_lambda import build_schedule_handler

handler = build_schedule_handler()
