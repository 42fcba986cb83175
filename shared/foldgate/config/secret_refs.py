"""Where a tenant file's secrets come from: its top-level ``secrets:`` map (``foldgate tenant apply``).

A tenant config file may carry, beside the config itself::

    secrets:
      github: {from_env: GITHUB_HEADERS}       # an environment variable of the operator's shell
      crm-client: {from_file: ./crm-secret.txt}  # a file (relative to the tenant file)

Each entry names a secret of the tenant (``github`` is ``{prefix}/tenants/<t>/secrets/github`` in
Parameter Store, ``secrets/github`` in the local state folder) and where its value is read when the
file is applied; the config refers to it by that name (``headers_secret: github``,
``auth.client_secret_secret: crm-client``). The map is never stored with the config: only the values
go to the secret store, and the stored document keeps the references. Values are never printed, logged
or echoed in errors; a file that says where a value comes from is safe to commit.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from foldgate.config.doc_check import field_path
from foldgate.config.tenant import TenantConfig
from foldgate.config.upstream_auth import auth_secrets
from foldgate.errors import ConfigError

__all__ = [
    "SecretSource",
    "TenantFile",
    "check_header_secrets",
    "read_tenant_file",
    "referenced_secrets",
    "secret_value",
]

# A secret's name below the tenant's secrets path: parameter-name characters, no empty segments (as
# foldgate.config.cloud.own_secret resolves it).
_NAME: Final = re.compile(r"^[A-Za-z0-9_.-]{1,200}(?:/[A-Za-z0-9_.-]{1,200}){0,4}$")
_ENV: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,200}$")
# The operator's own AWS credentials and the gateway's settings: never a tenant's secret (a file from
# someone else could otherwise send them to its upstream as a client secret).
_RESERVED_ENV: Final = ("AWS_", "FOLDGATE_")
# Parameter Store's largest SecureString (advanced tier: 8 KB); a standard one holds 4 KB.
MAX_SECRET_BYTES: Final = 4096


class SecretSource(BaseModel):
    """Where one secret's value is read: exactly one of an environment variable or a file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    from_env: str | None = Field(default=None, pattern=_ENV.pattern)
    from_file: str | None = Field(default=None, min_length=1, max_length=4096)

    @model_validator(mode="after")
    def _one_source(self) -> SecretSource:
        if (self.from_env is None) == (self.from_file is None):
            raise ValueError("give exactly one of from_env and from_file")
        if self.from_env is not None and self.from_env.upper().startswith(_RESERVED_ENV):
            raise ValueError(f"from_env {self.from_env}: AWS_* and FOLDGATE_* variables are never a tenant's")
        return self

    def describe(self, base_dir: Path) -> str:
        """Where the value is read, for the operator to check (``env GH_HEADERS``, ``file /abs/gh.json``)."""
        if self.from_env is not None:
            return f"env {self.from_env}"
        return f"file {self.path(base_dir)}"

    def path(self, base_dir: Path) -> Path:
        """The file (relative to the tenant file's folder)."""
        file = Path(self.from_file or "").expanduser()
        return file if file.is_absolute() else base_dir / file


@dataclass(frozen=True)
class TenantFile:
    """A tenant file split in two: the config document (what is stored) and its secrets' sources."""

    doc: dict[str, Any]
    secrets: dict[str, SecretSource]
    base_dir: Path
    # What is wrong with the secrets: map, reported with the config's own problems (all at once).
    problems: tuple[str, ...] = ()


def read_tenant_file(path: str | Path) -> TenantFile:
    """A tenant file's config document and its ``secrets:`` map (checked here, its problems kept for
    the config's validation to report with its own); ConfigError when the file is not a mapping."""
    # Loaded per command: the YAML reader is paid for only by commands that read a file.
    from foldgate.config.tenant import read_config_document

    doc = read_config_document(path)
    if not isinstance(doc, dict):
        raise ConfigError(f"invalid tenant config in {path}: expected a mapping")
    doc = dict(doc)
    raw = doc.pop("secrets", None) or {}
    sources: dict[str, SecretSource] = {}
    problems: list[str] = []
    if not isinstance(raw, dict):
        problems.append("secrets: expected a mapping of secret names to {from_env: VAR} or {from_file: PATH}")
        raw = {}
    for name, spec in raw.items():
        if not isinstance(name, str) or not _NAME.match(name) or ".." in name.split("/"):
            problems.append(
                f"secrets.{str(name)[:60]}: a secret name is letters, digits, '_', '.', '-' and '/'"
            )
            continue
        try:
            sources[name] = SecretSource.model_validate(spec)
        except ValidationError as exc:
            problems.extend(
                f"{field_path(('secrets', name, *e['loc']))}: {str(e['msg']).removeprefix('Value error, ')}"
                for e in exc.errors()
            )
    return TenantFile(doc, sources, Path(path).resolve().parent, tuple(problems))


def secret_value(
    name: str, source: SecretSource, base_dir: Path, environ: Mapping[str, str] | None = None
) -> str:
    """The secret's value from its source (a file's trailing newline dropped); ConfigError naming the
    secret and the source, never the value."""
    env = os.environ if environ is None else environ
    if source.from_env is not None:
        value = env.get(source.from_env)
        if value is None or not value.strip():
            raise ConfigError(f"secrets.{name}: environment variable {source.from_env} is not set or empty")
    else:
        file = source.path(base_dir)
        try:
            value = file.read_text(encoding="utf-8").rstrip("\r\n")
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
            raise ConfigError(f"secrets.{name}: cannot read {file}: {why}") from None
        if not value.strip():
            raise ConfigError(f"secrets.{name}: {file} is empty")
    if len(value.encode("utf-8")) > MAX_SECRET_BYTES:
        raise ConfigError(f"secrets.{name}: the value is longer than {MAX_SECRET_BYTES} bytes")
    return value


def referenced_secrets(config: TenantConfig) -> dict[str, str]:
    """Every secret name the config refers to, with the first field that names it
    (``servers[0].headers_secret``); names as the config spells them."""
    refs: dict[str, str] = {}
    for i, server in enumerate(config.servers):
        if server.headers_secret:
            refs.setdefault(server.headers_secret, f"servers[{i}].headers_secret")
        for path, value in auth_secrets(server.auth).items():
            refs.setdefault(value, f"servers[{i}].auth.{path}")
    return refs


def check_header_secrets(config: TenantConfig, values: Mapping[str, str]) -> None:
    """A secret a server's ``headers_secret`` names must be a JSON object of strings (the headers
    sent upstream); ConfigError naming the secret and the field, never the value."""
    for i, server in enumerate(config.servers):
        value = values.get(server.headers_secret or "")
        if value is None:
            continue
        try:
            doc = json.loads(value)
        except ValueError:
            doc = None
        if not isinstance(doc, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in doc.items()
        ):
            raise ConfigError(
                f"secrets.{server.headers_secret}: servers[{i}].headers_secret needs a JSON object of "
                'header names to strings, e.g. {"Authorization": "Bearer ..."} (the value is not shown)'
            )
