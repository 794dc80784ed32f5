// The scale field's control and note on the page: presets (the live run, 512, 4,096, 16,384,
// 131,072), any count from 8 to 131,072, the camera path button, and the note that says what
// the field is: how many servers, racks, pods and switches, that only the live group trains
// and the rest mirror it, and the fabric rule assumed. `?gpus=N` in the address opens it.
//
// mountScaleField({store, getStage}) -> {attach(stage), set(n | null), next(), fly()}
// The state is store.state.fieldGpus (null = the live scene). Every figure in the note comes
// from fieldPlan (plan.js) and the live run's topology, never typed in here.

import { mountDrawer } from '../../ui/projector.js';
import { num, t } from '../../i18n/lang.js';
import { MAX_GPUS, MIN_GPUS, PRESETS, fieldPlan, parseGpus } from './plan.js';

const KIND_WORDS = {
  forward: () => t('forward pass'),
  backward: () => t('backward pass'),
  allreduce: () => t('all-reduce'),
  wait: () => t('waiting'),
  idle: () => t('between steps'),
};
// Each tier of switches named where it floats over the field.
const TIER_WORDS = {
  leaf: (n) => t('leaf switches × {n}', { n }),
  spine: (n) => t('spine switches × {n}', { n }),
  core: (n) => t('core switches × {n}', { n }),
};

/** The network line: its tiers named and the switches in each. */
function fabricLine(plan) {
  const tiers = [t('leaf'), t('leaf, spine'), t('leaf, spine, core')][plan.tiers - 1];
  const counts = plan.tiers >= 3
    ? t('{l} leaf · {s} spine · {c} core', { l: plan.leaves, s: plan.spines, c: plan.cores })
    : plan.tiers === 2
      ? t('{l} leaf · {s} spine', { l: plan.leaves, s: plan.spines })
      : t('{n} leaf', { n: plan.leaves });
  return t(['Network: {n} tier ({tiers}): {counts} switches', 'Network: {n} tiers ({tiers}): {counts} switches'], { n: plan.tiers, tiers, counts }, plan.tiers);
}

function el(tag, attrs = {}, text = '') {
  const e = document.createElement(tag);
  for (const [k, val] of Object.entries(attrs)) e.setAttribute(k, val);
  if (text) e.textContent = text;
  return e;
}

// Tags are placed every frame; their words and visibility are written only when they change
// (a write is a change to the page: assistive technology would read it again).
function write(node, text) {
  if (node.dataset.text === text) return;
  node.dataset.text = text;
  node.textContent = text;
}

function show(node, visible) {
  if (node.hidden === !visible) return;
  node.hidden = !visible;
}

