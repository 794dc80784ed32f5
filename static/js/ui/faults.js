// Faults at scale, from the page: a small menu that injects each kind into the live run (the
// `inject_fault` control, the same one the REST API and `trainingrun train --fault` use) on a
// chosen GPU or link, and a note under the time bar saying which faults act on the step on
// screen and what they cost in it. The costs are read from the step's own trace: the time the
// other GPUs wait for a straggler, the time every GPU waits for a stalled loader, the route a
// cut link's hop takes instead. The scene shows each where it happens (parts/gpus.js hatches
// the GPUs that wait, parts/ring.js draws the cut hop and its detour, failure.js stages a
// dead GPU).

import { activeFaults } from '../store.js';
import { num, t, tr } from '../i18n/lang.js';
import { el, fmtSeconds } from './format.js';

/** Each kind: what the menu calls it, what it does in one line, and what its target is. */
export const FAULTS = [
  { kind: 'dead', label: () => t('GPU dies'), target: 'gpu', says: () => t('The GPU stops: the run rolls back to its last checkpoint and a spare takes its place.') },
  { kind: 'straggler', label: () => t('slow GPU'), target: 'gpu', says: () => t('One GPU computes slower (heat, a bad part): every other GPU waits for it at the all-reduce.') },
  { kind: 'data_stall', label: () => t('loader stalls'), target: 'ms', says: () => t('The data loaders fall behind: every GPU waits for its batch before it can start.') },
  { kind: 'link', label: () => t('link cut'), target: 'link', says: () => t('A cable or port fails: the ring’s hop takes a longer way round through the switches.') },
];
// A stall's length to choose from, in milliseconds of simulated time.
const STALL_MS = [1, 2, 5, 20];
const STEPS = [1, 3, 5, 10];
const LINK_WORDS = { nvlink: () => 'NVLink', leaf: () => t('leaf switch'), spine: () => t('spine') };
const linkWords = (kind) => LINK_WORDS[kind]?.() ?? kind;

/** The trace's cost of a fault in one step, in words: {what, cost} (cost '' when the step
 * does not show it). */
export function faultCost(fault, step) {
  const trace = step?.trace;
  const d = fault.detail ?? {};
  const spans = trace?.spans ?? [];
  if (fault.kind === 'straggler') {
    const waits = spans.filter((s) => s.kind === 'wait' && s.lanes && !s.lanes.includes(d.gpu));
    const wait = waits.reduce((a, s) => Math.max(a, s.dur), 0);
    const others = waits.length ? waits[0].lanes.length : 0;
    return {
      what: t('GPU {gpu} computes {factor}× slower', { gpu: d.gpu + 1, factor: d.factor ?? 2 }),
      cost: wait > 0 ? t('the other {n} wait {time} for it', { n: others, time: fmtSeconds(wait) }) : '',
    };
  }
  if (fault.kind === 'data_stall') {
    const first = spans.reduce((a, s) => (a === null || s.t0 < a.t0 ? s : a), null);
    const wait = first && first.kind === 'wait' && !first.lanes ? first.dur : 0;
    return {
      what: t('the loaders stall {ms} ms', { ms: d.ms }),
      cost: wait > 0 ? t('every GPU waits {time} for its batch', { time: fmtSeconds(wait) }) : '',
    };
  }
  if (fault.kind === 'link') {
    const rings = (trace?.rings ?? []).filter((r) => r.ring.includes(d.src));
    const took = rings.length ? rings[0].links[rings[0].ring.indexOf(d.src)] : null;
    const ringS = (trace?.rings ?? []).reduce((a, r) => a + r.pass_s.reduce((x, [s, n]) => x + s * n, 0), 0);
    const around = took && took !== d.link ? t('its hop goes via the {link}', { link: linkWords(took) }) : took ? t('the other spines carry it') : '';
    return {
      what: t('link GPU {src} → GPU {dst} ({link}) cut', { src: d.src + 1, dst: d.dst + 1, link: linkWords(d.link) }),
      cost: around ? t('{around}; all-reduce {time}', { around, time: fmtSeconds(ringS) }) : '',
    };
  }
  return { what: t('GPU {gpu} dies', { gpu: d.gpu + 1 }), cost: t('the run rolls back to its last checkpoint') };
}

