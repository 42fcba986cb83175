"""Regenerate the README's console screenshots (``make docs-screenshot``): the context-budget page of the
demo fleet (npm server-everything, the stdio demo servers and the replayed demo catalog), signed in,
in headless Debian chromium; with ``--tool`` and ``--connect`` also a tool's page after a Try it call
and the Connect page. Usage: ``python tools/console_screenshot.py docs/console-budget.png
[--tool docs/console-tool.png] [--connect docs/console-connect.png]``."""

from __future__ import annotations

import argparse
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.browser import chromium_browser  # noqa: E402 - the repository root is on the path first
from tests.procs import everything_server, foldgate_serve, replay, stdio_fleet  # noqa: E402


def main() -> int:
    """Serve the demo fleet, sign in, and save the budget page to the given path."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path, help="PNG to write")
    parser.add_argument("--tool", type=Path, help="PNG of crm__find_contact's page after a Try it call")
    parser.add_argument("--connect", type=Path, help="PNG of the Connect page")
    args = parser.parse_args()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        everything = stack.enter_context(everything_server())
        rp = stack.enter_context(replay())
        config = {
            "routing_mode": "direct",
            "direct_tool_response_mode": "auto",
            "defer_threshold": 10,
            "servers": [
                {"name": "everything", "url": everything, "timeout_s": 10},
                *stdio_fleet(tmp / "scratch"),
                *({"name": name, "url": url} for name, url in sorted(rp.urls.items())),
            ],
        }
        base = stack.enter_context(foldgate_serve(config, tmp, "--interval", "3600", timeout=90))
        key = (tmp / "operator.key").read_text().strip()
        browser = stack.enter_context(chromium_browser())
        page = browser.new_page(base_url=base, viewport={"width": 1100, "height": 1000})
        page.goto("/console/login")
        page.get_by_label("Operator key").fill(key)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url("**/console/fleet")
        page.goto(
            "/console/budget?per_page=12&wi_direct_tool_response_mode=auto&wi_defer_threshold=10&wi_listing_token_budget=4000"
        )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(args.out), full_page=True)
        print(f"wrote {args.out}")
        if args.tool is not None:
            page.goto("/console/tools/crm__find_contact")
            page.get_by_label("Arguments (JSON)").fill('{"query": "ada", "limit": 2}')
            page.get_by_role("button", name="Call crm__find_contact").click()
            page.locator("#try-result").wait_for()
            page.screenshot(path=str(args.tool), full_page=True)
            print(f"wrote {args.tool}")
        if args.connect is not None:
            page.goto("/console/connect")
            page.screenshot(path=str(args.connect), full_page=False)
            print(f"wrote {args.connect}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
