"""``foldgate stack init``: the two stack secrets a new deployment needs before its first request.

They are SecureString parameters under the stack's ``ConfigPrefix`` (``FOLDGATE_CONFIG_PREFIX``, or
``--prefix``), read by the functions as :mod:`foldgate.auth.secrets` describes: the agent-token HMAC key
(``{prefix}/secrets/token-hmac-key``) and the operator key (``{prefix}/secrets/operator-key``). Each is
created with 32 random bytes (hex) only when absent; an existing one is never overwritten (rotating the
HMAC key would invalidate every agent token). No value is printed: the operator key is read when
needed with the operator's own AWS credentials (the command to do so is printed), so it never lands in
a terminal's scrollback or a CI log.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_stack_commands", "init_stack_secrets"]


def init_stack_secrets(client: Any, parameters: list[str]) -> dict[str, str]:
    """Create each SecureString parameter that does not exist (32 random bytes as hex); per parameter
    ``created``, ``exists`` or ``exists, not a SecureString`` (which the stack refuses to use)."""
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    import secrets

    outcome: dict[str, str] = {}
    for name in parameters:
        try:
            kind = client.get_parameter(Name=name)["Parameter"].get("Type")
        except client.exceptions.ParameterNotFound:
            kind = None
        if kind is None:
            try:
                # Overwrite=False: of two runs at once, the second finds the first's value and keeps it.
                client.put_parameter(
                    Name=name, Value=secrets.token_hex(32), Type="SecureString", Overwrite=False
                )
                outcome[name] = "created"
                continue
            except client.exceptions.ParameterAlreadyExists:
                kind = client.get_parameter(Name=name)["Parameter"].get("Type")
        outcome[name] = "exists" if kind == "SecureString" else "exists, not a SecureString"
    return outcome


def _cmd_init(args: argparse.Namespace) -> int:
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    import boto3

    from foldgate.auth.secrets import secret_parameter
    from foldgate.config.settings import Settings
    from foldgate.errors import ConfigError

    settings = Settings.from_env()
    if args.prefix and not args.prefix.startswith("/"):
        raise ConfigError(f"--prefix {args.prefix!r} must start with '/' (a Parameter Store path)")
    if args.prefix:
        settings = settings.model_copy(update={"config_prefix": args.prefix})
    token, operator = secret_parameter(settings, "token"), secret_parameter(settings, "operator")
    outcome = init_stack_secrets(boto3.client("ssm"), [token, operator])
    for name, what in outcome.items():
        print(f"{name}: {what}" + ("" if what != "exists" else " (left as it is)"))
    print(
        "sign in to the console (and call /api/v1) with the operator key, read with your AWS credentials:\n"
        f"  aws ssm get-parameter --name {operator} --with-decryption --query Parameter.Value --output text"
    )
    bad = [n for n, w in outcome.items() if w != "created" and w != "exists"]
    for name in bad:
        print(
            f"foldgate: {name} is not a SecureString and the stack refuses it: delete it and run "
            "foldgate stack init again",
            file=sys.stderr,
        )
    return 1 if bad else 0


def add_stack_commands(sub: Any) -> None:
    """Register ``foldgate stack init``."""
    stack = sub.add_parser("stack", help="a deployed stack: init (its two secrets)")
    ssub = stack.add_subparsers(dest="stack_command", required=True)
    init = ssub.add_parser(
        "init",
        help="create the token HMAC key and the operator key (SecureString) when absent; prints no value",
    )
    init.add_argument(
        "--prefix", help="the stack's ConfigPrefix (default: FOLDGATE_CONFIG_PREFIX or /foldgate)"
    )
    init.set_defaults(func=_cmd_init)
