"""Validating a tenant document before it is written (``foldgate tenant diff|apply``), every problem
named by its field as a reader writes it (``servers[2].url``), all of them at once.

The models and rules are exactly the readers': the local file source's (:func:`parse_tenant_config`,
loopback issuers and ``stdio`` allowed) or the cloud's (:func:`parse_cloud_config`, which the indexer
and the serving functions apply). The cloud's own checks are run first field by field only so that
each problem can name its field; the cloud parser then runs as the final word.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import ValidationError

from foldgate.config.cloud import own_secret, parse_cloud_config
from foldgate.config.tenant import TenantConfig
from foldgate.config.upstream_auth import auth_secrets
from foldgate.errors import ConfigError

__all__ = ["field_path", "validate_document"]


# A server's whole-model checks (ServerConfig._check_transport) are reported on the server; the field
# each one is about, by what its message says.
_SERVER_FIELDS: Final = (
    ("needs an http(s) url", "url"),
    ("stdio needs a command", "command"),
    ("needs streamable_http", "transport"),
    ("sets Authorization itself", "headers"),
)


def _error_line(err: Any) -> str:
    loc = list(err["loc"])
    msg = str(err["msg"])
    if len(loc) == 2 and loc[0] == "servers" and isinstance(loc[1], int):
        loc += [name for said, name in _SERVER_FIELDS if said in msg][:1]
    return f"{field_path(loc)}: {msg.removeprefix('Value error, ')}"


def field_path(loc: tuple[int | str, ...] | list[int | str]) -> str:
    """A pydantic error location as a reader writes it: ``servers[2].url``, ``secrets.github``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "config"


def _problems(source: str, problems: list[str]) -> ConfigError:
    head = f"invalid tenant config in {source}"
    if len(problems) == 1:
        return ConfigError(f"{head}: {problems[0]}")
    return ConfigError(f"{head} ({len(problems)} problems):\n" + "\n".join(f"  {p}" for p in problems))


def _cloud_problems(config: TenantConfig, base: str) -> list[str]:
    problems: list[str] = []
    for i, server in enumerate(config.servers):
        if server.transport == "stdio":
            problems.append(
                f"servers[{i}].transport: 'stdio' runs a program and is available only in local mode; "
                "use streamable_http"
            )
        named = {"headers_secret": server.headers_secret}
        named.update({f"auth.{path}": value for path, value in auth_secrets(server.auth).items()})
        for field, value in named.items():
            if not value:
                continue
            try:
                own_secret(value, field, base)
            except ConfigError:
                problems.append(
                    f"servers[{i}].{field}: must name a parameter under {base}/secrets/ (got {value[:120]!r})"
                )
    return problems


def validate_document(
    doc: Any,
    *,
    source: str,
    cloud_base: str | None,
    known: tuple[str, ...] = (),
    allow_private: bool = True,
) -> TenantConfig:
    """The config the document gives, as written (secret names as spelled); ConfigError listing every
    problem by field, ``known`` ones (found beside the config, e.g. in its ``secrets:``) first.
    ``cloud_base`` (the tenant's Parameter Store path) applies the cloud's rules, None the local file's;
    ``allow_private`` False refuses loopback and private upstream address literals."""
    if not isinstance(doc, dict):
        raise ConfigError(f"invalid tenant config in {source}: expected a mapping")
    try:
        # The cloud, where no issuer on this machine's loopback can be trusted.
        context = {"allow_loopback": cloud_base is None, "allow_private": allow_private}
        config = TenantConfig.model_validate(doc, context=context)
    except ValidationError as exc:
        raise _problems(source, [*known, *(_error_line(e) for e in exc.errors())]) from None
    problems = [*known, *(_cloud_problems(config, cloud_base) if cloud_base is not None else [])]
    if problems:
        raise _problems(source, problems)
    if cloud_base is not None:
        # The readers' own rules have the last word.
        parse_cloud_config(doc, cloud_base, allow_private=allow_private)
    return config
