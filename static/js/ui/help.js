// The help overlay (every key, the labs' keys included, and the scene's note on what is
// honest and what is simplified), the small always-visible key legend, the colour key that
// says what each colour means, and the "how big is a real run?" box.

import { KEYMAP } from './keys.js';
import { el } from './format.js';
import { liveValues } from './live.js';
import { t, tr } from '../i18n/lang.js';
import { say } from '../i18n/content.js';

// A named key (Space, Esc, Shift+G) is said in the page's language; a letter or a digit is
// the same in every one.
const keyName = (show) => (/[A-Za-z]{2}/.test(show) ? tr(show) : show);

// One meaning per colour, everywhere (the scene uses the same ones).
const COLOUR_KEY = [
  ['forward', () => t('forward pass')],
  ['backward', () => t('backward pass')],
  ['allreduce', () => t('all-reduce')],
  ['waiting', () => t('waiting')],
  ['failure', () => t('failed')],
  ['saved', () => t('saved')],
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
      list.append(el('dt', {}, el('kbd', { text: keyName(key) })), el('dd', { text: label }));
    }
  }

  function renderLegend() {
    // The help key ends the line: the legend is a short version of what it opens.
    const help = KEYMAP.find((k) => k.keys.includes('?'));
    const items = [...KEYMAP.filter((k) => k.legend && k !== help), help];
    legend.replaceChildren();
    items.forEach((k, i) => {
      if (i) legend.append(el('span', { class: 'sep', text: ' · ', 'aria-hidden': 'true' }));
      const part = el('span', {}, el('kbd', { text: keyName(k.show) }), ` ${k.legend}`);
      if (k === help) {
        part.classList.add('more');
        part.addEventListener('click', () => actions.toggleHelp());
      }
      legend.append(part);
    });
  }

  const helpColours = document.getElementById('help-colours');
  for (const [cls, label] of COLOUR_KEY) {
    colours.append(el('span', { class: `ck ck-${cls}` }, el('i', { 'aria-hidden': 'true' }), label()));
    helpColours.append(el('span', { class: `ck ck-${cls}` }, el('i', { 'aria-hidden': 'true' }), label()));
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
    /** The scene's own note (proportions honest, details simplified), from the scene data. */
    setNote(text) {
      const note = document.getElementById('help-note');
      note.textContent = text ? say(text) : '';
      note.hidden = !text;
    },
    get isOpen() {
      return !box.hidden;
    },
  };
}

/** "How big is a real run?": typical public figures beside this run's own, live. */
export function mountHowBig(store) {
  const box = document.getElementById('howbig');
  const closeBtn = document.getElementById('howbig-close');
  closeBtn.addEventListener('click', () => close());
  box.addEventListener('click', (ev) => {
    if (ev.target === box) close();
  });

  function render() {
    const v = liveValues(store);
    for (const span of box.querySelectorAll('[data-live]')) {
      const text = v[span.dataset.live] ?? '–';
      if (span.textContent !== text) span.textContent = text;
    }
  }
  function open() {
    render();
    box.hidden = false;
    store.set('howBigOpen', true);
    closeBtn.focus({ preventScroll: true });
  }
  function close() {
    if (box.hidden) return;
    box.hidden = true;
    store.set('howBigOpen', false);
  }
  for (const name of ['hello', 'snapshot', 'step']) store.on(name, () => !box.hidden && render());
  return {
    open,
    close,
    toggle: () => (box.hidden ? open() : close()),
    setNote(text) {
      document.getElementById('howbig-note').textContent = text ? say(text) : '';
    },
    get isOpen() {
      return !box.hidden;
    },
  };
}
