// Rewind: a scrubber over the recorded run. Drag the handle back to any recorded step to see
// that step again (its loss and figures, the probe as it stood then, and its trace played in
// the scene) while the live run keeps training; "back to live" (or the handle at the right
// end, or End) returns. Everything shown comes from the server's record: the figures and the
// probe from GET /api/steps, the drawing from GET /api/steps/{step}/trace?format=compact.
//
// store.state.rewind is null while live, else the recorded step on show:
// {step, seq, loss, grad_norm, lr, tokens_total, sim_step_s, epoch, probe, probe_step, trace,
//  recorded: true}. scene/playback.js plays it instead of live steps while it is set.

import { t } from '../i18n/lang.js';
import { loss, percent } from '../i18n/units.js';
import { el, fmtInt, fmtLoss, fmtSeconds } from './format.js';

const FETCH_DEBOUNCE_MS = 60;
// Live steps move the track's end and redraw the loss along it at most this often: the
// scene, not the scrubber, should have the main thread.
const BOUNDS_EVERY_MS = 1000;
const CACHE_MAX = 200;

async function getJson(url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return res.json();
}

export function mountRewind(store, root = document.getElementById('rewind')) {
  if (!root) return { close() {} };
  const range = el('input', {
    type: 'range',
    id: 'rewind-range',
    min: '0',
    max: '0',
    step: '1',
    value: '0',
    'aria-label': t('Rewind to a recorded step'),
  });
  const spark = el('canvas', { class: 'rewind-spark', 'aria-hidden': 'true' });
  const where = el('span', { class: 'rewind-where', id: 'rewind-where' });
  const live = el('button', { type: 'button', class: 'rewind-live', id: 'rewind-live', title: t('Back to the live run (End)') }, t('back to live'));
  const title = el('h2', {}, t('Rewind'));
  const head = el('div', { class: 'panel-head' }, title, where);
  const figures = el('dl', { class: 'rewind-figures', id: 'rewind-figures' });
  const probe = el('div', { class: 'rewind-probe', id: 'rewind-probe' });
  const note = el('p', { class: 'hint rewind-note', id: 'rewind-note' });
  const detail = el('div', { class: 'rewind-detail', id: 'rewind-detail', hidden: true }, figures, probe, note, live);
  const track = el('div', { class: 'rewind-track' }, spark, range);
  root.append(head, detail, track);

  const cache = new Map(); // step -> recorded step (figures, probe, trace)
  let first = null; // lowest recorded step of the run
  let kept = []; // steps whose checkpoints are on disk
  let wanted = null; // the step the handle points at while rewound
  let timer = null;
  let request = 0;
  let dragging = false; // the track holds still under a pressed handle
  let boundsTimer = null;
  let savedColour = null;
  let sparkKey = '';

  const liveStep = () => store.state.status?.step ?? store.state.step?.step ?? null;

  function setBounds() {
    if (dragging) return;
    const top = liveStep();
    const hist = store.state.history;
    const low = first ?? (hist.length ? hist[0].step : top);
    if (top === null || low === null) return;
    range.min = String(Math.max(0, Math.min(low, top)));
    range.max = String(top);
    if (!store.state.rewind && wanted === null) range.value = String(top);
    drawSpark();
    renderWhere();
  }

  function renderWhere() {
    const r = store.state.rewind;
    const top = liveStep();
    root.dataset.state = r ? 'rewound' : wanted !== null ? 'loading' : 'live';
    if (r) where.textContent = t('step {step} · live run at {live}', { step: r.step, live: top });
    else if (wanted !== null) where.textContent = t('step {step}…', { step: wanted });
    else where.textContent = top === null ? '' : t('live · drag back to any of {n} recorded steps', { n: top - Number(range.min) + 1 });
  }

  function drawSpark() {
    const hist = store.state.history;
    const w = spark.clientWidth;
    const h = spark.clientHeight;
    if (!w || !h) return;
    const last = hist.length ? hist[hist.length - 1] : null;
    const key = `${w}x${h}:${range.min}-${range.max}:${hist.length}:${last?.seq}:${kept.length}`;
    if (key === sparkKey) return;
    sparkKey = key;
    const dpr = window.devicePixelRatio || 1;
    if (spark.width !== Math.round(w * dpr)) spark.width = Math.round(w * dpr);
    if (spark.height !== Math.round(h * dpr)) spark.height = Math.round(h * dpr);
    const g = spark.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    const lo = Number(range.min);
    const hi = Number(range.max);
    if (!(hi > lo) || hist.length < 2) return;
    // The handle's centre runs from half a thumb in from each end (the range's own geometry).
    const thumb = 18;
    const x = (step) => thumb / 2 + ((step - lo) / (hi - lo)) * (w - thumb);
    let top = -Infinity;
    let bottom = Infinity;
    for (const p of hist) {
      top = Math.max(top, p.loss);
      bottom = Math.min(bottom, p.loss);
    }
    const span = top - bottom || 1;
    g.strokeStyle = 'rgba(232, 238, 248, 0.55)';
    g.lineWidth = 1.5;
    g.beginPath();
    let started = false;
    for (const p of hist) {
      if (p.step < lo) continue;
      const px = x(p.step);
      const py = 3 + (1 - (p.loss - bottom) / span) * (h - 6);
      if (started) g.lineTo(px, py);
      else g.moveTo(px, py);
      started = true;
    }
    g.stroke();
    // Checkpoints kept on disk: the steps whose full weights still exist.
    savedColour ??= getComputedStyle(root).getPropertyValue('--saved').trim() || '#009e73';
    g.fillStyle = savedColour;
    for (const s of kept) if (s >= lo && s <= hi) g.fillRect(x(s) - 1, h - 6, 2, 6);
  }

  function renderFigures(r) {
    const rows = [
      ['loss', t('loss'), fmtLoss(r.loss)],
      ['gradient norm', t('gradient norm'), loss(r.grad_norm)],
      ['learning rate', t('learning rate'), Number.isFinite(r.lr) ? r.lr.toExponential(2) : '–'],
      ['tokens so far', t('tokens so far'), fmtInt(r.tokens_total)],
      ['step, simulated', t('step, simulated'), fmtSeconds(r.sim_step_s)],
      ['epoch', t('epoch'), fmtInt(r.epoch)],
    ];
    // A figure in exponent form (3.00e-4) reads the same in every language.
    figures.replaceChildren(...rows.flatMap(([k, label, v]) => [el('dt', { 'data-key': k }, label), el('dd', { 'data-key': k, translate: /\de[-+]/.test(v) ? 'no' : null }, v)]));
  }

  function renderProbe(r) {
    const p = r.probe;
    if (!p) {
      probe.replaceChildren(el('p', { class: 'hint' }, t('No probe was recorded by this step yet.')));
      return;
    }
    const top = (p.top ?? []).slice(0, 5);
    const when = r.probe_step === r.step ? t('at step {step}', { step: r.step }) : t('from step {step}, the latest before it', { step: r.probe_step });
    probe.replaceChildren(
      el('div', { class: 'rewind-probe-head' },
        el('span', { translate: 'no', lang: 'en' }, `${p.prompt} `, el('span', { class: 'blank', id: 'rewind-blank' }, top[0]?.token ?? '___')),
        el('span', { class: 'hint' }, when)),
      // The prompt and the next-word bars are the model's own English words.
      el('ol', { class: 'rewind-bars', translate: 'no', lang: 'en' },
        ...top.map((t) => el('li', {},
          el('span', { class: 'word' }, t.token),
          el('span', { class: 'track' }, el('span', { class: 'fill', style: `width:${Math.max(0.5, t.p * 100)}%` })),
          el('span', { class: 'pct' }, percent(t.p, t.p < 0.1 ? 1 : 0))))),
    );
  }

  function renderNote(r) {
    const saved = kept.filter((s) => s <= r.step);
    note.textContent = kept.includes(r.step)
      ? t('Recorded on the server as the step was trained. Its full weights are on disk: the checkpoint of step {step}.', { step: r.step })
      : saved.length
        ? t('Recorded on the server as the step was trained. Full weights are kept only at checkpoints (nearest before: step {step}); the probe is the one recorded while training.', { step: saved[saved.length - 1] })
        : t('Recorded on the server as the step was trained. Full weights are kept only at checkpoints; the probe is the one recorded while training.');
  }

  function show(r) {
    wanted = null;
    store.set('rewind', { ...r, recorded: true });
    detail.hidden = false;
    renderFigures(r);
    renderProbe(r);
    renderNote(r);
    renderWhere();
  }

  function backToLive() {
    wanted = null;
    clearTimeout(timer);
    request += 1;
    detail.hidden = true;
    store.set('rewind', null);
    setBounds();
    range.value = range.max;
    renderWhere();
  }

  async function load(step) {
    if (cache.has(step)) return cache.get(step);
    const runId = store.state.hello?.run_id;
    const q = new URLSearchParams({ from: String(step), to: String(step), limit: '20' });
    if (runId) q.set('run_id', runId);
    const page = await getJson(`/api/steps?${q}`);
    first = page.first_step ?? first;
    kept = page.checkpoints ?? kept;
    // After a rollback a step number was trained twice: the newer attempt is the one kept.
    const row = page.steps[page.steps.length - 1];
    if (!row) return null;
    let trace = null;
    try {
      const tq = new URLSearchParams({ format: 'compact' });
      if (runId) tq.set('run_id', runId);
      trace = await getJson(`/api/steps/${step}/trace?${tq}`);
    } catch {
      trace = null; // the figures still show; the scene keeps the live step
    }
    const r = { ...row, trace };
    cache.set(step, r);
    if (cache.size > CACHE_MAX) cache.delete(cache.keys().next().value);
    return r;
  }

  function goTo(step) {
    const top = liveStep();
    if (top !== null && step >= top) {
      backToLive();
      return;
    }
    wanted = step;
    renderWhere();
    clearTimeout(timer);
    const mine = ++request;
    timer = setTimeout(async () => {
      try {
        const r = await load(step);
        if (mine !== request) return; // the handle has moved on
        if (r) show(r);
        else {
          wanted = null;
          where.textContent = t('step {step} is not in the record', { step });
        }
      } catch (err) {
        if (mine !== request) return;
        wanted = null;
        where.textContent = t('could not load step {step} ({error})', { step, error: err.message });
      }
    }, FETCH_DEBOUNCE_MS);
  }

  range.addEventListener('pointerdown', () => {
    dragging = true;
  });
  window.addEventListener('pointerup', () => {
    if (!dragging) return;
    dragging = false;
    setBounds();
  });
  range.addEventListener('input', () => goTo(Number(range.value)));
  range.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') {
      ev.preventDefault();
      backToLive();
      range.blur();
    }
    // The page's own keys (arrows orbit the camera) must not also act on a focused slider.
    ev.stopPropagation();
  });
  live.addEventListener('click', backToLive);

  store.on('step', () => {
    if (boundsTimer !== null) return;
    boundsTimer = setTimeout(() => {
      boundsTimer = null;
      setBounds();
    }, BOUNDS_EVERY_MS);
  });
  store.on('snapshot', () => {
    first = null;
    setBounds();
  });
  store.on('hello', () => {
    cache.clear();
    if (store.state.rewind) backToLive();
  });
  store.on('event', (e) => {
    if (e?.kind === 'checkpoint_saved') kept = [...kept, e.detail?.step ?? e.step];
    if (e?.kind === 'run_reset') {
      cache.clear();
      first = null;
      if (store.state.rewind) backToLive();
    }
  });
  window.addEventListener('resize', drawSpark);
  // The checkpoints kept and the first recorded step, once, without waiting for a drag.
  getJson('/api/steps?limit=1')
    .then((page) => {
      first = page.first_step ?? null;
      kept = page.checkpoints ?? [];
      setBounds();
    })
    .catch(() => {});
  setBounds();
  return { goTo, backToLive };
}
