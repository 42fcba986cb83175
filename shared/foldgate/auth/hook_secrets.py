"""Per-server webhook secrets: the HMAC keys upstreams sign their change pings with.

One secret per (tenant, server), never shared between servers, so a leaked key lets its holder ask for
a reindex of that one server and nothing else:

* in the cloud (``config_source`` ``ssm`` or ``table``), the SecureString
  ``{config_prefix}/tenants/{tenant}/hooks/{server}``
  (beside the tenant's config, under the path AdminFunction, which serves the webhooks, may read);
* locally, ``hooks/{tenant}/{server}.key`` in the state folder (beside the SQLite file), created by
  ``foldgate hook-secret <tenant> <server>`` (32 random bytes as hex, mode 0600).

Verifying a ping never creates a secret: a server nobody issued one for has none, and its pings are
refused like a forged one. Names are checked before they become a path or a parameter name.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from foldgate.auth.secrets import checked_secret, read_secret_parameter
from foldgate.errors import ConfigError, MissingSecretError
from foldgate.model.naming import MAX_SERVER_NAME, SERVER_NAME_RE
from foldgate.store.key_file import create_key, read_or_create_key

if TYPE_CHECKING:
    from foldgate.config.settings import Settings

__all__ = ["hook_parameter", "hook_secret_file", "issue_hook_secret", "load_hook_secret", "valid_names"]

# A tenant name as tokens carry it, but never "." or ".." (it becomes a folder name locally).
_TENANT: Final = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$")


def valid_names(tenant: str, server: str) -> bool:
    """Whether both names are well formed (checked before either reaches a path or a parameter name)."""
    return (
        bool(_TENANT.match(tenant)) and bool(SERVER_NAME_RE.match(server)) and len(server) <= MAX_SERVER_NAME
    )


def hook_parameter(settings: Settings, tenant: str, server: str) -> str:
    """The SecureString parameter holding a server's webhook secret in the cloud."""
    return f"{settings.config_prefix.rstrip('/')}/tenants/{tenant}/hooks/{server}"


def hook_secret_file(settings: Settings, tenant: str, server: str) -> Path:
    """The local key file of a server's webhook secret."""
    return Path(settings.sqlite_path).parent / "hooks" / tenant / f"{server}.key"


def load_hook_secret(
    settings: Settings, tenant: str, server: str, *, client: Any | None = None
) -> bytes | None:
    """The server's webhook secret, or None when none was issued (or the names are malformed).

    ConfigError when one exists but cannot be read or is too short: the caller refuses the ping either
    way, and logs the reason.
    """
    if not valid_names(tenant, server):
        return None
    if settings.secrets_in_ssm:
        try:
            text = read_secret_parameter(hook_parameter(settings, tenant, server), client)
        except MissingSecretError:
            return None
        return checked_secret(text, f"parameter {hook_parameter(settings, tenant, server)}")
    path = hook_secret_file(settings, tenant, server)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None  # never issued (a lookup never creates one)
    except OSError as exc:
        raise ConfigError(f"cannot read key file {path}: {exc.strerror or exc}") from exc
    return checked_secret(text, str(path))


def issue_hook_secret(settings: Settings, tenant: str, server: str) -> str:
    """The local webhook secret of a server, created on first call (what ``foldgate hook-secret`` prints)."""
    if not valid_names(tenant, server):
        raise ConfigError(f"invalid tenant or server name: {tenant!r} / {server!r}")
    path = hook_secret_file(settings, tenant, server)
    text = read_or_create_key(path) if path.exists() else create_key(path)
    checked_secret(text, str(path))
    return text.strip()
