// Concept labs: the ring all-reduce, GPU memory, "swap it" parallelism cards, cost and energy,
// and classroom questions. main.js calls mountLabs once the page is up; it returns one key per
// lab (the toolbar shows a button for each, the help lists them) and closeAll() for Esc.
// One panel is open at a time; panels sit at the side so the racks stay in view.

import { h } from './dom.js';
import * as ringlab from './ringlab.js';
import * as memory from './memory.js';
import * as swapit from './swapit.js';
import * as cost from './cost.js';
import * as talk from './talk.js';

const LABS = [ringlab, memory, swapit, cost, talk];

export function mountLabs({ store, ui } = {}) {
  const root = h('div', { class: 'labs-root', id: 'labs' });
  document.body.append(root);
  let openId = null;

  const panels = LABS.map((mod) => {
    // A lab gets the store (where it puts the case the scene should show) and the page's
    // actions (to move the camera there); the scene follows the store, so no lab needs the
    // stage or the socket.
    const lab = mod.create({ store, ui });
    const titleId = `lab-${lab.id}-title`;
    const title = h('h2', { id: titleId, text: lab.title });
    const close = h('button', {
      type: 'button',
      class: 'lab-close',
      'aria-label': `Close (Esc)`,
      title: 'Close (Esc)',
      text: '×',
      onclick: () => closeAll(),
    });
    const head = h(
      'header',
      { class: 'lab-head' },
      h('div', {}, h('p', { class: 'lab-kicker', text: `${lab.kicker} · key ${lab.key.toUpperCase()}` }), title),
      close,
    );
    const body = h('div', { class: 'lab-body' });
    const panel = h(
      'section',
      { class: `lab-panel lab-${lab.id}`, id: `lab-${lab.id}`, role: 'dialog', 'aria-modal': 'false', 'aria-labelledby': titleId, hidden: true },
      head,
      body,
    );
    // The page's keys ignore Esc while someone types in a field; in a lab's own fields Esc
    // should still put the panel away.
    panel.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape' && ev.target.matches?.('input, select, textarea')) {
        ev.target.blur();
        closeAll();
      }
    });
    root.append(panel);
    return { lab, panel, body, title, mounted: false };
  });

  function closeOne(p) {
    if (p.panel.hidden) return;
    p.panel.hidden = true;
    try {
      p.lab.onClose?.();
    } catch (err) {
      console.warn(`closing lab ${p.lab.id} failed`, err);
    }
  }

  function closeAll() {
    for (const p of panels) closeOne(p);
    openId = null;
    root.classList.remove('has-open');
  }

  function open(id) {
    if (openId === id) {
      closeAll(); // the same key again puts the panel away
      return;
    }
    closeAll();
    const p = panels.find((x) => x.lab.id === id);
    p.panel.hidden = false;
    openId = id;
    root.classList.add('has-open');
    if (!p.mounted) {
      p.mounted = true;
      p.lab.mount(p.body, { setTitle: (t) => (p.title.textContent = t) });
    }
    p.lab.onOpen?.();
    p.panel.focus?.({ preventScroll: true });
  }

  // Read-only view for tests and the console (window.trainingRun belongs to the main UI).
  const hook = {};
  const getters = {
    open: () => openId,
    memoryCase: () => (store?.state.memoryCase ? JSON.parse(JSON.stringify(store.state.memoryCase)) : null),
    placement: () => store?.state.placement ?? null,
    ...Object.fromEntries(panels.map((p) => [p.lab.id, () => p.lab.info?.() ?? null])),
  };
  for (const [name, get] of Object.entries(getters)) Object.defineProperty(hook, name, { get, enumerable: true });
  Object.freeze(hook);
  Object.defineProperty(window, 'trainingRunLabs', { value: hook, configurable: true });

  return {
    keys: panels.map((p) => ({ key: p.lab.key, label: p.lab.label, open: () => open(p.lab.id) })),
    closeAll,
    open,
  };
}
