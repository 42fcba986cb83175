"""Upstream request headers from Parameter Store SecureStrings (the cloud's ``headers_secret``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from foldgate.config.ssm import parameter_json, ssm_provider
from foldgate.config.tenant import ServerConfig
from foldgate.errors import ConfigError, StoreError
from foldgate.model.lru import MemoryBudget

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.parameters import SSMProvider

__all__ = ["SecretHeaders"]


class SecretHeaders:
    """Upstream request headers: the server's literal ``headers`` plus its SecureString secret, if any.

    Used as the UpstreamClient's header source; secrets are decrypted by Parameter Store, cached for
    ``max_age`` seconds and never logged.
    """

    def __init__(
        self,
        *,
        max_age: float = 300.0,
        client: Any | None = None,
        memory: MemoryBudget | None = None,
        sealed: Callable[[str], str | None] | None = None,
    ) -> None:
        self.max_age = max(0, int(max_age))
        # Secrets are cached on the instance's memory budget, like configs (see config.ssm_cache); an
        # instance that reads them from the table makes no Parameter Store client. The provider (an
        # SSM client and Powertools Parameters) is made by the first server with a headers secret, not
        # at every cold start.
        self._ssm: SSMProvider | None = None
        self._ssm_from = (client, memory)
        # SecretStore: table: the secret is read from the table and opened (foldgate.store.secrets_table).
        self._sealed = sealed
        self._opened: dict[str, tuple[float, str]] = {}

    def _read(self, name: str) -> str:
        if self._sealed is None:
            # boto3 and Powertools Parameters load only in instances that read Parameter Store.
            from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

            if self._ssm is None:
                self._ssm = ssm_provider(*self._ssm_from, kind="ssm_secret")
            try:
                return str(self._ssm.get(name, decrypt=True, max_age=self.max_age))
            except GetParameterError as exc:
                raise ConfigError(f"cannot read its headers secret: {exc}") from exc
        now = time.monotonic()
        held = self._opened.get(name)
        if held is not None and held[0] > now:
            return held[1]
        try:
            value = self._sealed(name)
        except StoreError as exc:
            raise ConfigError(f"cannot read its headers secret: {exc.message}") from exc
        if value is None:
            raise ConfigError(f"cannot read its headers secret: no secret {name} in the table")
        self._opened[name] = (now + self.max_age, value)
        return value

    def __call__(self, server: ServerConfig) -> Mapping[str, str]:
        if not server.headers_secret:
            return server.headers
        try:
            raw = self._read(server.headers_secret)
        except ConfigError as exc:
            raise ConfigError(f"server {server.name!r}: {exc.message}") from exc
        doc = parameter_json(raw, server.headers_secret)
        if not isinstance(doc, dict) or not all(isinstance(v, str) for v in doc.values()):
            # Never echo the value: it is a credential.
            raise ConfigError(f"server {server.name!r}: headers secret must be a JSON object of strings")
        return {**server.headers, **doc}
