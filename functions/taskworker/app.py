"""TaskWorkerFunction: runs one durable task's upstream call (started by McpFunction's Event invoke)
and stores its outcome; see foldgate.app.taskworker_lambda."""

from foldgate.app.taskworker_lambda import build_worker_handler

handler = build_worker_handler()