export function mountFaults(store, { send, overlays }) {
  const button = el('button', {
    type: 'button',
    id: 'btn-faults',
    class: 'danger',
    title: t('Inject a fault at scale: a GPU dies, a slow GPU, a stalled loader, a cut link'),
    'aria-expanded': 'false',
    'aria-controls': 'faults',
    text: t('faults…'),
    onclick: () => store.set('faultsOpen', !store.state.faultsOpen),
  });
  const runGroup = document.querySelector('#toolbar .group.run') ?? document.getElementById('toolbar');
  runGroup?.append(button);

  const kinds = el('div', { class: 'fault-kinds', role: 'radiogroup', 'aria-label': t('Kind of fault') });
  const says = el('p', { class: 'fault-says' });
  const targetLabel = el('span', { text: t('GPU') });
  const target = el('select', { id: 'fault-target' });
  const steps = el('select', { id: 'fault-steps', 'aria-label': t('Steps it lasts') });
  for (const n of STEPS) steps.append(el('option', { value: String(n), text: t(['{n} step', '{n} steps'], { n }, n) }));
  steps.value = '3';
  const go = el('button', { type: 'button', class: 'danger primary', id: 'fault-go', text: t('inject'), onclick: inject });
  const close = el('button', { type: 'button', class: 'close', 'aria-label': t('Close'), text: '×', onclick: () => store.set('faultsOpen', false) });
  const panel = el(
    'aside',
    { class: 'panel faults-panel', id: 'faults', role: 'dialog', 'aria-labelledby': 'faults-title', hidden: true },
    close,
    el('h2', { id: 'faults-title', text: t('Inject a fault') }),
    el('p', { class: 'hint', text: t('At thousands of GPUs, something always breaks. Try it on the live run:') }),
    kinds,
    says,
    el('div', { class: 'fault-row' }, el('label', { for: 'fault-target' }, targetLabel), target),
    el('div', { class: 'fault-row' }, el('label', { for: 'fault-steps', text: t('for') }), steps, go),
  );
  document.body.append(panel);

  let kind = 'straggler';
  const kindButtons = FAULTS.map((f) => {
    const b = el('button', {
      type: 'button',
      role: 'radio',
      'data-kind': f.kind,
      text: f.label(),
      onclick: () => {
        kind = f.kind;
        renderForm();
      },
    });
    kinds.append(b);
    return b;
  });

  function renderForm() {
    const f = FAULTS.find((x) => x.kind === kind);
    for (const b of kindButtons) b.setAttribute('aria-checked', String(b.dataset.kind === kind));
    says.textContent = f.says();
    const hello = store.state.hello;
    const keep = target.value;
    const options = [];
    if (f.target === 'gpu') {
      targetLabel.textContent = t('GPU');
      for (const g of hello?.topology?.gpus ?? []) options.push([g.id, t('GPU {gpu} (server {server})', { gpu: g.id + 1, server: g.server + 1 })]);
    } else if (f.target === 'link') {
      targetLabel.textContent = t('link');
      for (const l of hello?.topology?.ring_links ?? []) {
        options.push([l.src, t('GPU {src} → GPU {dst} ({link})', { src: l.src + 1, dst: l.dst + 1, link: linkWords(l.kind) })]);
      }
    } else {
      targetLabel.textContent = t('stall');
      for (const ms of STALL_MS) options.push([ms, `${num(ms)} ms`]);
    }
    target.replaceChildren(...options.map(([v, text]) => el('option', { value: String(v), text })));
    if (options.some(([v]) => String(v) === keep)) target.value = keep;
    steps.disabled = kind === 'dead';
    const canControl = hello?.can_control !== false;
    go.setAttribute('aria-disabled', String(!canControl));
    go.title = canControl
      ? t('Inject it from the next step')
      : t('Only the presenter can inject a fault: open the page with the presenter’s link (it carries the token)');
  }

  function inject() {
    if (store.state.hello?.can_control === false) {
      overlays.toast(go.title, 'info', 5000);
      return;
    }
    const msg = {
      type: 'control',
      action: 'inject_fault',
      kind,
      target: Number(target.value),
      steps: kind === 'dead' ? 1 : Number(steps.value),
    };
    if (!send(msg)) overlays.toast(t('Not connected to the run, so that was not sent'), 'error');
  }

  // The note under the time bar: the faults acting on the step on screen, and those to come.
  const note = el('ul', { class: 'fault-note', id: 'fault-note', 'aria-live': 'polite', hidden: true });
  const bar = document.getElementById('timebar');
  bar?.before(note);

  function renderNote() {
    const s = store.state;
    const step = s.lens ? null : s.step;
    const now = step?.step ?? s.status?.step ?? null;
    const acting = activeFaults(s.faults, step?.step).filter((f) => f.kind !== 'dead');
    const coming = (s.faults ?? []).filter((f) => !f.done && now !== null && f.start > now);
    const rows = [
      ...acting.map((f) => {
        const c = faultCost(f, step);
        return el('li', { 'data-kind': f.kind, class: 'acting' }, el('strong', { text: `Fault: ${c.what}` }), c.cost ? ` — ${c.cost}` : '');
      }),
      ...coming.map((f) => {
        const c = faultCost(f, null);
        return el('li', { 'data-kind': f.kind, class: 'coming' }, `Step ${fmtInt(f.start)}: ${c.what}`);
      }),
    ];
    note.replaceChildren(...rows);
    note.hidden = rows.length === 0;
    document.querySelector('.time-panel')?.classList.toggle('faulted', acting.length > 0);
  }

  function renderOpen() {
    const open = store.state.faultsOpen;
    panel.hidden = !open;
    button.setAttribute('aria-expanded', String(open));
    button.setAttribute('aria-pressed', String(open));
    if (open) renderForm();
  }

  store.on('hello', () => {
    renderForm();
    renderNote();
  });
  store.on('snapshot', renderNote);
  store.on('step', renderNote);
  store.on('change:faults', renderNote);
  store.on('change:lens', renderNote);
  store.on('change:faultsOpen', renderOpen);
  document.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape' && store.state.faultsOpen) store.set('faultsOpen', false);
  });
  store.on('event', (e) => {
    if (e?.kind === 'fault_injected') overlays.toast(tr(e.message), 'warn', 6000);
  });
  renderForm();
  renderOpen();
  return {
    open: () => store.set('faultsOpen', true),
    close: () => store.set('faultsOpen', false),
  };
}
