"""Headless Chromium for the console's browser tests and the docs screenshot: Debian's chromium driven by
Playwright (never Playwright's downloaded browsers), and the small accessibility check run on each page."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def need_chromium() -> None:
    """Skip (with the fix) when the system chromium or the playwright package is missing."""
    if not CHROMIUM.exists() and shutil.which("chromium") is None:
        pytest.skip("Debian's chromium is not installed: run `make chromium`")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed: run `make venv`")


@contextlib.contextmanager
def chromium_browser() -> Iterator[Any]:
    """One headless browser (close it by leaving the block)."""
    # Imported here: playwright is a dev-only dependency of these tests and the screenshot tool.
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


# Runs in the page: every problem found, as text (empty when the page passes).
_A11Y_JS = """
() => {
  const problems = [];
  const controls = [...document.querySelectorAll('input, select, textarea')]
    .filter(el => el.type !== 'hidden');
  for (const el of controls) {
    const byFor = el.id && document.querySelector(`label[for="${CSS.escape(el.id)}"]`);
    const named = el.getAttribute('aria-label') || el.getAttribute('aria-labelledby');
    if (!byFor && !el.closest('label') && !named)
      problems.push(`unlabelled ${el.tagName.toLowerCase()} name=${el.name}`);
  }
  const h1 = document.querySelectorAll('h1').length;
  if (h1 !== 1) problems.push(`${h1} h1 elements`);
  let last = 0;
  for (const h of document.querySelectorAll('h1, h2, h3, h4, h5, h6')) {
    const level = Number(h.tagName[1]);
    if (level > last + 1) problems.push(`heading ${h.tagName} after h${last}: ${h.textContent.trim()}`);
    last = level;
  }
  return problems;
}
"""

_FOCUSABLE_JS = """
() => [...document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea, summary')]
  .filter(el => !el.disabled && el.getClientRects().length > 0).length
"""


def accessibility_problems(page: Any) -> list[str]:
    """Labels, one h1, heading order, and every visible focusable control reachable with Tab."""
    problems: list[str] = list(page.evaluate(_A11Y_JS))
    want = int(page.evaluate(_FOCUSABLE_JS))
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    seen: set[str] = set()
    for _ in range(want + 3):
        page.keyboard.press("Tab")
        seen.add(
            page.evaluate(
                "() => { const e = document.activeElement; if (!e || e === document.body) return '';"
                " const all = [...document.querySelectorAll('*')]; return String(all.indexOf(e)); }"
            )
        )
    seen.discard("")
    if len(seen) < want:
        problems.append(f"Tab reached {len(seen)} of {want} focusable controls")
    return problems
