"""Waiting until a page is quiet: no fetch in flight and no change to its text or to what is
hidden for a short while, so whatever the last action puts on the page is there.

`INIT_JS` goes into a page before its own scripts (`context.add_init_script`); `quiet(page)`
then waits on it. The scene's drawing does not count (it changes no text), nor do numbers a
live run keeps changing: use it on a paused run, or it waits for a gap between steps.
"""

from __future__ import annotations

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

QUIET_JS = (
    "window.__quiet && window.__quiet.fetches === 0"
    f" && performance.now() - window.__quiet.changed > {QUIET_MS}"
)


def quiet(page, timeout: float = 30_000) -> None:
    """Wait until the page is quiet (see the module's note); a page that never is fails with
    what kept changing."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(QUIET_JS, timeout=timeout)
    except PlaywrightTimeout:
        state = page.evaluate("window.__quiet && { ...window.__quiet }")
        raise AssertionError(f"the page never went quiet: {state}") from None
