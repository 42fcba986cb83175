"""The indexer's enrichment pass: which tools a provider enriches this run, and what it cost.

Per run, over the tools a catalog version is about to publish:

- a tool whose content hash already has an enrichment in the previous version (made by the same
  provider and model) reuses it: an unchanged tool is never sent to the provider again;
- a held tool (pending, changed, flagged or rejected content, see foldgate.index.holds) is never sent:
  content nobody approved is not shown to a model, and a poisoned description is not paraphrased into
  the index;
- the rest are enriched, ``caps.concurrency`` at a time, with their near-duplicates in view
  (:mod:`foldgate.enrich.neighbours`), until a per-run cap (provider calls, tokens, wall time) is
  reached; what is left keeps its previous enrichment, if any, and is done by a later run, which
  starts from what this one stored (a large catalog is enriched over several Lambda runs);
- a provider failure or a rejected answer leaves that tool un-enriched; the run succeeds.

Tools without any enrichment go first, then tools whose enrichment came from another provider or
model (kept and served until redone).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from foldgate.enrich.base import (
    CAP_REACHED,
    EnrichmentError,
    EnrichmentProvider,
    EnrichmentRequest,
    EnrichmentUsage,
    Neighbour,
    RawEnrichment,
)
from foldgate.enrich.neighbours import find_neighbours
from foldgate.enrich.validate import validate
from foldgate.model.catalog import CatalogVersion
from foldgate.model.deadline import time_left
from foldgate.model.enrichment import Enrichment
from foldgate.model.tool import Tool

__all__ = ["EnrichmentCaps", "EnrichmentPass", "EnrichmentRunReport", "Validator", "request_for"]

log = logging.getLogger(__name__)


class Validator(Protocol):
    """Turns a provider's raw answer into what is stored, or raises EnrichmentError
    (:func:`foldgate.enrich.validate.validate`)."""

    def __call__(self, raw: RawEnrichment, request: EnrichmentRequest, *, source: str) -> Enrichment: ...


# What of a tool a prompt sees: bounded, whatever the upstream lists.
_MAX_DESCRIPTION = 2000
_MAX_PARAMS = 20
_MAX_PARAM_TEXT = 120
_MAX_ERRORS = 5
# Of the time an invocation has left (the index job's deadline), the share enrichment may use: the rest
# is for embedding the new text and publishing the version.
_DEADLINE_SHARE = 0.6


@dataclass(frozen=True, slots=True)
class EnrichmentCaps:
    """Per-run limits: a run stops starting provider calls at the first one reached."""

    max_tools: int = 500  # provider calls per run
    # Tokens in + out per run (calls in flight may finish past it); None: the provider's own cap only.
    max_tokens: int | None = None
    # Wall time of the pass (and at most 60% of what the index job's deadline leaves); calls still
    # running then are cut off and retried by a later run.
    max_seconds: float = 600.0
    concurrency: int = 4  # provider calls at once


@dataclass
class EnrichmentRunReport:
    """What one pass did and spent: logged per run and carried in the index report."""

    source: str
    tools: int = 0  # tools in the catalog
    reused: int = 0  # enrichment carried over unchanged (same content hash and source)
    enriched: int = 0  # new enrichments stored this run
    failed: int = 0  # provider failures and rejected answers (the tool stays un-enriched)
    held: int = 0  # held tools never sent to the provider
    deferred: int = 0  # left for a later run: a cap was reached
    capped: str | None = None  # the cap that stopped the run ("tools", "tokens", "seconds", "provider")
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)

    @property
    def calls(self) -> int:
        """Provider calls made this run (answered, failed or rejected)."""
        return self.enriched + self.failed

    @property
    def seconds_per_100(self) -> float:
        """Wall time of the pass per 100 provider calls (the issue's budget figure)."""
        return round(self.seconds / self.calls * 100, 2) if self.calls else 0.0

    def to_doc(self) -> dict[str, Any]:
        """A JSON-able summary for the index report and the logs."""
        return {
            "source": self.source,
            "tools": self.tools,
            "reused": self.reused,
            "enriched": self.enriched,
            "failed": self.failed,
            "held": self.held,
            "deferred": self.deferred,
            "capped": self.capped,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "seconds": round(self.seconds, 3),
            "seconds_per_100_tools": self.seconds_per_100,
            "errors": list(self.errors),
        }


def _params(schema: Any) -> tuple[str, ...]:
    """Top-level parameter names, each with the start of its description (hostile schemas: bounded)."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return ()
    out: list[str] = []
    for name, sub in list(props.items())[:_MAX_PARAMS]:
        desc = sub.get("description") if isinstance(sub, dict) else None
        text = f"{name}: {desc}" if isinstance(desc, str) and desc else str(name)
        out.append(" ".join(text.split())[:_MAX_PARAM_TEXT])
    return tuple(out)


def request_for(tool: Tool, neighbours: tuple[Neighbour, ...] = ()) -> EnrichmentRequest:
    """The bounded request a provider gets for one tool."""
    return EnrichmentRequest(
        key=tool.key,
        content_hash=tool.content_hash,
        name=tool.name[:200],
        server=tool.server[:200],
        title=(tool.title or "")[:200],
        description=tool.description[:_MAX_DESCRIPTION],
        params=_params(tool.input_schema),
        neighbours=neighbours,
    )


class EnrichmentPass:
    """Runs a provider over a catalog within caps (see the module docstring)."""

    def __init__(
        self,
        provider: EnrichmentProvider,
        caps: EnrichmentCaps | None = None,
        *,
        validator: Validator = validate,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.provider = provider
        self.caps = caps or EnrichmentCaps()
        self.validator = validator
        self.clock = clock

    def _reusable(
        self, previous: CatalogVersion | None, cached: Mapping[str, Enrichment]
    ) -> tuple[dict[str, Enrichment], dict[str, Enrichment]]:
        """(by content hash: made by this provider, by content hash: made by another one)."""
        same: dict[str, Enrichment] = {}
        other: dict[str, Enrichment] = {}
        stored = [(t.tool.content_hash, t.enrichment) for t in previous.tools] if previous else []
        for digest, e in [*stored, *cached.items()]:
            if e is not None and e.content_hash == digest:
                (same if e.source == self.provider.source else other).setdefault(digest, e)
        return same, other

    async def run(
        self,
        tools: Sequence[Tool],
        previous: CatalogVersion | None,
        *,
        held: Collection[str] = (),
        cached: Mapping[str, Enrichment] | None = None,
    ) -> tuple[dict[str, Enrichment], EnrichmentRunReport]:
        """Enrichment per canonical key for ``tools`` (absent: none), and the run's report.

        ``held`` names the keys whose listed content awaits an operator; they are never sent to the
        provider (the last approved content a changed tool still shows keeps an enrichment made for it).
        ``cached`` (content hash → enrichment, e.g. a bench's cache file) is reused like the previous
        version's.
        """
        started = self.clock()
        # Caps are per run: a warm Lambda's provider must not carry the last run's spending over.
        self.provider.usage = EnrichmentUsage()
        report = EnrichmentRunReport(self.provider.source, tools=len(tools))
        same, other = self._reusable(previous, cached or {})
        out: dict[str, Enrichment] = {}
        missing: list[Tool] = []
        stale: list[Tool] = []
        seen: set[str] = set()
        for tool in tools:
            if tool.key in seen:
                continue
            seen.add(tool.key)
            digest = tool.content_hash
            if digest in same:
                out[tool.key] = same[digest]
                report.reused += 1
            elif tool.key in held:
                report.held += 1
                if digest in other:
                    out[tool.key] = other[digest]
            elif digest in other:
                out[tool.key] = other[digest]  # served until this provider redoes it
                stale.append(tool)
            else:
                missing.append(tool)
        todo = missing + stale
        if todo:
            await self._enrich(tools, todo, out, report, started)
        report.seconds = self.clock() - started
        log.info("enrichment pass: %s", report.to_doc())
        return out, report

    async def _enrich(
        self,
        tools: Sequence[Tool],
        todo: list[Tool],
        out: dict[str, Enrichment],
        report: EnrichmentRunReport,
        started: float,
    ) -> None:
        caps = self.caps
        neighbours = find_neighbours(tools, only={t.key for t in todo[: caps.max_tools]})
        pending = deque(todo)
        usage = self.provider.usage
        base_in, base_out = usage.tokens_in, usage.tokens_out
        spent = [0, 0]  # tokens in, out from the answers (a provider may not account usage itself)
        deadline = started + caps.max_seconds
        left = time_left()
        if left is not None:
            deadline = min(deadline, started + left * _DEADLINE_SHARE)
        running = [0]  # calls in flight, counted against the tool cap
        stopped: list[str] = []  # the provider's own cap (e.g. Bedrock's cost cap) was reached

        def tokens() -> tuple[int, int]:
            return (
                max(spent[0], usage.tokens_in - base_in),
                max(spent[1], usage.tokens_out - base_out),
            )

        def cap_reached() -> str | None:
            if stopped:
                return stopped[0]
            if report.calls + running[0] >= caps.max_tools:
                return "tools"
            if caps.max_tokens is not None and sum(tokens()) >= caps.max_tokens:
                return "tokens"
            if self.clock() >= deadline:
                return "seconds"
            return None

        def failed(tool: Tool, message: str) -> None:
            report.failed += 1
            if len(report.errors) < _MAX_ERRORS:
                report.errors.append(f"{tool.key}: {message}"[:300])

        async def worker() -> None:
            while pending:
                reason = cap_reached()
                if reason is not None:
                    report.capped = report.capped or reason
                    return
                tool = pending.popleft()
                request = request_for(tool, neighbours.get(tool.key, ()))
                running[0] += 1
                try:
                    raw = await asyncio.wait_for(
                        self.provider.enrich(request), timeout=max(0.001, deadline - self.clock())
                    )
                except TimeoutError:
                    report.capped = report.capped or "seconds"
                    report.deferred += 1  # cut off by the run's wall-time cap: a later run retries it
                    continue
                except EnrichmentError as exc:
                    if exc.code == CAP_REACHED:
                        # Not the tool's failure: the run's budget is spent, a later run does the rest.
                        stopped.append("provider")
                        pending.appendleft(tool)
                        continue
                    failed(tool, exc.message)
                    continue
                except Exception as exc:  # a provider bug must not fail the index run either
                    log.exception("enrichment provider %s raised", self.provider.source)
                    failed(tool, f"{type(exc).__name__}: {exc}")
                    continue
                finally:
                    running[0] -= 1
                spent[0] += max(0, raw.tokens_in)
                spent[1] += max(0, raw.tokens_out)
                try:
                    enrichment = self.validator(raw, request, source=self.provider.source)
                except EnrichmentError as exc:
                    failed(tool, f"rejected: {exc.message}")
                    continue
                except Exception as exc:  # a validation bug rejects the answer, never the run
                    log.exception("validating %s's enrichment raised", tool.key)
                    failed(tool, f"rejected: {type(exc).__name__}")
                    continue
                out[tool.key] = enrichment
                report.enriched += 1

        workers = max(1, min(caps.concurrency, len(todo)))
        await asyncio.gather(*(worker() for _ in range(workers)))
        report.deferred += len(pending)
        report.tokens_in, report.tokens_out = tokens()
