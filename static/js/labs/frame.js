// Keeping what a lab changes in sight. A lab that changes the scene names the part it changes
// (`scene: {part, view, headroom}`); while its panel is open the stage's safe area becomes the
// part of the window that neither the panel nor the HUD covers, so the view re-frames the part
// there. The HUD is measured, not assumed, so the free area follows the page's own layout at
// every size and in projector mode. On a phone the scene is a band under the top bar and the
// panel a sheet under that band: the band is the free area.

// What the HUD puts over the scene. Elements that are not displayed measure nothing.
const HUD = ['.topbar > *', '#colour-key', '.panel', '#legend', '#tour-box', '#card'];
const GAP = 16;

function shown(el) {
  if (!el || el.hidden || el.closest('[hidden]')) return null;
  const r = el.getBoundingClientRect();
  if (r.width < 1 || r.height < 1) return null;
  const cs = getComputedStyle(el);
  if (cs.visibility === 'hidden' || Number(cs.opacity) === 0) return null;
  return r;
}

// How big a part of this width-to-height shape can be drawn in the area: the fit is limited
// by whichever of the width and the (height less the headroom) runs out first.
const fitOf = (a, aspect, headroom) =>
  Math.min(Math.max(0, a.right - a.left), Math.max(0, a.bottom - a.top) * (1 - headroom) * aspect);
const overlaps = (a, r) => r.left < a.right && r.right > a.left && r.top < a.bottom && r.bottom > a.top;

/** Where the scene is drawn, in the window: the whole window, or a phone's band under the top
 * bar (the canvas's box, cut to the window). */
function sceneRect() {
  const vw = window.innerWidth;
  const vh = window.innerHeight;
  const r = shown(document.getElementById('stage'));
  if (!r) return { left: 0, top: 0, right: vw, bottom: vh };
  return { left: Math.max(0, r.left), top: Math.max(0, r.top), right: Math.min(vw, r.right), bottom: Math.min(vh, r.bottom) };
}

/**
 * The rectangle of the window left free by the panel (docked at `dock`) and the HUD, in which
 * a part of shape `aspect` (width / height on screen) is drawn largest: {left, top, right,
 * bottom} in CSS px. Each thing in the way cuts the area on the side that keeps the most.
 */
export function freeArea(panelRect, { dock = 'left', aspect = 1.6, headroom = 0 } = {}) {
  let a = sceneRect();
  // A panel over the scene takes its side; one beside it (a phone's sheet under the scene's
  // band) takes nothing.
  if (panelRect && overlaps(a, panelRect)) {
    if (dock === 'right') a.right = panelRect.left - GAP;
    else a.left = panelRect.right + GAP;
  }
  const rects = [];
  for (const sel of HUD) for (const el of document.querySelectorAll(sel)) {
    if (el.closest('.labs-root')) continue;
    const r = shown(el);
    if (r) rects.push(r);
  }
  // The top bar first, so a small thing under it does not cut the area from the side.
  rects.sort((p, q) => p.top - q.top);
  for (const r of rects) {
    if (!overlaps(a, r)) continue;
    const cuts = [
      { ...a, top: r.bottom + GAP / 2 },
      { ...a, bottom: r.top - GAP / 2 },
      { ...a, left: r.right + GAP / 2 },
      { ...a, right: r.left - GAP / 2 },
    ];
    a = cuts.reduce((best, c) => (fitOf(c, aspect, headroom) > fitOf(best, aspect, headroom) ? c : best));
  }
  return a;
}

/** The stage's safe area for a lab's panel: the free area, less `headroom` (a share of its
 * height) at the top, kept for what the lab grows above the part (the memory towers). */
export function safeAreaFor(panelRect, { dock = 'left', headroom = 0, aspect = 1.6 } = {}) {
  const a = freeArea(panelRect, { dock, aspect, headroom });
  // The stage measures its safe area from the canvas's edges.
  const c = sceneRect();
  const top = a.top + Math.max(0, a.bottom - a.top) * headroom;
  return {
    left: Math.max(0, Math.round(a.left - c.left)),
    right: Math.max(0, Math.round(c.right - a.right)),
    top: Math.max(0, Math.round(top - c.top)),
    bottom: Math.max(0, Math.round(c.bottom - a.bottom)),
  };
}

/** The lowest edge of the top bar's pieces that sit above the panel's columns, in CSS px. */
export function topClear(left, right) {
  let bottom = 0;
  for (const el of document.querySelectorAll('.topbar > *')) {
    const r = shown(el);
    if (r && r.left < right && r.right > left) bottom = Math.max(bottom, r.bottom);
  }
  return bottom;
}

/** The right edge of a left-column HUD panel sticking out a little past the lab panel's
 * right edge (up to `most` px), or 0. */
export function peekingRight(panelRect, most = 160) {
  let right = 0;
  for (const el of document.querySelectorAll('.panel')) {
    if (el.closest('.labs-root')) continue;
    const r = shown(el);
    if (!r || r.left >= panelRect.right || r.left > panelRect.left + 40) continue;
    if (r.right > panelRect.right && r.right - panelRect.right <= most) right = Math.max(right, r.right);
  }
  return right;
}
