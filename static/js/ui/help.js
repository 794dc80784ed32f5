// The help overlay (every key, the labs' keys included), the small always-visible key
// legend, and the colour key that says what each colour means.

import { KEYMAP } from './keys.js';
import { el } from './format.js';

// One meaning per colour, everywhere (the scene uses the same ones).
const COLOUR_KEY = [
  ['forward', 'forward pass'],
  ['backward', 'backward pass'],
  ['allreduce', 'all-reduce'],
  ['waiting', 'waiting'],
  ['failure', 'failed'],
  ['saved', 'saved'],
];

export function mountHelp(store, { getLabKeys, actions }) {
  const box = document.getElementById('help');
  const list = document.getElementById('help-keys');
  const legend = document.getElementById('legend');
  const colours = document.getElementById('colour-key');
  document.getElementById('help-close').addEventListener('click', () => close());
  box.addEventListener('click', (ev) => {
    if (ev.target === box) close();
  });

  function renderList() {
    list.replaceChildren();
    const rows = KEYMAP.map((k) => [k.show, k.label]);
    for (const lab of getLabKeys() ?? []) rows.push([lab.key.toUpperCase(), lab.label]);
    for (const [key, label] of rows) {
      list.append(el('dt', {}, el('kbd', { text: key })), el('dd', { text: label }));
    }
  }

  function renderLegend() {
    // The help key ends the line: the legend is a short version of what it opens.
    const help = KEYMAP.find((k) => k.keys.includes('?'));
    const items = [...KEYMAP.filter((k) => k.legend && k !== help), help];
    legend.replaceChildren();
    items.forEach((k, i) => {
      if (i) legend.append(el('span', { class: 'sep', text: ' · ', 'aria-hidden': 'true' }));
      const part = el('span', {}, el('kbd', { text: k.show }), ` ${k.legend}`);
      if (k === help) {
        part.classList.add('more');
        part.addEventListener('click', () => actions.toggleHelp());
      }
      legend.append(part);
    });
  }

  const helpColours = document.getElementById('help-colours');
  for (const [cls, label] of COLOUR_KEY) {
    colours.append(el('span', { class: `ck ck-${cls}` }, el('i', { 'aria-hidden': 'true' }), label));
    helpColours.append(el('span', { class: `ck ck-${cls}` }, el('i', { 'aria-hidden': 'true' }), label));
  }

  function open() {
    renderList();
    box.hidden = false;
    store.set('helpOpen', true);
    document.getElementById('help-close').focus({ preventScroll: true });
  }
  function close() {
    if (box.hidden) return;
    box.hidden = true;
    store.set('helpOpen', false);
  }
  renderLegend();
  return {
    open,
    close,
    toggle: () => (box.hidden ? open() : close()),
    get isOpen() {
      return !box.hidden;
    },
  };
}
