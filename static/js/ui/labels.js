// Numbered HTML labels (1–7) pinned to the scene's parts. They are DOM text, not textures,
// so they stay crisp at any size; they follow stage.anchors() after every rendered frame.

import { el } from './format.js';

export function mountLabels(store, { container, onOpen, onHover }) {
  let nodes = new Map(); // part id -> label element
  let stage = null;

  function build(spec) {
    container.replaceChildren();
    nodes = new Map();
    for (const part of spec?.parts ?? []) {
      const node = el(
        'button',
        { type: 'button', class: 'label', 'data-part': part.id, 'aria-label': `${part.number}. ${part.name}: open its card` },
        el('span', { class: 'num', text: String(part.number) }),
        el('span', { class: 'name', text: part.name }),
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
    for (const a of anchors ?? []) {
      const node = nodes.get(a.id);
      if (!node) continue;
      const show = a.visible !== false && Number.isFinite(a.x) && Number.isFinite(a.y);
      node.classList.toggle('off', !show);
      if (show) node.style.transform = `translate(${Math.round(a.x)}px, ${Math.round(a.y)}px)`;
    }
  }

  function renderToggle() {
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
