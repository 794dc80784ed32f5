// Numbered DOM labels (1–7) pinned to the scene's parts, placed after every drawn frame:
// never over the GPU racks, never on one another, whole inside the window, and hidden under
// a panel (its part is out of the free room) unless it is the part the tour or story names.

import { say } from '../i18n/content.js';
import { t } from '../i18n/lang.js';
import { el } from './format.js';

export function mountLabels(store, { container, onOpen, onHover }) {
  let nodes = new Map(); // part id -> label element
  let stage = null;
  const sizes = new Map(); // part id -> [w, h] in CSS px, measured once per look
  const MARGIN = 6;
  const forget = () => sizes.clear();
  let covers = [];
  let coversAt = -Infinity;
  // Panels moved (resize, projector, tour, story): measure and place now and once settled.
  let again = null;
  function refresh() {
    forget();
    coversAt = -Infinity;
    requestAnimationFrame(place);
    clearTimeout(again);
    again = setTimeout(() => {
      coversAt = -Infinity;
      place();
    }, 600);
  }
  store.on('change:projector', refresh);
  window.addEventListener('resize', refresh);
  new MutationObserver(refresh).observe(document.body, { attributes: true, attributeFilter: ['class'] });

  function sizeOf(id, node) {
    let wh = sizes.get(id);
    if (!wh || !wh[0]) {
      wh = [node.offsetWidth, node.offsetHeight];
      sizes.set(id, wh);
    }
    return wh;
  }

  /** Where a label of size (w, h) centred at (x, y) should go: off the racks' box `avoid`
   * (below it for the GPU servers' label, else to whichever side is nearer), then inside
   * the window. */
  function settle(id, x, y, w, h, avoid, placed) {
    const vw = window.innerWidth;
    const vh = window.innerHeight;
    if (avoid) {
      const overlaps =
        x + w / 2 > avoid.left && x - w / 2 < avoid.right && y + h / 2 > avoid.top && y - h / 2 < avoid.bottom;
      if (overlaps || id === 'gpus') {
        const below = avoid.bottom + h / 2 + MARGIN;
        const above = avoid.top - h / 2 - MARGIN;
        const fitsBelow = below + h / 2 <= vh - MARGIN;
        const fitsAbove = above - h / 2 >= MARGIN;
        if (id === 'gpus') {
          // The GPU servers' label sits under its racks, centred on them; where a panel, a
          // label or the window's edge is, above them, else beside them.
          const [cx, cy] = [(avoid.left + avoid.right) / 2, (avoid.top + avoid.bottom) / 2];
          const spots = [[cx, below], [cx, above], [avoid.right + w / 2 + MARGIN, cy], [avoid.left - w / 2 - MARGIN, cy]];
          const free = ([sx, sy]) => {
            const b = { l: sx - w / 2, r: sx + w / 2, t: sy - h / 2, b: sy + h / 2 };
            const on = (o) => b.l < o.r && b.r > o.l && b.t < o.b && b.b > o.t;
            return Math.min(b.l, b.t, vw - b.r, vh - b.b) >= MARGIN && !under(b) && !placed.some(on);
          };
          [x, y] = spots.find(free) ?? [cx, fitsBelow || !fitsAbove ? below : above];
        } else {
          const nearerAbove = y < (avoid.top + avoid.bottom) / 2;
          y = (nearerAbove && fitsAbove) || !fitsBelow ? above : below;
        }
      }
    }
    x = Math.min(Math.max(x, w / 2 + MARGIN), vw - w / 2 - MARGIN);
    y = Math.min(Math.max(y, h / 2 + MARGIN), vh - h / 2 - MARGIN);
    return [x, y];
  }

  // What covers the scene: the boxes of the panels that show, measured at most twice a second
  // (reading layout on every frame would cost more than the labels).
  const COVERS = 'section.panel, #field-panel, .presenter-bar > *, .presenter-row > *, .topbar, #legend, #colour-key, .tour-box, .story-box';
  function coverBoxes() {
    const now = performance.now();
    if (now - coversAt < 500) return covers;
    coversAt = now;
    covers = [];
    for (const e of document.querySelectorAll(COVERS)) {
      if (e.closest('[hidden]') || container.contains(e)) continue;
      const r = e.getBoundingClientRect();
      if (r.width <= 0 || r.height <= 0) continue;
      const cs = getComputedStyle(e);
      if (cs.display === 'none' || cs.visibility === 'hidden') continue;
      covers.push({ l: r.left, r: r.right, t: r.top, b: r.bottom });
    }
    return covers;
  }
  const under = (box) => coverBoxes().some((o) => box.l < o.r - 1 && o.l < box.r - 1 && box.t < o.b - 1 && o.t < box.b - 1);

  function build(spec) {
    container.replaceChildren();
    nodes = new Map();
    forget();
    for (const part of spec?.parts ?? []) {
      const node = el(
        'button',
        // The name a screen reader hears holds the words the label shows ("1 Data lake"),
        // so a voice command that reads the label finds it.
        { type: 'button', class: 'label', 'data-part': part.id, 'aria-label': t('{n} {name}: open its card', { n: part.number, name: say(part.name) }) },
        el('span', { class: 'num', text: String(part.number) }),
        ' ',
        el('span', { class: 'name', text: say(part.name) }),
      );
      node.addEventListener('click', (ev) => {
        ev.stopPropagation();
        onOpen(part.id, true);
      });
      node.addEventListener('mouseenter', () => onHover(part.id));
      node.addEventListener('mouseleave', () => onHover(null));
      container.append(node);
      nodes.set(part.id, node);
    }
    place();
  }

  function place() {
    if (!stage || !store.state.labels) return;
    let anchors;
    try {
      anchors = stage.anchors();
    } catch (err) {
      console.warn('stage.anchors failed', err);
      return;
    }
    let avoid = null;
    try {
      avoid = stage.partRect?.('gpus') ?? null;
    } catch {
      avoid = null;
    }
    const placed = []; // boxes of the labels placed so far, to keep clear of
    for (const a of anchors ?? []) {
      const node = nodes.get(a.id);
      if (!node) continue;
      const show = a.visible !== false && Number.isFinite(a.x) && Number.isFinite(a.y);
      node.classList.toggle('off', !show);
      if (!show) continue;
      const [w, h] = sizeOf(a.id, node);
      let [x, y] = settle(a.id, a.x, a.y, w, h, avoid, placed);
      y = clearOf(placed, x, y, w, h, avoid);
      const box = { l: x - w / 2, r: x + w / 2, t: y - h / 2, b: y + h / 2 };
      if (!node.classList.contains('active') && under(box)) {
        node.classList.add('off');
        continue;
      }
      placed.push(box);
      node.style.transform = `translate(${Math.round(x)}px, ${Math.round(y)}px)`;
    }
  }

  /** A y for a (w x h) label at x that overlaps none of `placed` nor the racks: the nearest
   * free spot above or below, inside the window; the given y when none is found. */
  function clearOf(placed, x, y, w, h, avoid) {
    const hits = (yy) => {
      const box = { l: x - w / 2, r: x + w / 2, t: yy - h / 2, b: yy + h / 2 };
      const on = (o) => box.l < o.r && box.r > o.l && box.t < o.b && box.b > o.t;
      if (yy - h / 2 < MARGIN || yy + h / 2 > window.innerHeight - MARGIN) return true;
      if (avoid && on({ l: avoid.left, r: avoid.right, t: avoid.top, b: avoid.bottom })) return true;
      return placed.some(on);
    };
    if (!placed.some((o) => x - w / 2 < o.r && x + w / 2 > o.l && y - h / 2 < o.b && y + h / 2 > o.t)) return y;
    // Candidate spots: just above or below each label in the way, nearest first.
    const spots = placed.flatMap((o) => [o.t - h / 2 - 2, o.b + h / 2 + 2]).sort((a, b) => Math.abs(a - y) - Math.abs(b - y));
    for (const yy of spots) if (!hits(yy)) return yy;
    return y;
  }

  function renderToggle() {
    forget();
    container.hidden = !store.state.labels;
    if (store.state.labels) place();
  }
  store.on('change:labels', renderToggle);
  renderToggle();

  return {
    build,
    attach(s) {
      stage = s;
      stage.onFrame(place);
      place();
    },
    highlight(id) {
      for (const [pid, node] of nodes) node.classList.toggle('active', pid === id);
    },
    get count() {
      return nodes.size;
    },
  };
}
