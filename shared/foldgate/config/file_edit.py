"""Writing a local tenant config file from the console: top-level settings (the "save the what-if")
line by line, whole documents (server and tool edits) re-dumped.

The file is the operator's: a YAML file keeps its comments, order and layout, because only the lines
of the keys concerned change (a line-level edit of top-level scalar keys; a key that is not a plain
top-level scalar is refused rather than the file re-dumped). JSON has no comments and is re-dumped with
indent 2. Before anything is replaced the whole resulting document is validated by the same loader the
gateway reads it with, and the edit is checked to change exactly the keys asked for. The write is
atomic (a temporary file in the same directory, the original's mode, ``os.replace``), and refused when
the file no longer has the content hash the operator's page was rendered from (someone else edited it).
A whole document (:func:`save_document`) goes through the same validation, check and atomic write, but
a YAML file is re-dumped: its comments are not kept (the console says so beside such a save).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from foldgate.config.tenant import TenantConfig, load_tenant_config
from foldgate.errors import ConfigError, ConflictError

__all__ = ["content_hash", "save_document", "save_settings"]

_YAML_SUFFIXES: Final = (".yaml", ".yml")
_KEY: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A top-level ``key: value  # comment`` line. The value is a double- or single-quoted string closed on
# this line, or a plain scalar without ``#`` and not starting with a YAML indicator (block scalars,
# flow collections, anchors, aliases, tags, directives); anything else does not match and is refused.
_VALUE: Final = re.compile(
    r"""(?P<value>"(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#|>&*!{}\[\]'"%@`,?:-][^#]*?|-?[0-9][^#\s]*|)"""
    r"""(?P<tail>[ \t]+#.*|[ \t]*)"""
)
_SAVING: Final = threading.Lock()
# A plain scalar written unquoted only if it is this simple and YAML reads it back as the same string.
_PLAIN: Final = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")


def content_hash(path: str | Path) -> str:
    """The SHA-256 of the file's bytes (hex): what a page sends back to prove it saw the current file."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror or exc}") from exc


def _yaml_scalar(value: Any) -> str:
    # Loaded only when a YAML file is edited (PyYAML is not needed anywhere else on this path).
    import yaml

    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        if _PLAIN.fullmatch(value) and yaml.safe_load(value) == value:
            return value
        return json.dumps(value)  # a JSON string is a valid YAML double-quoted scalar
    raise ConfigError(f"cannot write a {type(value).__name__} as a top-level YAML scalar")


def _significant_after(lines: list[str], index: int) -> str | None:
    """The first line after ``index`` that is neither blank nor only a comment, or None."""
    for line in lines[index + 1 :]:
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return line
    return None


def _parse(text: str, is_yaml: bool) -> dict[str, Any]:
    """The file's document, which must be a mapping; ConfigError otherwise."""
    # Loaded only when a YAML file is edited (PyYAML is not needed anywhere else on this path).
    import yaml

    try:
        doc = yaml.safe_load(text) if is_yaml else json.loads(text)
    except (yaml.YAMLError, ValueError) as exc:
        raise ConfigError(f"the config file does not parse, so it is not edited: {exc}") from exc
    if not isinstance(doc, dict):
        raise ConfigError("the config file's top level is not a mapping, so it is not edited")
    return doc


def _needed(doc: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """The changes that alter what the file means: a key already holding the value, or absent with the
    value as its default, is left as the operator wrote it."""
    fields = TenantConfig.model_fields
    return {
        key: value
        for key, value in changes.items()
        if not (doc[key] == value if key in doc else key in fields and fields[key].default == value)
    }


def _edit_yaml(text: str, original: dict[str, Any], changes: Mapping[str, Any]) -> str:
    """``text`` with each key's top-level line replaced (or a line inserted); ConfigError when a key is
    not a plain top-level scalar."""
    # Loaded only when a YAML file is edited (PyYAML is not needed anywhere else on this path).
    import yaml

    lines = text.splitlines(keepends=True)
    inserted: list[str] = []
    anchor = -1  # the line after which absent keys go: the last of the edited keys, else the end
    for key, value in changes.items():
        pattern = re.compile(rf"{re.escape(key)}[ \t]*:(?=[ \t]|$)")
        found = [i for i, line in enumerate(lines) if pattern.match(line)]
        if not found:
            if key in original:
                raise ConfigError(
                    f"{key} is not written as a plain top-level `{key}: value` line; edit it by hand"
                )
            inserted.append(f"{key}: {_yaml_scalar(value)}")
            continue
        if len(found) > 1:
            raise ConfigError(f"{key} appears more than once at the top level; edit it by hand")
        i = found[0]
        body = lines[i].rstrip("\r\n")
        eol = lines[i][len(body) :]
        head = pattern.match(body)
        assert head is not None  # found above
        rest = body[head.end() :]
        gap = rest[: len(rest) - len(rest.lstrip(" \t"))]
        matched = _VALUE.fullmatch(rest[len(gap) :])
        following = _significant_after(lines, i)
        continues = following is not None and following[:1] in (" ", "\t", "-")
        if matched is None or continues:
            raise ConfigError(
                f"{key} is not a plain one-line scalar (a block, list or multi-line value); edit it by hand"
            )
        lines[i] = f"{key}:{gap or ' '}{_yaml_scalar(value)}{matched.group('tail')}{eol}"
        anchor = max(anchor, i)
    if inserted:
        eol = "\r\n" if text.endswith("\r\n") else "\n"
        block = [line + eol for line in inserted]
        if anchor < 0:
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += eol
            lines.extend(block)
        else:
            lines[anchor + 1 : anchor + 1] = block
    edited = "".join(lines)
    # The edit must change exactly the keys asked for, whatever the file's layout made of the lines.
    try:
        after = yaml.safe_load(edited)
    except yaml.YAMLError:
        after = None
    if after != {**original, **changes}:
        raise ConfigError("the file's layout does not allow a safe line edit of these keys; edit it by hand")
    return edited


def _edit_json(original: Mapping[str, Any], changes: Mapping[str, Any]) -> str:
    return json.dumps({**original, **changes}, indent=2, ensure_ascii=False) + "\n"


def save_settings(path: str | Path, changes: Mapping[str, Any], expected_hash: str) -> TenantConfig:
    """Write top-level ``changes`` into the config file at ``path`` and return the config it now holds
    (keys that already mean the value, written or by default, are left alone: nothing to do, no write).

    ConflictError when the file's content hash is no longer ``expected_hash``; ConfigError when a key
    cannot be edited safely or the resulting document is not a valid config (the file is then untouched).
    """
    # One save at a time in this process: two pages saving at once cannot both pass the hash check.
    with _SAVING:
        return _save(path, changes, expected_hash)


def _save(path: str | Path, changes: Mapping[str, Any], expected_hash: str) -> TenantConfig:
    for key in changes:
        if not _KEY.fullmatch(key):
            raise ConfigError(f"not a config key: {key!r}")
    target, raw, mode = _read_target(path)
    if hashlib.sha256(raw).hexdigest() != expected_hash:
        raise ConflictError(f"{path} changed since this page was shown; reload the page and try again")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text, so it is not edited") from None
    is_yaml = target.suffix in _YAML_SUFFIXES
    original = _parse(text, is_yaml)
    needed = _needed(original, changes)
    if not needed:
        return load_tenant_config(target)
    edited = _edit_yaml(text, original, needed) if is_yaml else _edit_json(original, needed)
    return _replace(path, target, mode, edited, expected_hash)


def save_document(path: str | Path, doc: Mapping[str, Any], expected_hash: str) -> TenantConfig:
    """Replace the config file at ``path`` with the whole document ``doc`` (the console's server and
    tool edits, which change nested keys no line edit can reach safely) and return the config it now
    holds. YAML is re-dumped (block style, keys in the document's order): the file's comments and
    layout are not kept, which the console says beside every such save.

    ConflictError when the file's content hash is no longer ``expected_hash``; ConfigError when the
    document is not a valid config (the file is then untouched).
    """
    with _SAVING:
        target, raw, mode = _read_target(path)
        if hashlib.sha256(raw).hexdigest() != expected_hash:
            raise ConflictError(f"{path} changed since this page was shown; reload the page and try again")
        if target.suffix in _YAML_SUFFIXES:
            # Loaded only when a YAML file is edited (PyYAML is not needed anywhere else on this path).
            import yaml

            edited = yaml.safe_dump(dict(doc), sort_keys=False, allow_unicode=True, default_flow_style=False)
        else:
            edited = _edit_json({}, doc)
        return _replace(path, target, mode, edited, expected_hash)


def _read_target(path: str | Path) -> tuple[Path, bytes, int]:
    """The real file behind ``path`` (not a symlink to it), its bytes and its mode."""
    # Edit the real file, not a symlink to it (os.replace would swap the link for a plain file).
    target = Path(os.path.realpath(path))
    try:
        return target, target.read_bytes(), stat.S_IMODE(target.stat().st_mode)
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror or exc}") from exc


def _replace(path: str | Path, target: Path, mode: int, edited: str, expected_hash: str) -> TenantConfig:
    """Write ``edited`` over ``target`` atomically once it loads as a valid config and the file still
    has ``expected_hash``; the config it holds."""
    # Same directory (os.replace is atomic only within a file system) and same suffix (the loader picks
    # the parser by it).
    try:
        handle, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=target.suffix)
    except OSError as exc:
        raise ConfigError(f"cannot write beside {path}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(edited)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, mode)
        try:
            config = load_tenant_config(temp)
        except ConfigError as exc:
            raise ConfigError(f"not saved: {exc.message.replace(temp, str(path))}") from exc
        # Checked again just before the swap: an editor outside this process that wrote meanwhile is not
        # overwritten (only the instant between this read and the rename remains).
        if hashlib.sha256(target.read_bytes()).hexdigest() != expected_hash:
            raise ConflictError(f"{path} changed while saving; reload the page and try again")
        os.replace(temp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        if isinstance(exc, OSError):
            raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from exc
        raise
    return config
