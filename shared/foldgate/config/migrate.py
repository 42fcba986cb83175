"""Moving tenant configs from Parameter Store documents to the table (``foldgate tenant migrate``).

Each tenant's ``config`` parameter and ``servers/{name}`` parameters are assembled into the one
document the ``table`` source reads (the same assembly the Parameter Store source does), validated by
the cloud's rules, and written with the tenant's registry entry. Secrets stay where they are: both
sources resolve them under ``{prefix}/tenants/{tenant}/secrets/``. Running it again writes only
tenants whose documents changed since, so it can run before the switch and once more after it.
Nothing is deleted from Parameter Store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from foldgate.config.cloud import parse_cloud_config, tenant_path
from foldgate.config.ssm import SsmConfigSource, assemble, ssm_provider
from foldgate.errors import ConfigError, FoldgateError
from foldgate.store.configs.base import TenantConfigStore, revision_of

__all__ = ["MigrationReport", "migrate_from_ssm"]


@dataclass
class MigrationReport:
    """Per tenant: ``written``, ``unchanged``, ``would write`` (dry run) or why it was not moved."""

    outcomes: dict[str, str] = field(default_factory=dict)

    @property
    def failed(self) -> list[str]:
        """Tenants left in Parameter Store only (their documents are invalid or unreadable)."""
        return [t for t, o in self.outcomes.items() if o not in ("written", "unchanged", "would write")]


def ssm_document(prefix: str, tenant: str, provider: Any) -> dict[str, Any]:
    """The tenant's whole document from its Parameter Store parts (read now, no cache)."""
    # Powertools' exceptions load with the provider that raises them.
    from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

    base = tenant_path(prefix, tenant)
    try:
        raw = provider.get(f"{base}/config", max_age=0, force_fetch=True)
        servers = provider.get_multiple(f"{base}/servers", max_age=0, force_fetch=True)
    except GetParameterError as exc:
        raise ConfigError(f"cannot read {base} from Parameter Store: {exc}") from exc
    return assemble(raw, servers, base)


def migrate_from_ssm(
    store: TenantConfigStore,
    prefix: str,
    *,
    client: Any | None = None,
    tenants: list[str] | None = None,
    dry_run: bool = False,
) -> MigrationReport:
    """Copy every tenant (or ``tenants``) from Parameter Store under ``prefix`` into ``store``."""
    provider = ssm_provider(client)
    names = tenants if tenants is not None else SsmConfigSource(prefix, client=provider.client).tenants()
    report = MigrationReport()
    for tenant in names:
        try:
            doc = ssm_document(prefix, tenant, provider)
            parse_cloud_config(doc, tenant_path(prefix, tenant))  # refused here, never half-moved
            if dry_run:
                current = store.get(tenant, consistent=True)
                same = current is not None and current.revision == revision_of(doc)
                report.outcomes[tenant] = "unchanged" if same else "would write"
                continue
            _, wrote = store.put(tenant, doc)
        except FoldgateError as exc:
            report.outcomes[tenant] = exc.message
            continue
        report.outcomes[tenant] = "written" if wrote else "unchanged"
    return report
