// Part cards: the name and one-line description from the scene data, what the part is and
// why training a model needs it (also scene data), then the live numbers that part is
// responsible for, refreshed on every step while the card is open.

import { t } from '../i18n/lang.js';
import { el, fmtBytes, fmtCount, fmtInt, fmtLoss } from './format.js';
import { lastProbe, liveValues } from './live.js';

// Part ids by number, in case a scene names its parts differently.
const BY_NUMBER = ['', 'datalake', 'loaders', 'gpus', 'fabric', 'ring', 'model', 'checkpoints'];

function liveFacts(kind, store) {
  const s = store.state;
  const v = liveValues(store);
  const step = s.step;
  const cfg = s.hello?.config;
  switch (kind) {
    case 'datalake':
      return [
        ['samples per epoch', v.samples_per_epoch],
        ['batches per epoch', v.batches_per_epoch],
        ['epoch', v.epoch],
        ['vocabulary', `${v.vocab} words`],
      ];
    case 'loaders':
      return [
        ['worker threads', v.workers],
        ['batches ready', [v.queue_depth, ' of ', v.queue_capacity]],
        ['GPUs waited for data', step?.loader ? (step.loader.waited ? 'yes, this step' : 'no') : '–'],
        ['batch in epoch', step?.loader ? `${fmtInt(step.loader.batch_in_epoch)} / ${fmtInt(step.loader.batches_per_epoch)}` : '–'],
      ];
    case 'gpus': {
      const m = step?.memory?.[0];
      return [
        ['GPUs', `${v.gpus} (${fmtCount(s.hello?.topology?.servers?.length ?? cfg?.servers, 'server')} × ${v.gpus_per_server})`],
        ['memory used per GPU', m ? [fmtBytes(m.total), ' of ', fmtBytes(m.capacity)] : '–'],
        ['of which weights / grads / optimizer', m ? `${fmtBytes(m.weights)} / ${fmtBytes(m.grads)} / ${fmtBytes(m.optimizer)}` : '–'],
        ['down right now', s.failedGpus.size ? [...s.failedGpus].join(', ') : 'none'],
      ];
    }
    case 'fabric': {
      const links = step?.ring?.links ?? [];
      const facts = [['switches', `${v.leaves} leaf · ${v.spines} spine`]];
      for (const l of links) facts.push([`${l.kind} traffic this step`, `${fmtBytes(l.bytes)} over ${fmtCount(l.hops, 'hop')}`]);
      return facts;
    }
    case 'ring':
      return [
        ['bytes sent this step (all GPUs)', v.ring_bytes_total],
        ['passes', v.ring_passes],
        ['sent by each GPU', v.ring_bytes_per_gpu],
        ['busiest link', v.busiest_link],
        ['simulated time', v.sim_allreduce],
      ];
    case 'model': {
      const probe = step?.probe ?? lastProbe(s);
      const top = probe?.top?.[0];
      return [
        ['parameters', v.params],
        ['loss', fmtLoss(step?.loss)],
        ['after “Once upon a”', top ? `${top.token} (${Math.round(top.p * 100)}%)` : '…', { model: true }],
        ['copies', `${v.gpus} (data parallel: one per GPU)`],
      ];
    }
    case 'checkpoints':
      return [
        ['last saved step', v.checkpoint_step],
        ['size', v.checkpoint_bytes],
        ['kept on disk', v.checkpoints],
        ['saved every', t(['{n} step', '{n} steps'], { n: cfg?.checkpoint_every ?? '–' }, cfg?.checkpoint_every)],
        ['rollbacks so far', v.restarts],
      ];
    default:
      return [];
  }
}

export function mountCards(store) {
  const card = document.getElementById('card');
  const num = document.getElementById('card-number');
  const title = document.getElementById('card-title');
  const desc = document.getElementById('card-desc');
  const whyBox = document.getElementById('card-why');
  const whatText = document.getElementById('card-what-text');
  const whyText = document.getElementById('card-why-text');
  const facts = document.getElementById('card-facts');
  document.getElementById('card-close').addEventListener('click', () => close());

  let parts = [];
  let current = null;
  let pinned = false;

  function partById(id) {
    return parts.find((p) => p.id === id) ?? null;
  }

  function kindOf(part) {
    return BY_NUMBER.includes(part.id) ? part.id : BY_NUMBER[part.number] ?? part.id;
  }

  function render() {
    const part = partById(current);
    if (!part) return;
    num.textContent = String(part.number);
    title.textContent = part.name;
    desc.textContent = part.description ?? '';
    whatText.textContent = part.what ?? '';
    whyText.textContent = part.why ?? '';
    whatText.previousElementSibling.hidden = !part.what;
    whyText.previousElementSibling.hidden = !part.why;
    whyBox.hidden = !part.what && !part.why;
    const rows = liveFacts(kindOf(part), store);
    // Static facts from the scene data come after the live ones.
    for (const f of part.facts ?? part.card?.facts ?? []) {
      if (typeof f === 'string') rows.push(['', f]);
      else if (f && typeof f === 'object') rows.push([f.label ?? f.name ?? '', String(f.value ?? f.text ?? '')]);
    }
    facts.replaceChildren();
    // A value in parts ([a, ' of ', b]) reads as one line; its words are found one by one in
    // another language. The model's own words (its next-word guess) stay as they are.
    for (const [k, val, how] of rows) {
      const model = how?.model ? { translate: 'no', lang: 'en' } : {};
      const dd = Array.isArray(val) ? el('dd', model, ...val.map(String)) : el('dd', { ...model, text: val });
      facts.append(el('dt', { text: k }), dd);
    }
  }

  function open(id, pin = false) {
    if (!partById(id)) return;
    current = id;
    pinned = pinned || pin;
    card.hidden = false;
    card.dataset.part = id;
    render();
    store.set('card', id);
  }

  function close() {
    current = null;
    pinned = false;
    card.hidden = true;
    store.set('card', null);
  }

  store.on('step', () => current && render());
  store.on('snapshot', () => current && render());

  return {
    setParts(list) {
      parts = list ?? [];
    },
    open,
    close,
    hover(id) {
      if (pinned) return;
      if (id) open(id, false);
      else close();
    },
    get current() {
      return current;
    },
  };
}
