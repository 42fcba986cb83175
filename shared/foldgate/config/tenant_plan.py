"""What applying a tenant file would change, and applying it (``foldgate tenant diff|apply``).

A plan is made before anything is written: the file is validated by the target's rules (every problem
named by its field), each secret's value is read from its source and compared with what is stored
(only the verdict is kept for display), and the document is compared with the stored one. Applying
writes the changed secrets first, so a stored config never names a secret that is not there yet, then
the document.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from foldgate.config.diff import document_diff
from foldgate.config.doc_check import validate_document
from foldgate.config.secret_refs import TenantFile, check_header_secrets, referenced_secrets, secret_value
from foldgate.config.secret_store import SecretStore
from foldgate.config.targets import ConfigTarget
from foldgate.errors import ConfigError
from foldgate.model.jsonutil import canonical

__all__ = ["SecretLine", "TenantPlan", "plan_tenant"]


@dataclass(frozen=True)
class SecretLine:
    """One secret's part of a plan: ``set``, ``changed``, ``unchanged`` (given in the file) or
    ``not given`` (referenced by the config, its stored value left as it is; not looked up)."""

    name: str
    status: str
    where: str
    used_by: str | None
    # Where the file reads the value (``env GH_HEADERS``), shown so a reviewer sees what is sent where.
    source: str | None = None

    def sentence(self) -> str:
        """The line a diff prints (never the value)."""
        said = {
            "set": "will be set",
            "changed": "will be changed",
            "unchanged": "unchanged",
            "not given": "not given under secrets:, left as stored",
        }[self.status]
        used = f", used by {self.used_by}" if self.used_by else ""
        source = f", from {self.source}" if self.source else ""
        return f"secret {self.name}: {said} ({self.where}{used}{source})"


@dataclass
class TenantPlan:
    """A validated tenant file against what is stored; :meth:`apply` carries it out."""

    tenant: str
    target: ConfigTarget
    secret_store: SecretStore
    source: str
    stored: dict[str, Any] | None
    desired: dict[str, Any]
    secret_lines: list[SecretLine]
    # The values to write, by name: held only until applied, never shown.
    _values: dict[str, str] = field(repr=False)

    @property
    def document_changes(self) -> bool:
        """Whether the stored document differs from the file's."""
        return self.stored is None or canonical(self.stored) != canonical(self.desired)

    @property
    def changes(self) -> bool:
        """Whether applying would write anything."""
        return self.document_changes or any(s.status in ("set", "changed") for s in self.secret_lines)

    def diff_lines(self) -> list[str]:
        """The document's unified diff (credentials hidden), then one line per secret the file gives."""
        stored_name = f"stored: {self.target.describe(self.tenant)}" + ("" if self.stored else " (none)")
        lines = document_diff(self.stored, self.desired, stored_name, self.source)
        return [*lines, *(s.sentence() + "\n" for s in self.secret_lines if s.status != "not given")]

    def notes(self) -> list[str]:
        """Secrets the config refers to that the file does not give (left as stored, not looked up)."""
        return [s.sentence() for s in self.secret_lines if s.status == "not given"]

    def apply(self) -> dict[str, Any]:
        """Write the changed secrets, then the document; what was done (statuses, never values)."""
        written: dict[str, str] = {}
        for line in self.secret_lines:
            if line.status in ("set", "changed"):
                self.secret_store.put(self.tenant, line.name, self._values[line.name])
            if line.status != "not given":
                written[line.name] = line.status
        wrote = self.target.write(self.tenant, self.desired)
        return {"written": wrote, "secrets": written}


def _relative(name: str, base: str) -> str:
    """A secret reference as a name under the tenant's secrets path (absolute ones made relative)."""
    own = f"{base}/secrets/"
    return name[len(own) :] if name.startswith(own) else name


def plan_tenant(
    target: ConfigTarget,
    secrets: SecretStore,
    tenant: str,
    file: TenantFile,
    source: str,
    *,
    allow_private: bool = True,
) -> TenantPlan:
    """The plan for applying ``file`` to ``tenant`` at ``target``; ConfigError (naming fields, never
    values) when the file is invalid or a secret's source cannot be read. ``allow_private`` False
    (``allow_private_upstreams`` off) refuses loopback and private upstream address literals."""
    base = target.base(tenant)
    config = validate_document(
        file.doc,
        source=source,
        cloud_base=base if target.cloud else None,
        known=file.problems,
        allow_private=allow_private,
    )
    values = {name: secret_value(name, spec, file.base_dir) for name, spec in file.secrets.items()}
    refs = {_relative(name, base): used for name, used in referenced_secrets(config).items()}
    # A headers secret must be a JSON object of strings; check what this file gives before writing it.
    check_header_secrets(config.model_copy(update={"servers": [
        s.model_copy(update={"headers_secret": _relative(s.headers_secret, base)}) if s.headers_secret else s
        for s in config.servers
    ]}), values)  # fmt: skip
    lines: list[SecretLine] = []
    for name in sorted(values):
        lines.append(
            SecretLine(
                name,
                secrets.status(tenant, name, values[name]),
                secrets.where(tenant, name),
                refs.get(name),
                file.secrets[name].describe(file.base_dir),
            )
        )
    for name in sorted(set(refs) - set(values)):
        lines.append(SecretLine(name, "not given", secrets.where(tenant, name), refs[name]))
    try:
        stored = target.read(tenant)
    except ConfigError as exc:
        # A stored document the readers refuse is replaced whole; the diff shows it as absent.
        raise ConfigError(f"cannot read what is stored for {tenant!r}: {exc.message}") from exc
    return TenantPlan(tenant, target, secrets, source, stored, target.normalized(file.doc), lines, values)
