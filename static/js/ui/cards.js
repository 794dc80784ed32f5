// Part cards: the name and one-line description from the scene data, what the part is and
// why training a model needs it (also scene data), then the live numbers that part is
// responsible for, refreshed on every step while the card is open. The GPU servers' card
// opens GPU 1 up close on the run this page watches, with the story's own pieces
// (story/closeup.js): its layers, walls and the live step playing through them.

import { say } from '../i18n/content.js';
import { watchedGpuCloseUp } from '../story/closeup.js';
import { t } from '../i18n/lang.js';
import { bytes, whole } from '../i18n/units.js';
import { el, fmtBytes, fmtInt, fmtLoss } from './format.js';
import { NOT_YET, lastProbe, liveValues } from './live.js';

// Part ids by number, in case a scene names its parts differently.
const BY_NUMBER = ['', 'datalake', 'loaders', 'gpus', 'fabric', 'ring', 'model', 'checkpoints'];

function liveFacts(kind, store) {
  const s = store.state;
  const v = liveValues(store);
  const step = s.step;
  const cfg = s.hello?.config;
  const topo = s.hello?.topology;
  const gpus = whole(topo?.gpus?.length ?? cfg?.gpus);
  const of = (a, b) => [a, ' ', t('of'), ' ', b];
  switch (kind) {
    case 'datalake':
      return [
        [t('samples per epoch'), v.samples_per_epoch],
        [t('batches per epoch'), v.batches_per_epoch],
        [t('epoch'), v.epoch],
        [t('vocabulary'), t('{n} words', { n: whole(s.hello?.vocab_size) })],
      ];
    case 'loaders':
      return [
        [t('worker threads'), v.workers],
        [t('batches ready'), of(v.queue_depth, v.queue_capacity)],
        [t('GPUs waited for data'), step?.loader ? (step.loader.waited ? t('yes, this step') : t('no')) : '–'],
        [t('batch in epoch'), step?.loader ? `${fmtInt(step.loader.batch_in_epoch)} / ${fmtInt(step.loader.batches_per_epoch)}` : '–'],
      ];
    case 'gpus': {
      const m = step?.memory?.[0];
      const n = topo?.servers?.length ?? cfg?.servers;
      const g = { gpus, servers: whole(n), per: whole(cfg ? cfg.gpus / cfg.servers : null) };
      return [
        [t('GPUs'), t(['{gpus} ({servers} server × {per})', '{gpus} ({servers} servers × {per})'], g, n)],
        [t('memory used per GPU'), m ? of(fmtBytes(m.total), fmtBytes(m.capacity)) : '–'],
        [t('of which weights / grads / optimizer'), m ? `${fmtBytes(m.weights)} / ${fmtBytes(m.grads)} / ${fmtBytes(m.optimizer)}` : '–'],
        [t('down right now'), s.failedGpus.size ? [...s.failedGpus].join(', ') : t('none')],
      ];
    }
    case 'fabric': {
      const links = step?.ring?.links ?? [];
      const facts = [[t('switches'), t('{leaves} leaf · {spines} spine', { leaves: whole(topo?.leaves?.length), spines: whole(topo?.spines?.length) })]];
      const words = { nvlink: t('nvlink'), leaf: t('leaf'), spine: t('spine'), core: t('core') };
      for (const l of links) {
        facts.push([t('{kind} traffic this step', { kind: words[l.kind] ?? l.kind }), t(['{bytes} over {n} hop', '{bytes} over {n} hops'], { bytes: bytes(l.bytes), n: l.hops }, l.hops)]);
      }
      return facts;
    }
    case 'ring':
      return [
        [t('bytes sent this step (all GPUs)'), v.ring_bytes_total],
        [t('passes'), v.ring_passes],
        [t('sent by each GPU'), v.ring_bytes_per_gpu],
        [t('busiest link'), v.busiest_link],
        [t('simulated time'), v.sim_allreduce],
      ];
    case 'model': {
      const probe = step?.probe ?? lastProbe(s);
      const top = probe?.top?.[0];
      return [
        [t('parameters'), v.params],
        [t('loss'), fmtLoss(step?.loss)],
        [t('after “Once upon a”'), top ? `${top.token} (${Math.round(top.p * 100)}%)` : '…', { model: true }],
        [t('copies'), t('{n} (data parallel: one per GPU)', { n: gpus })],
      ];
    }
    case 'checkpoints':
      return [
        [t('last saved step'), v[NOT_YET].has('checkpoint_step') ? t('none yet') : v.checkpoint_step],
        [t('size'), v.checkpoint_bytes],
        [t('kept on disk'), v.checkpoints],
        [t('saved every'), t(['{n} step', '{n} steps'], { n: cfg?.checkpoint_every ?? '–' }, cfg?.checkpoint_every)],
        [t('rollbacks so far'), v.restarts],
      ];
    default:
      return [];
  }
}

/** mountCards(store, {getStage}) -> {setParts, open, close, hover, current} */
export function mountCards(store, { getStage = () => null } = {}) {
  const card = document.getElementById('card');
  const num = document.getElementById('card-number');
  const title = document.getElementById('card-title');
  const desc = document.getElementById('card-desc');
  const whyBox = document.getElementById('card-why');
  const whatText = document.getElementById('card-what-text');
  const whyText = document.getElementById('card-why-text');
  const facts = document.getElementById('card-facts');
  document.getElementById('card-close').addEventListener('click', () => close());
  // GPU 1 up close, from the GPU servers' card: opened by its button, put away with the card.
  const inside = el('button', { type: 'button', id: 'card-inside', class: 'card-action', hidden: '' }, t('Look inside GPU 1'));
  facts.after(inside);
  let closeUp = null;
  function leaveInside() {
    closeUp?.leave();
    closeUp = null;
    inside.setAttribute('aria-pressed', 'false');
  }
  inside.addEventListener('click', () => {
    if (closeUp) return leaveInside();
    closeUp = watchedGpuCloseUp({ getStage, store });
    if (closeUp) inside.setAttribute('aria-pressed', 'true');
  });
  store.on('step', () => closeUp?.update());
  store.on('change:story', (on) => on && leaveInside()); // the story has GPU 1 of its own

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
    title.textContent = say(part.name);
    desc.textContent = say(part.description ?? '');
    whatText.textContent = say(part.what ?? '');
    whyText.textContent = say(part.why ?? '');
    whatText.previousElementSibling.hidden = !part.what;
    whyText.previousElementSibling.hidden = !part.why;
    whyBox.hidden = !part.what && !part.why;
    inside.hidden = kindOf(part) !== 'gpus' || Boolean(store.state.story);
    const rows = liveFacts(kindOf(part), store);
    // Static facts from the scene data come after the live ones.
    for (const f of part.facts ?? part.card?.facts ?? []) {
      if (typeof f === 'string') rows.push(['', say(f)]);
      else if (f && typeof f === 'object') rows.push([say(f.label ?? f.name ?? ''), say(String(f.value ?? f.text ?? ''))]);
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
    if (id !== current) leaveInside();
    current = id;
    pinned = pinned || pin;
    card.hidden = false;
    card.dataset.part = id;
    render();
    store.set('card', id);
  }

  function close() {
    leaveInside();
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
