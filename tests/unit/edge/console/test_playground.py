"""The search playground reads the agent's answer back: tail lines of a compact page become hits too."""

from __future__ import annotations

from foldgate.edge.console.playground import tail_entry


def test_the_playground_reads_a_compact_pages_tail_lines_back_as_hits() -> None:
    """The playground shows every hit of the answer: the tail comes as one line per tool, and a
    description holding the separator characters stays whole."""
    assert tail_entry("crm__find_contact (read): Find a contact (by name): fast.") == {
        "name": "crm__find_contact",
        "call_with": "call_tool_read",
        "description": "Find a contact (by name): fast.",
    }
