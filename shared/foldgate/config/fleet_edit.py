"""The console's fleet edits as pure functions: a tenant config document and one change give the new
document (add or edit a server; enable, trust or quarantine it; pin a tool's tier or ``defer_loading``;
top-level settings), plus what the change says in the audit log and what a form may show of a server.

Documents are the operator's raw mappings (a file's or the table's), never re-serialized models: a key
the change does not touch stays exactly as written (an ``auth`` block, literal ``headers``, a
``command``), and a key set back to its default where it was absent is not added. Nothing here checks
that the result is a valid config; the writer validates the whole document with the same models the
gateway reads it with (and, in the cloud, the cloud's rules) before anything is stored. Form values
are hostile input: each is parsed to its type here, and an error names the field.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any, Final, Literal

from foldgate.config.tenant import ServerConfig, ToolOverride
from foldgate.errors import ConfigError

__all__ = [
    "FLAGS",
    "MASK",
    "SERVER_FIELDS",
    "Flag",
    "add_server",
    "edit_server",
    "name_fields",
    "parse_server_form",
    "server_for_form",
    "set_server_flag",
    "set_settings",
    "set_tool_override",
    "summarize",
]

Flag = Literal["enabled", "trusted", "quarantined"]
FLAGS: Final[tuple[Flag, ...]] = ("enabled", "trusted", "quarantined")
# The fields the add/edit form sets, in the form's order; everything else of a server is kept.
SERVER_FIELDS: Final = (
    "url",
    "headers_secret",
    "tool_loading",
    "timeout_s",
    "max_concurrency",
    "enabled",
    "trusted",
    "quarantined",
)
# What a form shows in place of a literal header's value (never sent to the browser).
MASK: Final = "********"
_TIERS: Final = ("read", "write", "destructive")
_LOADINGS: Final = ("eager", "deferred", "auto")
_MAX_TEXT: Final = 2048
_SERVER_INDEX: Final = re.compile(r"\bservers\.(\d+)\b")


def _servers(doc: Mapping[str, Any]) -> list[Any]:
    servers = doc.get("servers", [])
    if not isinstance(servers, list):
        raise ConfigError("servers: the document's servers are not a list; edit the config by hand")
    return servers


def _index(doc: Mapping[str, Any], name: str) -> int:
    for i, server in enumerate(_servers(doc)):
        if isinstance(server, dict) and server.get("name") == name:
            return i
    raise ConfigError(f"servers: no server named {name!r} (it may have been removed meanwhile)")


def _default(field: str) -> Any:
    info = ServerConfig.model_fields[field]
    return None if info.is_required() else info.get_default(call_default_factory=True)


def _assign(target: dict[str, Any], key: str, value: Any, default: Any) -> None:
    """Set ``key``; a value equal to the default is removed where it was absent or default already."""
    if value is None or (value == default and target.get(key, default) == default):
        target.pop(key, None)
    else:
        target[key] = value


def _text(form: Mapping[str, str], field: str) -> str | None:
    value = form.get(field, "").strip()
    if len(value) > _MAX_TEXT:
        raise ConfigError(f"{field}: longer than {_MAX_TEXT} characters")
    return value or None


def _number(form: Mapping[str, str], field: str, kind: type[int] | type[float]) -> int | float | None:
    value = form.get(field, "").strip()
    if not value:
        return None
    try:
        return kind(value)
    except ValueError:
        raise ConfigError(f"{field}: {value[:40]!r} is not a {kind.__name__}") from None


def parse_server_form(form: Mapping[str, str], *, adding: bool) -> dict[str, Any]:
    """The server fields a submitted add/edit form sets (typed; None: back to the default). A checkbox
    absent from the form is off, as browsers send it; ``adding`` also reads the new server's name."""
    fields: dict[str, Any] = {}
    if adding:
        name = _text(form, "name")
        if name is None:
            raise ConfigError("name: a new server needs a name")
        fields["name"] = name
    fields["url"] = _text(form, "url")
    fields["headers_secret"] = _text(form, "headers_secret")
    loading = form.get("tool_loading", "") or "auto"
    if loading not in _LOADINGS:
        raise ConfigError(f"tool_loading: must be one of {', '.join(_LOADINGS)}")
    fields["tool_loading"] = loading
    fields["timeout_s"] = _number(form, "timeout_s", float)
    fields["max_concurrency"] = _number(form, "max_concurrency", int)
    for flag in FLAGS:
        fields[flag] = form.get(flag) == "on"
    return fields


