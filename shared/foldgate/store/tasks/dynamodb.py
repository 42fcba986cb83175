"""Durable tasks on the DynamoDB table (the cloud), with TTL.

Items: ``TASK#{id}`` / ``TASK`` holds the record (result, error and call payload zlib-compressed; a
task item stays under DynamoDB's 400 KB because results are cut to ``tool_response_limit`` first and a
call too big to keep never becomes a task), and ``TASKS#{sha256(owner)}`` / ``{created}#{id}`` indexes
an owner's tasks for ``tasks/list``. Both carry the TTL attribute ``expires_at``; reads ignore expired
items before DynamoDB deletes them. Writes after creation are conditional on the stored status not
being terminal (the first terminal write wins). The MCP and worker functions may only write items whose
key starts with ``TASK`` (template.yaml).
"""

from __future__ import annotations

import hashlib
import time
import zlib
from typing import Any

from foldgate.errors import StoreError
from foldgate.store.connections import aws_errors, dynamodb_client
from foldgate.store.tasks.base import TaskRecord, TaskStore

__all__ = ["DynamoTaskStore"]

_SK = {"S": "TASK"}
_NOT_TERMINAL = "attribute_exists(pk) AND NOT (#status IN (:completed, :failed, :cancelled))"
_TERMINAL_VALUES = {
    ":completed": {"S": "completed"},
    ":failed": {"S": "failed"},
    ":cancelled": {"S": "cancelled"},
}
_BLOBS = ("result", "error", "call", "input_requests")
# Plain string attributes that may be absent: item attribute name -> record field.
_STRINGS = {"message": "status_message", "up_server": "upstream_server", "up_task": "upstream_task_id"}


def _owner_key(owner: str) -> dict[str, str]:
    return {"S": "TASKS#" + hashlib.sha256(owner.encode("utf-8")).hexdigest()}


def _blob(text: str) -> dict[str, bytes]:
    return {"B": zlib.compress(text.encode("utf-8"), 6)}


def _text(attr: dict[str, Any] | None) -> str | None:
    if attr is None:
        return None
    try:
        return zlib.decompress(bytes(attr["B"])).decode("utf-8")
    except (zlib.error, UnicodeDecodeError, KeyError) as exc:
        raise StoreError(f"a stored task is corrupt: {exc}") from exc


def _item(r: TaskRecord) -> dict[str, Any]:
    item: dict[str, Any] = {
        "pk": {"S": f"TASK#{r.task_id}"},
        "sk": _SK,
        "owner": {"S": r.owner},
        "tenant": {"S": r.tenant},
        "tool": {"S": r.tool},
        "status": {"S": r.status},
        "created_at": {"N": repr(r.created_at)},
        "updated_at": {"N": repr(r.updated_at)},
        "expires_at": {"N": str(int(r.expires_at))},
        "poll_ms": {"N": str(r.poll_interval_ms)},
        "call": _blob(r.call),
    }
    for attr, name in _STRINGS.items():
        if getattr(r, name) is not None:
            item[attr] = {"S": getattr(r, name)}
    for name in ("result", "error", "input_requests"):
        value = getattr(r, name)
        if value is not None:
            item[name] = _blob(value)
    return item


def _record(item: dict[str, Any]) -> TaskRecord:
    return TaskRecord(
        task_id=item["pk"]["S"].removeprefix("TASK#"),
        owner=item["owner"]["S"],
        tenant=item["tenant"]["S"],
        tool=item["tool"]["S"],
        status=item["status"]["S"],
        created_at=float(item["created_at"]["N"]),
        updated_at=float(item["updated_at"]["N"]),
        expires_at=float(item["expires_at"]["N"]),
        poll_interval_ms=int(item["poll_ms"]["N"]),
        status_message=item["message"]["S"] if "message" in item else None,
        result=_text(item.get("result")),
        error=_text(item.get("error")),
        call=_text(item.get("call")) or "",
        upstream_server=item["up_server"]["S"] if "up_server" in item else None,
        upstream_task_id=item["up_task"]["S"] if "up_task" in item else None,
        input_requests=_text(item.get("input_requests")),
    )


def _code(exc: Exception) -> str:
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


