"""Agent tokens: issue, store (as keyed hashes), verify, list and revoke; and the secrets behind them.

Importing this package is cheap: boto3 is imported only by the DynamoDB store and the SSM secret read.
"""

from foldgate.auth.secrets import SecretName, load_secret, verify_operator
from foldgate.auth.store import SqliteTokenStore, TokenStore, open_token_store
from foldgate.auth.tokens import (
    INVALID_TOKEN,
    AgentToken,
    Tier,
    TokenAuthority,
    TokenHasher,
    new_token,
    open_authority,
    parse_duration,
)

__all__ = [
    "INVALID_TOKEN",
    "AgentToken",
    "SecretName",
    "SqliteTokenStore",
    "Tier",
    "TokenAuthority",
    "TokenHasher",
    "TokenStore",
    "load_secret",
    "new_token",
    "open_authority",
    "open_token_store",
    "parse_duration",
    "verify_operator",
]
