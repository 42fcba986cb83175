"""A Powertools SSM provider whose parameter cache is on the instance's memory budget.

Powertools keeps every parameter it ever read in a plain dict (expired values are replaced when read
again, never dropped): one instance reading the configs and secrets of thousands of tenants grew it
without end. Here each value is an entry of a shelf of the budget (configs and secrets: one each),
least recently used evicted first; an evicted value is read from Parameter Store again on its next
use, as an expired one is.

Imported only where Parameter Store is read (it loads Powertools Parameters and boto3).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from aws_lambda_powertools.utilities.parameters import SSMProvider
from aws_lambda_powertools.utilities.parameters.base import ExpirableValue

from foldgate.model.lru import MemoryBudget, text_bytes

__all__ = ["BoundedSSMProvider", "parameter_bytes"]


def parameter_bytes(value: Any) -> int:
    """The estimated memory of a cached value: a string, or a path's names and values."""
    if isinstance(value, dict):
        return sum(text_bytes(str(k)) + parameter_bytes(v) for k, v in value.items()) + 64 * len(value) + 232
    if isinstance(value, str):
        return text_bytes(value)
    if isinstance(value, bytes):
        return 33 + len(value)
    return 64


class BoundedSSMProvider(SSMProvider):
    """Powertools' SSM provider with its cache on a :class:`MemoryBudget` shelf."""

    def __init__(self, *, boto3_client: Any, memory: MemoryBudget, kind: str = "ssm") -> None:
        super().__init__(boto3_client=boto3_client)
        self._values = memory.shelf(kind)

    def has_not_expired_in_cache(self, key: tuple[Any, ...]) -> bool:
        """Whether a fresh value is held (looking it up makes it the most recently used)."""
        found: ExpirableValue | None = self._values.get(key)
        return found is not None and found.ttl >= datetime.now()

    def fetch_from_cache(self, key: tuple[Any, ...]) -> Any:
        """The held value ({} when gone, as Powertools answers); Powertools asks right after
        :meth:`has_not_expired_in_cache`, which counted the lookup."""
        found: ExpirableValue | None = self._values.peek(key)
        return found.value if found is not None else {}

    def add_to_cache(self, key: tuple[Any, ...], value: Any, max_age: int) -> None:
        """Hold the value for ``max_age`` seconds (0: not at all)."""
        if max_age <= 0:
            return
        expiring = ExpirableValue(value, datetime.now() + timedelta(seconds=max_age))
        self._values.put(key, expiring, parameter_bytes(value) + 200)

    def clear_cache(self) -> None:
        """Forget every held value of this provider."""
        self.store.clear()
        self._values.clear()
