"""A gateway task whose call runs as a task of its upstream (issue 28; the upstream side is
:mod:`foldgate.upstream.tasks`): the upstream's task id kept in the gateway's record, its status and
input requests mirrored there, and the client's ``tasks/update`` and ``tasks/cancel`` forwarded to it.

The record keeps the upstream's server and task id (never shown to the client: it sees the gateway's
task id only), so whichever instance holds the call follows the upstream task (the process that started
it, or the Lambda worker the call was handed to, which follows it instead of calling again), and any
instance answering the client forwards to it. While the upstream task waits for input, the record is
``input_required`` with the upstream's requests (checked and rebuilt); a ``tasks/update`` sends the
answers to pending requests upstream and removes them from the record, which goes back to ``working``
once none is left. A task is found only by its owner (another caller's is not found, as everywhere).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final, Protocol

from foldgate.errors import InvalidRequestError, StoreError, UpstreamError
from foldgate.model.caller import calling_as
from foldgate.model.catalog import IndexedTool
from foldgate.model.principal import Principal
from foldgate.store.tasks.base import TaskRecord, TaskStore
from foldgate.upstream.relay import MAX_ASK_BYTES
from foldgate.upstream.tasks import TaskLink, linked

if TYPE_CHECKING:
    from foldgate.serve.views import TenantView


class _Caller(Protocol):
    @property
    def upstream(self) -> object: ...


class Gateway(Protocol):
    """What forwarding to an upstream's task needs of the gateway (a protocol: the gateway module
    imports the task service, which imports this one)."""

    @property
    def caller(self) -> _Caller: ...

    def view(self, who: Principal) -> TenantView: ...


__all__ = ["UpstreamFollow", "answered_first", "followed_link", "forward_cancel", "task_link", "update_task"]

log = logging.getLogger(__name__)

WAITING: Final = "The call waits for the client's input (answer with tasks/update)."
RUNNING: Final = "The call is running."
# The answers one tasks/update may carry upstream, serialized.
MAX_ANSWER_BYTES: Final = MAX_ASK_BYTES

Call = Callable[[], Awaitable[dict[str, Any]]]


class UpstreamFollow:
    """Hears one call's upstream task (a :class:`foldgate.upstream.tasks.TaskListener`) and keeps it in
    the gateway's task record once there is one (the record may come only after the upstream's handle).

    ``gated``: a plain call waits in :meth:`plain` until :meth:`proceed` (the gateway first decides
    where it runs: a worker sends it itself, so nothing may be sent from here)."""

    def __init__(self, store: TaskStore, *, gated: bool = False, carries_input: bool = False) -> None:
        self.store = store
        # Whether the client can answer input requests (tasks/update): else they end the call.
        self.carries_input = carries_input
        self.record: TaskRecord | None = None
        self.server: str | None = None
        self.task_id: str | None = None
        self.started_event = asyncio.Event()
        self.plain_event = asyncio.Event()
        self._go = asyncio.Event()
        if not gated:
            self._go.set()
        self._latest: tuple[str, str | None, dict[str, Any] | None] | None = None

    def around(self, call: Call, link: TaskLink) -> Call:
        """``call`` run with ``link`` (this follow its listener)."""
        link.listener = self

        async def followed() -> dict[str, Any]:
            with linked(link):
                return await call()

        return followed

    def proceed(self) -> None:
        """Let a gated plain call go upstream."""
        self._go.set()

    async def plain(self) -> None:
        """The call goes upstream plain: said, then sent once the gateway lets it (see the class doc)."""
        self.plain_event.set()
        await self._go.wait()

    async def started(self, server: str, task_id: str) -> None:
        """The upstream answered a task: kept (in the record too, once there is one)."""
        self.server, self.task_id = server, task_id
        self.started_event.set()
        if self.record is not None:
            self.record = replace(self.record, upstream_server=server, upstream_task_id=task_id)
            await self._write(self.record)

    async def attach(self, record: TaskRecord) -> None:
        """The gateway's task this call now belongs to (the upstream's task, if any, is in it already:
        see :meth:`linked_record`); the status last heard before is written now."""
        self.record = record
        if self._latest is not None:
            await self.status(*self._latest)

    def linked_record(self, record: TaskRecord) -> TaskRecord:
        """``record`` naming the upstream's task, when the call runs as one."""
        if self.task_id is None:
            return record
        return replace(record, upstream_server=self.server, upstream_task_id=self.task_id)

    async def status(self, status: str, message: str | None, requests: dict[str, Any] | None) -> None:
        """The upstream task's status: mirrored in the record (``input_required`` with its requests)."""
        self._latest = (status, message, requests)
        record = self.record
        if record is None:
            return
        now = time.time()
        if status == "input_required" and requests:
            moved = record.waiting(now, json.dumps(requests, ensure_ascii=False), message or WAITING)
        else:
            moved = record.settled("working", now, message=message or RUNNING)
        self.record = moved
        await self._write(moved)

    async def _write(self, record: TaskRecord) -> None:
        try:
            await asyncio.to_thread(self.store.transition, record)
        except StoreError as exc:
            log.warning("task %s: cannot note its upstream task: %s", record.task_id[:6], exc.message)