def add_server(doc: Mapping[str, Any], fields: Mapping[str, Any]) -> dict[str, Any]:
    """``doc`` with a new streamable HTTP server (``fields`` from :func:`parse_server_form`)."""
    name = fields.get("name")
    if not isinstance(name, str):
        raise ConfigError("name: a new server needs a name")
    if any(isinstance(s, dict) and s.get("name") == name for s in _servers(doc)):
        raise ConfigError(f"name: a server named {name!r} already exists")
    server: dict[str, Any] = {"name": name}
    for field in SERVER_FIELDS:
        _assign(server, field, fields.get(field), _default(field))
    new = copy.deepcopy(dict(doc))
    new["servers"] = [*_servers(new), server]
    return new


def edit_server(doc: Mapping[str, Any], name: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """``doc`` with the form's fields of server ``name`` changed (its other keys as they were). A
    stdio server's ``url`` is left alone (it has none; its command is edited in the file)."""
    new = copy.deepcopy(dict(doc))
    servers = _servers(new)
    i = _index(new, name)
    server = dict(servers[i])
    stdio = server.get("transport") == "stdio"
    for field in SERVER_FIELDS:
        if field in fields and not (stdio and field == "url"):
            _assign(server, field, fields[field], _default(field))
    servers[i] = server
    return new


def set_server_flag(doc: Mapping[str, Any], name: str, flag: Flag, value: bool) -> dict[str, Any]:
    """``doc`` with server ``name`` enabled/disabled, trusted/untrusted or (un)quarantined."""
    if flag not in FLAGS:
        raise ConfigError(f"not a server switch: {flag!r}")
    return edit_server(doc, name, {flag: bool(value)})


def set_tool_override(
    doc: Mapping[str, Any],
    server: str,
    tool: str,
    *,
    tier: str | None,
    defer_loading: bool | None,
) -> dict[str, Any]:
    """``doc`` with tool ``tool`` of ``server`` pinned to ``tier`` and ``defer_loading`` (None unpins
    it; an override left empty is removed, and so is an empty ``tools`` map)."""
    if tier is not None and tier not in _TIERS:
        raise ConfigError(f"tier: must be one of {', '.join(_TIERS)} or unpinned")
    if not tool or len(tool) > 128:
        raise ConfigError("tool: not a tool name")
    new = copy.deepcopy(dict(doc))
    servers = _servers(new)
    i = _index(new, server)
    entry = dict(servers[i])
    tools = entry.get("tools") or {}
    if not isinstance(tools, dict):
        raise ConfigError(f"servers[{server}].tools: not a mapping; edit the config by hand")
    tools = dict(tools)
    override = dict(tools.get(tool) or {})
    defaults = ToolOverride.model_fields
    _assign(override, "tier", tier, defaults["tier"].default)
    _assign(override, "defer_loading", defer_loading, defaults["defer_loading"].default)
    if override:
        tools[tool] = override
    else:
        tools.pop(tool, None)
    if tools:
        entry["tools"] = tools
    else:
        entry.pop("tools", None)
    servers[i] = entry
    return new


def set_settings(doc: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """``doc`` with top-level ``changes`` (a None value removes the key: its default)."""
    new = copy.deepcopy(dict(doc))
    for key, value in changes.items():
        if value is None:
            new.pop(key, None)
        else:
            new[key] = value
    return new


def server_for_form(doc: Mapping[str, Any], name: str) -> dict[str, Any]:
    """What the edit form shows of server ``name``: its form fields (defaults filled in), transport,
    auth kind and the names of its literal headers, each value replaced by :data:`MASK`."""
    server = _servers(doc)[_index(doc, name)]
    shown: dict[str, Any] = {"name": name}
    for field in SERVER_FIELDS:
        shown[field] = server.get(field, _default(field))
    shown["transport"] = server.get("transport", "streamable_http")
    auth = server.get("auth")
    shown["auth"] = auth.get("kind", "static") if isinstance(auth, dict) else "static"
    headers = server.get("headers")
    shown["headers"] = {str(k): MASK for k in headers} if isinstance(headers, dict) else {}
    tools = server.get("tools")
    shown["tools"] = dict(tools) if isinstance(tools, dict) else {}
    return shown


def name_fields(message: str, doc: Mapping[str, Any]) -> str:
    """A validation message with ``servers.N`` spelled ``servers[name]`` (the name the page shows)."""
    servers = doc.get("servers")

    def named(match: re.Match[str]) -> str:
        i = int(match.group(1))
        if isinstance(servers, list) and i < len(servers) and isinstance(servers[i], dict):
            name = servers[i].get("name")
            if isinstance(name, str):
                return f"servers[{name}]"
        return match.group(0)

    return _SERVER_INDEX.sub(named, message)


def _shown(value: Any) -> str:
    # Switches, modes and numbers are said; any text (a URL, a secret's name) only as changed.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float) or value is None:
        return str(value)
    if isinstance(value, str) and value in (*_TIERS, *_LOADINGS):
        return value
    return "…"


def _diff(path: str, before: Any, after: Any, out: list[str]) -> None:
    if before == after:
        return
    # Credentials and programs: never recursed into, never a value (a header's name can be one too).
    if path.rsplit(".", 1)[-1] in ("headers", "env", "auth", "command"):
        out.append(f"{path} changed")
        return
    if isinstance(before, dict | None) and isinstance(after, dict | None):
        # Both maps (or one absent): each key said on its own, so a map added or dropped reads key by key.
        before, after = before or {}, after or {}
        for key in [*before, *(k for k in after if k not in before)]:
            _diff(f"{path}.{key}" if path else str(key), before.get(key), after.get(key), out)
        return
    # Absent on one side: said as such, with the default it stood for when that is a plain value, so
    # "absent (default true) -> false" reads as the disable it is.
    old = _absent(path) if before is None else _shown(before)
    new = _absent(path) if after is None else _shown(after)
    if "…" in (old, new) and before is not None and after is not None:
        out.append(f"{path} changed")
    else:
        out.append(f"{path} {old} -> {new}")


_SERVER_KEY: Final = re.compile(r"^servers\[[^\]]*\]\.([a-z_]+)$")


def _absent(path: str) -> str:
    """How an absent key reads in a summary: ``absent``, with a server setting's default when shown."""
    match = _SERVER_KEY.match(path)
    field = ServerConfig.model_fields.get(match.group(1)) if match else None
    if field is not None and not field.is_required():
        default = _shown(field.get_default(call_default_factory=True))
        if default != "…" and default != "None":
            return f"absent (default {default})"
    return "absent"


def summarize(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """What an edit changed, for the audit log: each changed key's path, with its old and new value
    only when that is a switch, a mode or a number (no URL, header, secret name or text)."""
    out: list[str] = []
    old = {s.get("name"): s for s in _servers(before) if isinstance(s, dict)}
    new = {s.get("name"): s for s in _servers(after) if isinstance(s, dict)}
    for name in [*old, *(n for n in new if n not in old)]:
        if name not in new:
            out.append(f"servers[{name}] removed")
        elif name not in old:
            out.append(f"servers[{name}] added")
        else:
            _diff(f"servers[{name}]", old[name], new[name], out)
    top_before = {k: v for k, v in before.items() if k != "servers"}
    top_after = {k: v for k, v in after.items() if k != "servers"}
    _diff("", top_before, top_after, out)
    return "; ".join(out) or "no change"