export function mountScaleField({ store, getStage }) {
  const panel = el('section', { class: 'field-panel', id: 'field-panel', 'aria-label': t('Scale of the cluster') });
  const head = el('div', { class: 'field-head' });
  head.append(el('h2', {}, t('Scale')), el('span', { class: 'hint' }, t('draw the cluster at real size')));
  const presets = el('div', { class: 'field-presets', role: 'group', 'aria-label': t('GPUs in the field') });
  const liveBtn = el('button', { type: 'button', 'data-gpus': '' }, t('live'));
  presets.append(liveBtn);
  for (const n of PRESETS) {
    const b = el('button', { type: 'button', 'data-gpus': String(n) }, num(n));
    if (n === 131072) b.title = t('100,000+ GPUs: 131,072 = 2^17');
    presets.append(b);
  }
  const custom = el('form', { class: 'field-custom', novalidate: '' });
  const input = el('input', { type: 'number', min: String(MIN_GPUS), max: String(MAX_GPUS), step: '1', id: 'field-gpus', 'aria-label': t('GPUs ({min} to {max})', { min: MIN_GPUS, max: MAX_GPUS }), placeholder: t('any count') });
  const show = el('button', { type: 'submit' }, t('show'));
  const flyBtn = el('button', { type: 'button', id: 'field-fly', title: t('From one live GPU out to the whole field and back (Z)') }, t('fly out and back (Z)'));
  custom.append(input, show, flyBtn);
  const problem = el('p', { class: 'field-problem', role: 'alert' });
  const note = el('div', { class: 'field-note', id: 'field-note' });
  note.hidden = true;
  panel.append(head, presets, custom, problem, note);
  document.body.append(panel);
  const drawer = mountDrawer(store, panel, { label: t('Scale'), head });

  const tag = el('div', { class: 'field-live-tag', id: 'field-live-tag', 'aria-hidden': 'true' });
  tag.hidden = true;
  const trail = el('ol', { class: 'field-path', id: 'field-path', 'aria-label': t('Camera path') });
  trail.hidden = true;
  const tierTags = el('div', { class: 'field-tiers', 'aria-hidden': 'true' });
  document.body.append(tag, trail, tierTags);

  let stage = null;
  let offFrame = null;

  function liveCount() {
    return store.state.hello?.topology?.gpus?.length ?? 0;
  }

  function renderNote(n) {
    const topo = store.state.hello?.topology;
    const live = liveCount();
    const plan = fieldPlan(n, { perServer: topo?.servers?.[0]?.gpus?.length ?? 8, live });
    note.replaceChildren(
      el('p', { class: 'field-big' }, t('{n} GPUs', { n: plan.gpus })),
      el('p', { class: 'field-counts' }, t(['{servers} servers of {per} · {racks} racks of {perRack} servers · {pods} pod', '{servers} servers of {per} · {racks} racks of {perRack} servers · {pods} pods'], { servers: plan.servers, per: plan.perServer, racks: plan.racks, perRack: plan.serversPerRack, pods: plan.pods }, plan.pods)),
      el('p', { class: 'field-live' }, t('Only the {live} GPUs under the beam train for real. The other {mirrored} mirror them: they show the same step, nobody computes it.', { live: plan.live, mirrored: plan.mirrored })),
      el('p', { class: 'field-mirror', id: 'field-mirror' }, ''),
      el('p', { class: 'field-fabric' }, fabricLine(plan)),
      el('p', { class: 'field-rule' }, t('Assumed: {radix}-port switches, one port per GPU, a non-blocking fat tree. Two tiers join up to {two} GPUs (k²/2), three up to {three} (k³/4), k = {k}. A rack holds {perRack} servers. Not to scale.', { radix: plan.radix, two: plan.twoTierMax, three: plan.threeTierMax, k: plan.radix, perRack: plan.serversPerRack })),
    );
  }

  function reflect() {
    const n = store.state.fieldGpus ?? null;
    for (const b of presets.querySelectorAll('button')) {
      const v = b.dataset.gpus ? Number(b.dataset.gpus) : null;
      b.setAttribute('aria-pressed', String(v === n));
    }
    liveBtn.textContent = liveCount() ? t('live ({n})', { n: liveCount() }) : t('live');
    panel.classList.toggle('on', n !== null);
    note.hidden = n === null;
    flyBtn.disabled = n === null;
    if (n !== null) renderNote(n);
    else {
      tag.hidden = true;
      trail.hidden = true;
      tierTags.replaceChildren();
    }
  }

  function syncAddress(n) {
    try {
      const url = new URL(window.location.href);
      if (n === null) url.searchParams.delete('gpus');
      else url.searchParams.set('gpus', String(n));
      history.replaceState(history.state, '', `${url.pathname}${url.search}${url.hash}`);
    } catch {
      // an address we cannot rewrite is no reason to fail
    }
  }

  function set(n) {
    const value = n === null || n === undefined ? null : parseGpus(n);
    if (n !== null && n !== undefined && value === null) {
      problem.textContent = t('Choose a whole number of GPUs from {min} to {max}', { min: MIN_GPUS, max: MAX_GPUS });
      return false;
    }
    problem.textContent = '';
    store.set('fieldGpus', value);
    syncAddress(value);
    return true;
  }

  function next() {
    const n = store.state.fieldGpus ?? null;
    const order = [null, ...PRESETS];
    const i = order.indexOf(n);
    set(order[(i + 1) % order.length]);
  }

  function fly() {
    if ((store.state.fieldGpus ?? null) === null) set(PRESETS[0]);
    return stage?.fieldPath?.();
  }

  function onFrame() {
    if (!stage || (store.state.fieldGpus ?? null) === null) return;
    const info = stage.fieldInfo();
    if (!info?.on) return;
    const b = info.beacon;
    show(tag, b.visible);
    if (b.visible) {
      write(tag, t(['live: {n} GPU training', 'live: {n} GPUs training'], { n: info.plan.live }, info.plan.live));
      tag.style.transform = `translate(${b.x}px, ${b.y}px) translate(-50%, -120%)`;
    }
    // Each tier of the network named where it floats (hidden when off screen).
    if (tierTags.childElementCount !== info.tiers.length) {
      tierTags.replaceChildren(...info.tiers.map(() => el('span', { class: 'field-tier' })));
    }
    info.tiers.forEach((tier, i) => {
      const span = tierTags.children[i];
      show(span, tier.visible);
      write(span, TIER_WORDS[tier.tier]?.(tier.count) ?? '');
      span.style.transform = `translate(${tier.x}px, ${tier.y}px) translate(4px, -150%)`;
    });
    const mirror = document.getElementById('field-mirror');
    const word = (KIND_WORDS[info.mirror] ?? KIND_WORDS.idle)();
    if (mirror && mirror.dataset.kind !== info.mirror) {
      mirror.dataset.kind = info.mirror ?? 'idle';
      mirror.replaceChildren(el('span', { class: `field-swatch k-${info.mirror ?? 'idle'}` }), document.createTextNode(t('All of them now: {what}', { what: word })));
    }
    const p = info.path;
    show(trail, p.playing);
    if (p.playing) {
      if (trail.childElementCount !== info.stops.length) trail.replaceChildren(...info.stops.map((s) => el('li', { 'data-stop': s }, s)));
      // By its name, not its words: another language shows the stop in its own.
      [...trail.children].forEach((li) => li.classList.toggle('now', li.dataset.stop === p.stop));
    }
  }

  presets.addEventListener('click', (ev) => {
    const b = ev.target.closest('button');
    if (!b) return;
    set(b.dataset.gpus ? Number(b.dataset.gpus) : null);
    b.blur();
  });
  custom.addEventListener('submit', (ev) => {
    ev.preventDefault();
    if (set(input.value)) input.blur();
  });
  flyBtn.addEventListener('click', () => {
    fly();
    flyBtn.blur();
  });
  store.on('change:fieldGpus', (n) => {
    reflect();
    stage?.setField(n ?? null);
  });
  store.on('hello', () => reflect());

  const fromAddress = new URL(window.location.href).searchParams.get('gpus');
  if (fromAddress !== null && !set(fromAddress)) {
    problem.textContent = `?gpus=${fromAddress}: ${problem.textContent}`;
    drawer?.open(); // a refused address says why, drawer or not
  }
  reflect();

  return {
    attach(s) {
      stage = s;
      offFrame?.();
      offFrame = stage.onFrame(onFrame);
      if ((store.state.fieldGpus ?? null) !== null) stage.setField(store.state.fieldGpus);
    },
    set,
    next,
    fly,
  };
}
