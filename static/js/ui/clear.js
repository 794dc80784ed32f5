// Keep one HUD panel clear of the one below it: the time panel grows with the plan card and
// the lens, and on a short window it would run into the loss chart. Its height is capped at
// the gap above the chart (measured, so every size and projector mode follows), and what
// does not fit scrolls inside the panel.

const GAP = 12;
// Every panel kept clear, re-fitted at once when the top bar moves the panels down.
const fitters = new Set();

export function keepClear(upperSel, lowerSel) {
  const upper = document.querySelector(upperSel);
  const lower = document.querySelector(lowerSel);
  if (!upper || !lower) return () => {};
  let queued = 0;
  function fit() {
    queued = 0;
    const below = lower.getBoundingClientRect();
    const above = upper.getBoundingClientRect();
    const placed = (el) => ['fixed', 'absolute'].includes(getComputedStyle(el).position);
    const stacked = !placed(upper) || !placed(lower); // the phone's layout flows them instead
    // Only when the two stand in the same column, one over the other.
    const sameColumn = below.height > 0 && above.left < below.right && below.left < above.right && below.top > above.top;
    if (stacked || !sameColumn) {
      upper.style.maxHeight = '';
      return;
    }
    upper.style.maxHeight = `${Math.max(120, Math.floor(below.top - above.top - GAP))}px`;
  }
  const later = () => {
    if (!queued) queued = requestAnimationFrame(fit);
  };
  fitters.add(fit);
  // A safety net for moves no observer reports (a panel's top changing with the page's
  // layout): check again every second; it is two rectangles.
  const timer = setInterval(later, 1000);
  const watcher = typeof ResizeObserver === 'function' ? new ResizeObserver(later) : null;
  watcher?.observe(upper);
  watcher?.observe(lower);
  // The top bar moves the upper panel down when it wraps (projector mode: see below).
  const bar = document.querySelector('.topbar');
  if (bar) watcher?.observe(bar);
  window.addEventListener('resize', later);
  const projector = new MutationObserver(later);
  projector.observe(document.body, { attributes: true, attributeFilter: ['class', 'style'] });
  later();
  return () => {
    fitters.delete(fit);
    clearInterval(timer);
    watcher?.disconnect();
    projector.disconnect();
    window.removeEventListener('resize', later);
  };
}

/** In projector mode the panels start below the top bar (--p-head): measured, because the
 * bar wraps onto more rows as the toolbar grows or the window narrows. */
export function keepBelowTopBar() {
  const bar = document.querySelector('.topbar');
  if (!bar) return () => {};
  let queued = 0;
  function fit() {
    queued = 0;
    const bottom = bar.getBoundingClientRect().bottom;
    document.body.style.setProperty('--p-head', `max(108px, 7.5vw, ${Math.ceil(bottom + 10)}px)`);
    for (const f of fitters) f(); // the panels below moved with it
  }
  const later = () => {
    if (!queued) queued = requestAnimationFrame(fit);
  };
  const watcher = typeof ResizeObserver === 'function' ? new ResizeObserver(later) : null;
  watcher?.observe(bar);
  window.addEventListener('resize', later);
  later();
  return () => {
    watcher?.disconnect();
    window.removeEventListener('resize', later);
  };
}
