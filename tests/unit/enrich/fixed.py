"""A deterministic enrichment provider for the pipeline's tests: a real EnrichmentProvider that answers
fixed text derived from the tool's name, records what it was asked, and fails on demand."""

from __future__ import annotations

import asyncio

from foldgate.enrich.base import EnrichmentError, EnrichmentProvider, EnrichmentRequest, RawEnrichment


class FixedProvider(EnrichmentProvider):
    """Answers ``use when you need to <name>`` and three queries (what the real validator asks);
    raises for the names in ``fail``."""

    def __init__(
        self,
        source: str = "fixed:v1",
        *,
        fail: frozenset[str] = frozenset(),
        crash: frozenset[str] = frozenset(),
        tokens: int = 10,
        gate: asyncio.Event | None = None,
    ) -> None:
        super().__init__()
        self.source = source
        self.fail = fail
        self.crash = crash
        self.tokens = tokens
        self.gate = gate  # when set, every call waits for it (a provider that never answers)
        self.asked: list[EnrichmentRequest] = []

    async def enrich(self, request: EnrichmentRequest) -> RawEnrichment:
        self.asked.append(request)
        self.usage.calls += 1
        if self.gate is not None:
            await self.gate.wait()
        if request.name in self.fail:
            self.usage.failures += 1
            raise EnrichmentError(f"{request.name}: quota exceeded")
        if request.name in self.crash:
            raise RuntimeError("provider bug")
        self.usage.tokens_in += self.tokens
        self.usage.tokens_out += self.tokens
        return RawEnrichment(
            hint=f"Use when you need to {request.name.replace('_', ' ')} zorblat.",
            queries=(
                f"how do I {request.name.replace('_', ' ')}",
                f"quuxify {request.name}",
                f"{request.name.replace('_', ' ')} right now",
            ),
            tokens_in=self.tokens,
            tokens_out=self.tokens,
        )

    @property
    def names(self) -> list[str]:
        """The tool names asked, in order."""
        return [r.name for r in self.asked]
