"""Waiting until a page is quiet: no fetch in flight and no change to its text or to what is
hidden for a short while, so whatever the last action puts on the page is there.

`INIT_JS` goes into a page before its own scripts (`context.add_init_script`); `quiet(page)`
then waits on it. The scene's drawing does not count (it changes no text), nor do numbers a
live run keeps changing: use it on a paused run, or it waits for a gap between steps.

The page's fetch hook cannot see a module loading (`import()`: a story chapter, a lab): a page
opened after `watch_requests(page)` also counts every request Playwright sees in flight, so a
walk can use a short quiet window (`quiet(page, ms=60)`) and still wait for the module.
"""

from __future__ import annotations

import time

QUIET_MS = 150

INIT_JS = """
(() => {
  const q = { fetches: 0, changed: performance.now(), what: '' };
  window.__quiet = q;
  const fetch0 = window.fetch.bind(window);
  window.fetch = (...args) => {
    q.fetches += 1;
    q.changed = performance.now();
    return fetch0(...args).finally(() => { q.fetches -= 1; q.changed = performance.now(); });
  };
  const name = (n) => {
    const el = n && (n.nodeType === 1 ? n : n.parentElement);
    const id = el && el.closest('[id]');
    const tag = el ? el.tagName.toLowerCase() : '?';
    return `${id ? '#' + id.id + ' ' : ''}${tag}: ${(n.textContent || '').slice(0, 60)}`;
  };
  new MutationObserver((records) => {
    q.changed = performance.now();
    q.what = name(records[records.length - 1].target);
  }).observe(document, {
    subtree: true, childList: true, characterData: true,
    attributes: true, attributeFilter: ['hidden'],
  });
})();
"""


def quiet_js(ms: int = QUIET_MS) -> str:
    return (
        "window.__quiet && window.__quiet.fetches === 0"
        f" && performance.now() - window.__quiet.changed > {ms}"
    )


_IN_FLIGHT = "_quiet_requests"


def watch_requests(page) -> None:
    """Count the page's requests in flight as Playwright sees them (call before `goto`)."""
    flying: set = set()
    page.on("request", lambda r: flying.add(r))
    page.on("requestfinished", lambda r: flying.discard(r))
    page.on("requestfailed", lambda r: flying.discard(r))
    setattr(page, _IN_FLIGHT, flying)


def quiet(page, timeout: float = 30_000, ms: int = QUIET_MS) -> None:
    """Wait until the page is quiet (see the module's note); a page that never is fails with
    what kept changing."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    flying = getattr(page, _IN_FLIGHT, set())
    deadline = time.monotonic() + timeout / 1000
    try:
        while True:
            left = max(1.0, (deadline - time.monotonic()) * 1000)
            page.wait_for_function(quiet_js(ms), timeout=left)
            if not flying:
                return
            while flying:
                left = (deadline - time.monotonic()) * 1000
                if left <= 0:
                    raise PlaywrightTimeout(f"requests in flight: {[r.url for r in flying]}")
                # Until a request ends; one that fails leaves `flying` by its own event, seen
                # within a second at most.
                try:
                    page.wait_for_event("requestfinished", timeout=min(left, 1000))
                except PlaywrightTimeout:
                    pass
    except PlaywrightTimeout:
        state = page.evaluate("window.__quiet && { ...window.__quiet }")
        left = [r.url for r in flying]
        raise AssertionError(f"the page never went quiet: {state} {left}") from None
