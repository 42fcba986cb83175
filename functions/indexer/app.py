"""IndexerFunction: schedule, Parameter Store change and direct invokes, indexed into DynamoDB.

Everything is built once per Lambda instance; each invocation runs one index job.
"""

from foldgate.app.indexer_lambda import build_indexer_handler

handler = build_indexer_handler()