async def answered_first(
    call: Call,
    follow: UpstreamFollow,
    create: Callable[[], TaskRecord | None],
    run: Callable[[TaskRecord, asyncio.Task[dict[str, Any]]], Awaitable[None]],
    attach: Callable[[TaskRecord], None],
) -> dict[str, Any] | TaskRecord:
    """A call whose upstream may run it as a task of its own (a 2026-07-28 client's call of a
    task-supporting tool): the upstream answers first. Its answer (a result, an ``input_required`` to
    relay) is the call's, returned as it is; a task handle of the upstream's makes the gateway's task
    (``create``, naming it), as does a plain call (the upstream takes no tasks) before it is sent; the
    call then runs as that task (``run``) and the new record is returned. ``attach`` tells the call's
    progress note its task. When no task can be kept, the call keeps its request."""
    work = asyncio.ensure_future(call())
    signals = {asyncio.ensure_future(e.wait()) for e in (follow.started_event, follow.plain_event)}
    try:
        await asyncio.wait({work, *signals}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        work.cancel()  # the request itself was abandoned: so is its call
        raise
    finally:
        for signal in signals:
            signal.cancel()
    if work.done():
        return work.result()
    record = create()
    if record is None:
        follow.proceed()
        return await work
    attach(record)
    await follow.attach(record)
    await run(record, work)  # in this process it lets a plain call go (follow.proceed); a worker's does not
    return record


def task_link(tool: IndexedTool, *, prefer: bool, refuse_required: bool) -> TaskLink:
    """The link of one call of ``tool`` (see :class:`foldgate.upstream.tasks.TaskLink`)."""
    support = (tool.tool.execution or {}).get("taskSupport")
    return TaskLink(support=support, prefer=prefer, refuse_required=refuse_required)


def followed_link(record: TaskRecord, store: TaskStore) -> tuple[TaskLink | None, UpstreamFollow | None]:
    """For a worker taking over ``record``: the link that follows its upstream task (None: it has none)."""
    if record.upstream_task_id is None:
        return None, None
    try:
        takes_input = bool(json.loads(record.call).get("takes_input"))
    except (ValueError, AttributeError):
        takes_input = False
    follow = UpstreamFollow(store, carries_input=takes_input)
    follow.server, follow.task_id = record.upstream_server, record.upstream_task_id
    follow.record = record
    return TaskLink(support=None, follow=record.upstream_task_id, listener=follow), follow


async def _forward(
    gateway: Gateway, principal: Principal, record: TaskRecord, method: str, params: dict[str, Any]
) -> None:
    """Send ``method`` to the record's upstream task, as the caller (its OAuth grant, its view)."""
    if record.upstream_server is None or record.upstream_task_id is None:
        return
    view = gateway.view(principal)
    server = view.config.server(record.upstream_server)
    send = getattr(gateway.caller.upstream, "task_request", None)
    if server is None or send is None:
        raise UpstreamError(f"{record.upstream_server}: the server left this caller's view")
    with calling_as(view.catalog.tenant, principal.upstream_subject):
        await send(server, method, record.upstream_task_id, params)


async def forward_cancel(gateway: Gateway, principal: Principal, record: TaskRecord) -> None:
    """Tell the upstream a cancelled task's own task is cancelled too (best effort: the gateway's task
    is cancelled already, and its follower stops reading the upstream's)."""
    try:
        await _forward(gateway, principal, record, "tasks/cancel", {})
    except Exception as exc:  # any failure of a courtesy call is logged, never the client's answer
        log.warning("task %s: cannot cancel its upstream task: %s", record.task_id[:6], type(exc).__name__)


async def update_task(
    gateway: Gateway, store: TaskStore, principal: Principal, record: TaskRecord, responses: Any
) -> None:
    """``tasks/update`` of the caller's ``record`` (found for its owner already): the answers to its
    pending input requests forwarded upstream, and removed from the record. Answers to nothing pending
    are ignored (the ack is the same); InvalidRequestError for responses that are no object of objects."""
    if not isinstance(responses, Mapping) or not all(isinstance(v, Mapping) for v in responses.values()):
        raise InvalidRequestError("inputResponses must be an object of responses")
    if record.status != "input_required" or record.input_requests is None:
        return
    pending: dict[str, Any] = json.loads(record.input_requests)
    answers = {k: dict(v) for k, v in responses.items() if k in pending}
    if not answers:
        return
    if len(json.dumps(answers, separators=(",", ":"))) > MAX_ANSWER_BYTES:
        raise InvalidRequestError(f"inputResponses is larger than {MAX_ANSWER_BYTES} bytes")
    await _forward(gateway, principal, record, "tasks/update", {"inputResponses": answers})
    left = {k: v for k, v in pending.items() if k not in answers}
    now = time.time()
    if left:
        moved = record.waiting(now, json.dumps(left, ensure_ascii=False), record.status_message)
    else:
        moved = record.settled("working", now, message=RUNNING)
    await asyncio.to_thread(store.transition, moved)
