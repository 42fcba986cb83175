"""Argument validation against the stored upstream schema, with validators compiled once per hash.

Fail-open: a schema that cannot be compiled is skipped (and counted), never blocks a call.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = ["ValidatorCache", "format_error"]


def format_error(error: Any) -> str:
    """One readable line for a jsonschema error: where, then what."""
    path = "/".join(str(p) for p in error.absolute_path)
    where = f"at '{path}': " if path else ""
    message = str(error.message)
    if len(message) > 300:
        message = message[:297] + "..."
    return where + message


class ValidatorCache:
    """Compiled validators keyed by the tool's content hash (bounded LRU)."""

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self.skipped = 0  # schemas that could not be compiled (fail-open count)
        self._cache: OrderedDict[str, Validator | None] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str, schema: Any) -> Validator | None:
        """The validator for a schema, None when it cannot be compiled."""
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        validator = self._compile(schema)
        with self._lock:
            self._cache[key] = validator
            if len(self._cache) > self.capacity:
                self._cache.popitem(last=False)
        return validator

    def _compile(self, schema: Any) -> Validator | None:
        # jsonschema is imported on the first call, not at init: listing never needs it.
        from jsonschema import Draft202012Validator, validators

        if not isinstance(schema, dict):
            self.skipped += 1
            return None
        try:
            cls = validators.validator_for(schema, default=Draft202012Validator)
            cls.check_schema(schema)
            validator: Validator = cls(schema)
            # Probe once: some malformed schemas only fail when used (e.g. unresolvable $ref).
            validator.is_valid({})
        except Exception:  # SchemaError, unresolvable refs, anything: the schema is skipped
            self.skipped += 1
            return None
        return validator

    def errors(self, key: str, schema: Any, arguments: Any) -> list[str] | None:
        """Validation errors for arguments (empty when valid); None when the schema is skipped."""
        validator = self.get(key, schema)
        if validator is None:
            return None
        try:
            found = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
        except Exception:  # a pathological schema that breaks at validation time: fail open
            self.skipped += 1
            return None
        return [format_error(e) for e in found[:5]]
