// "Swap it": other ways to share the job. Picking a card sets store.state.placement, and the
// scene re-arranges which GPU holds what. Closing the panel goes back to data parallel, which
// is what the live run really does. Card text lives in scenes/classroom.json.

import { h } from './dom.js';
import * as api from './api.js';

export function create({ store }) {
  let els = null;
  let cards = [];

  function choose(placement) {
    store?.set('placement', placement);
    sync();
  }

  function sync() {
    if (!els) return;
    const now = store?.state.placement ?? 'data';
    for (const b of els.list.querySelectorAll('.swap-card')) {
      b.setAttribute('aria-pressed', String(b.dataset.placement === now));
    }
    const card = cards.find((c) => c.placement === now);
    els.detail.replaceChildren(...(card ? detail(card) : []));
  }

  function detail(c) {
    return [
      h('h3', { text: c.title }),
      h('p', { text: c.summary }),
      h('dl', { class: 'swap-dl' },
        h('dt', { text: 'Memory' }), h('dd', { text: c.memory }),
        h('dt', { text: 'Communication' }), h('dd', { text: c.communication }),
        h('dt', { text: 'Speed' }), h('dd', { text: c.speed }),
      ),
      h('p', { class: 'lab-note', text: c.placement === 'data' ? 'This is how the live run on screen trains.' : 'The scene shows where the model would live; the live run itself stays data parallel.' }),
    ];
  }

  function mount(body) {
    els = {
      lede: h('p', { class: 'lab-lede', text: 'The same job can be shared out in different ways. Pick one and watch where the model lives on the GPUs.' }),
      list: h('div', { class: 'swap-list', role: 'group', 'aria-label': 'Ways to share the job' }),
      detail: h('div', { class: 'swap-detail', 'aria-live': 'polite' }),
      error: h('p', { class: 'lab-error', role: 'alert' }),
    };
    body.append(els.lede, els.list, els.detail, els.error);
    api.content().then((c) => {
      cards = c.swap_cards;
      els.list.replaceChildren(...cards.map((card) => {
        const b = h('button', { type: 'button', class: `swap-card place-${card.placement}`, 'data-placement': card.placement, 'aria-pressed': 'false', onclick: () => choose(card.placement) },
          h('span', { class: 'swap-icon', 'aria-hidden': 'true' }, ...icon(card.placement)),
          h('span', { class: 'swap-title', text: card.title }),
          h('span', { class: 'swap-line', text: card.tradeoff }),
        );
        return b;
      }));
      sync();
    }).catch((err) => (els.error.textContent = `Could not load the cards (${err.message}).`));
  }

  // A tiny picture of four GPUs and what each holds: whole stacks, slices, experts, or a few.
  function icon(placement) {
    const gpu = (fill) => h('i', { class: `g ${fill}` });
    switch (placement) {
      case 'data': return [gpu('full'), gpu('full'), gpu('full'), gpu('full')];
      case 'tensor_pipeline': return [gpu('top'), gpu('top'), gpu('bottom'), gpu('bottom')];
      case 'expert': return [gpu('left'), gpu('right'), gpu('left'), gpu('right')];
      default: return [gpu('full'), gpu('off'), gpu('off'), gpu('off')];
    }
  }

  return {
    id: 'swap',
    key: 'w',
    label: 'swap it',
    kicker: 'Swap it',
    title: 'Other ways to share the job',
    // The model slabs sit on the GPU servers: frame them clear of the panel.
    scene: { part: 'gpus', view: 2, aspect: 1.8 },
    mount,
    onOpen() {
      store?.set('placementPreview', true); // show the model copies even for data parallel
      sync();
    },
    onClose() {
      store?.set('placement', 'data');
      store?.set('placementPreview', false);
    },
    info() {
      return { placement: store?.state.placement ?? null, cards: cards.map((c) => c.placement) };
    },
  };
}
