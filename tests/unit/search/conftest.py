"""A tiny handmade catalog for ranking tests: four servers, overlapping vocabulary."""

from __future__ import annotations

import pytest

from foldgate.model.tool import Tool


def _tool(server: str, name: str, description: str, **params: str) -> Tool:
    props = {p: {"type": "string", "description": d} for p, d in params.items()}
    return Tool(
        server=server,
        name=name,
        description=description,
        input_schema={"type": "object", "properties": props},
    )


@pytest.fixture
def tiny_catalog() -> list[Tool]:
    return [
        _tool("github", "create_issue", "Open a new issue in a GitHub repository.", title="Issue title"),
        _tool("github", "list_issues", "List issues of a repository with filters.", state="open or closed"),
        _tool("github", "get_issue", "Get the details of one issue.", issue_number="The issue number"),
        _tool("github", "update_issue", "Edit the title, body or state of an issue."),
        _tool("github", "create_pull_request", "Open a pull request from a branch.", head="Source branch"),
        _tool("git", "git_log", "Show the commit logs of the local repository."),
        _tool("git", "git_status", "Show the working tree status."),
        _tool("git", "git_commit", "Record changes to the repository.", message="Commit message"),
        _tool("filesystem", "read_file", "Read the complete contents of a file.", path="Path of the file"),
        _tool(
            "filesystem", "write_file", "Create a new file or overwrite an existing one.", path="File path"
        ),
        _tool("filesystem", "list_directory", "List the entries of a directory.", path="Directory path"),
        _tool("filesystem", "delete_file", "Remove a file from disk.", path="File path"),
        _tool("slack", "send_message", "Post a message to a Slack channel.", channel="Channel id"),
        _tool("slack", "list_channels", "List the channels of the workspace."),
    ]
