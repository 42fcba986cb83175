"""Record real results of the demo fleet's servers (server-everything, filesystem, memory, git, time)
into ``tests/data/guard/fleet_results.jsonl``: the texts ``foldgate bench guard`` and the tests hold
the result guard to 0 false redactions on.

Every server runs locally over stdio in a scratch folder holding a small copy of this repository's
own sources and docs (a git repository with a few commits, so git log/diff/show have real content);
nothing leaves the machine. Tools that print the process environment are never called.

    PYTHONPATH=shared .venv/bin/python tools/record_guard_fleet.py [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from foldgate.config.tenant import ServerConfig
from foldgate.upstream.client import UpstreamClient

ROOT = Path(__file__).resolve().parents[1]
NODE_BIN = ROOT / "demo" / "node_modules" / ".bin"
DEMO_BIN = ROOT / ".demo" / "venv" / "bin"
# Repository files copied into the scratch project: code, config and docs full of words like token,
# secret, key and password, which is what a guard must not mistake for credentials.
SOURCES = (
    "README.md",
    "Makefile",
    "pyproject.toml",
    "template.yaml",
    "shared/foldgate/config/tenant.py",
    "shared/foldgate/auth/tokens.py",
    "shared/foldgate/auth/secrets.py",
    "shared/foldgate/upstream/oauth/__init__.py",
    "shared/foldgate/edge/oauth.py",
    "demo/run.sh",
    "demo/package.json",
)
# Never called: they print the server's environment (which may hold this machine's credentials).
NEVER = {"printEnv", "get-env", "get_env"}


def _git(repo: Path, *args: str) -> None:
    ident = ["-c", "user.name=Ada Lovelace", "-c", "user.email=ada@example.invalid"]
    subprocess.run(["git", "-C", str(repo), *ident, *args], check=True, capture_output=True)


def scratch_project(base: Path) -> Path:
    """A git repository with the sources above, committed in three steps."""
    repo = base / "project"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for i, chunk in enumerate((SOURCES[:4], SOURCES[4:8], SOURCES[8:])):
        for name in chunk:
            source = ROOT / name
            if source.exists():
                target = repo / name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", f"step {i + 1}: add {', '.join(Path(n).name for n in chunk)}")
    # An uncommitted edit, so status and diff have something to say.
    readme = repo / "README.md"
    readme.write_text(
        readme.read_text(encoding="utf-8") + "\n## Local notes\n\nRotate the API keys monthly.\n"
    )
    return repo


def servers(base: Path, repo: Path) -> list[ServerConfig]:
    memory = base / "memory.jsonl"
    return [
        ServerConfig(name="everything", transport="stdio", command=[str(NODE_BIN / "mcp-server-everything")]),
        ServerConfig(name="filesystem", transport="stdio",
                     command=[str(NODE_BIN / "mcp-server-filesystem"), str(base)]),
        ServerConfig(name="memory", transport="stdio", command=[str(NODE_BIN / "mcp-server-memory")],
                     env={"MEMORY_FILE_PATH": str(memory)}),
        ServerConfig(name="git", transport="stdio",
                     command=[str(DEMO_BIN / "mcp-server-git"), "--repository", str(repo)]),
        ServerConfig(name="time", transport="stdio", command=[str(DEMO_BIN / "mcp-server-time")]),
    ]  # fmt: skip


def calls(base: Path, repo: Path) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """The calls made per server: what an agent does with each of them."""
    files = [str(repo / n) for n in SOURCES if (repo / n).exists()]
    return {
        "everything": [
            ("echo", {"message": "Deploy finished for build 4411 at 12:04 UTC"}),
            ("get-sum", {"a": 40, "b": 2}),
            ("get-tiny-image", {}),
            ("get-annotated-message", {"messageType": "success", "includeImage": True}),
            ("get-resource-reference", {"resourceType": "Text", "resourceId": 3}),
            ("get-resource-links", {"count": 3}),
            ("get-structured-content", {"location": "New York"}),
            ("get-structured-content", {"location": "Chicago"}),
            ("toggle-simulated-logging", {}),
            ("trigger-long-running-operation", {"duration": 1, "steps": 2}),
            ("echo", {"message": "Ignore case when you compare the names; you must pass a full path."}),
        ],
        "filesystem": [
            ("list_allowed_directories", {}),
            ("list_directory", {"path": str(repo)}),
            ("list_directory_with_sizes", {"path": str(repo / "shared/foldgate/auth")}),
            ("directory_tree", {"path": str(repo / "shared")}),
            ("search_files", {"path": str(repo), "pattern": "*.py"}),
            ("get_file_info", {"path": str(repo / "README.md")}),
            *[("read_text_file", {"path": f}) for f in files],
            ("read_text_file", {"path": str(repo / "README.md"), "head": 40}),
            ("read_multiple_files", {"paths": files[:3]}),
            (
                "write_file",
                {
                    "path": str(base / "notes.md"),
                    "content": "# Notes\n\nCall the vendor about the invoice.\n",
                },
            ),
            (
                "edit_file",
                {"path": str(base / "notes.md"), "edits": [{"oldText": "invoice", "newText": "renewal"}]},
            ),
            ("create_directory", {"path": str(base / "archive")}),
            ("move_file", {"source": str(base / "notes.md"), "destination": str(base / "archive/notes.md")}),
        ],
        "memory": [
            (
                "create_entities",
                {
                    "entities": [
                        {
                            "name": "Ada Lovelace",
                            "entityType": "person",
                            "observations": ["Wrote the first program", "Works on the payments service"],
                        },
                        {
                            "name": "payments-service",
                            "entityType": "service",
                            "observations": [
                                "Runs on Lambda",
                                "Owner: platform team",
                                "API keys rotate monthly",
                            ],
                        },
                    ]
                },
            ),
            (
                "create_relations",
                {
                    "relations": [
                        {"from": "Ada Lovelace", "to": "payments-service", "relationType": "maintains"}
                    ]
                },
            ),
            (
                "add_observations",
                {
                    "observations": [
                        {
                            "entityName": "payments-service",
                            "contents": ["p95 latency 41 ms", "Token refresh every 55 minutes"],
                        }
                    ]
                },
            ),
            ("read_graph", {}),
            ("search_nodes", {"query": "payments"}),
            ("open_nodes", {"names": ["Ada Lovelace"]}),
        ],
        "git": [
            ("git_status", {"repo_path": str(repo)}),
            ("git_log", {"repo_path": str(repo), "max_count": 10}),
            ("git_diff_unstaged", {"repo_path": str(repo)}),
            ("git_show", {"repo_path": str(repo), "revision": "HEAD"}),
            ("git_show", {"repo_path": str(repo), "revision": "HEAD~1"}),
            ("git_branch", {"repo_path": str(repo), "branch_type": "all"}),
            ("git_diff", {"repo_path": str(repo), "target": "HEAD~2"}),
        ],
        "time": [
            ("get_current_time", {"timezone": "Europe/Paris"}),
            ("get_current_time", {"timezone": "America/New_York"}),
            (
                "convert_time",
                {"source_timezone": "Asia/Tokyo", "time": "09:30", "target_timezone": "Europe/London"},
            ),
        ],
    }


# Prompts fetched from server-everything, with their arguments.
PROMPTS = (
    ("simple-prompt", {}),
    ("args-prompt", {"city": "Paris", "state": "Ile-de-France"}),
    ("resource-prompt", {"resourceType": "Text", "resourceId": "1"}),
)


async def _offerings(client: UpstreamClient, server: ServerConfig) -> list[dict[str, Any]]:
    """Every listed resource read (up to 20) and the prompts above fetched."""
    rows: list[dict[str, Any]] = []
    listed = (await client.list_offerings(server)).items
    for resource in listed.get("resource", [])[:20]:
        uri = resource["uri"]
        result = await client.request(server, "resources/read", {"uri": uri})
        rows.append({"server": server.name, "method": "resources/read", "name": uri, "result": result})
    for name, arguments in PROMPTS:
        result = await client.request(server, "prompts/get", {"name": name, "arguments": arguments})
        rows.append({"server": server.name, "method": "prompts/get", "name": name, "result": result})
    return rows


async def record(out: Path) -> int:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp).resolve()
        repo = scratch_project(base)
        client = UpstreamClient(allow_stdio=True)
        plan = calls(base, repo)
        try:
            for server in servers(base, repo):
                listed = {t["name"] for t in (await client.list_tools(server)).tools}
                for name, arguments in plan[server.name]:
                    if name in NEVER or name not in listed:
                        print(f"skipped {server.name}.{name} (not listed)")
                        continue
                    result = await client.call_tool(server, name, arguments)
                    rows.append(
                        {"server": server.name, "method": "tools/call", "name": name, "result": result}
                    )
                if server.name == "everything":
                    rows.extend(await _offerings(client, server))
        finally:
            await client.aclose()
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        # The scratch folder's path is this run's, not a fact of the results: a stable one instead.
        text = text.replace(str(base), "/srv/scratch")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "data" / "guard" / "fleet_results.jsonl")
    args = parser.parse_args()
    print(f"recorded {asyncio.run(record(args.out))} results to {args.out}")


if __name__ == "__main__":
    main()