class DynamoTaskStore(TaskStore):
    """Tasks on the catalog table; ``client`` is a low-level dynamodb client (lazily made)."""

    def __init__(self, table_name: str, *, client: Any | None = None) -> None:
        self.table_name = table_name
        self.client = client if client is not None else dynamodb_client()
        self._errors = aws_errors()

    def create(self, record: TaskRecord) -> None:
        """The owner's index entry, then the task (conditional: an id is never reused)."""
        index = {
            "pk": _owner_key(record.owner),
            "sk": {"S": f"{record.created_at:017.6f}#{record.task_id}"},
            "task_id": {"S": record.task_id},
            "expires_at": {"N": str(int(record.expires_at))},
        }
        try:
            self.client.put_item(TableName=self.table_name, Item=index)
            self.client.put_item(
                TableName=self.table_name, Item=_item(record), ConditionExpression="attribute_not_exists(pk)"
            )
        except self._errors as exc:
            raise StoreError(f"cannot create a task: {exc}") from exc

    def get(self, task_id: str) -> TaskRecord | None:
        """A strongly consistent read: a task is visible everywhere once created."""
        try:
            resp = self.client.get_item(
                TableName=self.table_name,
                Key={"pk": {"S": f"TASK#{task_id}"}, "sk": _SK},
                ConsistentRead=True,
            )
        except self._errors as exc:
            raise StoreError(f"cannot read a task: {exc}") from exc
        item = resp.get("Item")
        if item is None or float(item["expires_at"]["N"]) < time.time():
            return None
        return _record(item)

    def transition(self, record: TaskRecord) -> bool:
        """One UpdateItem guarded by the stored status."""
        names = {"#status": "status", "#u": "updated_at", "#p": "poll_ms"}
        values: dict[str, Any] = {
            **_TERMINAL_VALUES,
            ":status": {"S": record.status},
            ":u": {"N": repr(record.updated_at)},
            ":p": {"N": str(record.poll_interval_ms)},
        }
        sets = ["#status = :status", "#u = :u", "#p = :p"]
        removes: list[str] = []
        fields: dict[str, dict[str, Any] | None] = {
            **{
                attr: None if getattr(record, name) is None else {"S": getattr(record, name)}
                for attr, name in _STRINGS.items()
            },
            **{
                name: None if getattr(record, name) is None else _blob(getattr(record, name))
                for name in _BLOBS
            },
        }
        for name, value in fields.items():
            names[f"#{name}"] = name
            if value is None:
                removes.append(f"#{name}")
            else:
                values[f":{name}"] = value
                sets.append(f"#{name} = :{name}")
        expression = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={"pk": {"S": f"TASK#{record.task_id}"}, "sk": _SK},
                UpdateExpression=expression,
                ConditionExpression=_NOT_TERMINAL,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except self._errors as exc:
            if _code(exc) == "ConditionalCheckFailedException":
                return False
            raise StoreError(f"cannot update a task: {exc}") from exc
        return True

    def list(
        self, owner: str, *, limit: int, after: str | None = None
    ) -> tuple[list[TaskRecord], str | None]:
        """The owner's index, newest first, then the tasks themselves (one batch read)."""
        now = time.time()
        query: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": _owner_key(owner)},
            "ScanIndexForward": False,
            "ConsistentRead": True,
        }
        if after is not None:
            query["ExclusiveStartKey"] = {"pk": _owner_key(owner), "sk": {"S": after}}
        entries: list[dict[str, Any]] = []
        try:
            while len(entries) <= limit:
                resp = self.client.query(**query, Limit=limit + 1 - len(entries))
                entries += [e for e in resp.get("Items", []) if float(e["expires_at"]["N"]) >= now]
                if "LastEvaluatedKey" not in resp:
                    break
                query["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
            page = entries[:limit]
            found: dict[str, TaskRecord] = {}
            keys = [{"pk": {"S": f"TASK#{e['task_id']['S']}"}, "sk": _SK} for e in page]
            while keys:
                resp = self.client.batch_get_item(
                    RequestItems={self.table_name: {"Keys": keys[:100], "ConsistentRead": True}}
                )
                for item in resp.get("Responses", {}).get(self.table_name, []):
                    record = _record(item)
                    found[record.task_id] = record
                unprocessed = resp.get("UnprocessedKeys", {}).get(self.table_name, {}).get("Keys", [])
                keys = keys[100:] + unprocessed
        except self._errors as exc:
            raise StoreError(f"cannot list tasks: {exc}") from exc
        records = [
            found[e["task_id"]["S"]]
            for e in page
            if e["task_id"]["S"] in found
            and found[e["task_id"]["S"]].owner == owner
            and found[e["task_id"]["S"]].expires_at >= now
        ]
        return records, (page[-1]["sk"]["S"] if len(entries) > limit else None)
