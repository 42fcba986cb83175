#!/bin/sh
# McpFunction's handler under the Lambda Web Adapter (StreamingMode: function-url): the adapter's
# wrapper (/opt/bootstrap) runs this, and forwards each invocation to the app it starts on port 8080.
PYTHONPATH="/opt/python:${LAMBDA_RUNTIME_DIR}:${PYTHONPATH}" exec python -m foldgate.app.mcp_stream
