// The model close-up as an HTML panel: what the model predicts after "Once upon a" (top five
// next words with their probabilities) and 16 of its weights, re-toned as they change.
// The probe rides on every few steps, so the panel keeps the last one it saw, but never
// passes it off as current after the run has rolled back past it: then it is dimmed and
// labelled as from before the rollback until the next probe arrives.

import { t } from '../i18n/lang.js';
import { el } from './format.js';

export function mountProbe(store) {
  const bars = document.getElementById('probe-bars');
  const cells = document.getElementById('weights');
  const name = document.getElementById('weights-name');
  const when = document.getElementById('probe-step');
  const blank = document.querySelector('.probe-panel .blank');

  const rows = [];
  for (let i = 0; i < 5; i++) {
    const word = el('span', { class: 'word' });
    const fill = el('span', { class: 'fill' });
    const pct = el('span', { class: 'pct' });
    bars.append(el('li', {}, word, el('span', { class: 'track' }, fill), pct));
    rows.push({ word, fill, pct });
  }
  const weightCells = [];
  for (let i = 0; i < 16; i++) {
    const c = el('span', { class: 'w' });
    cells.append(c);
    weightCells.push(c);
  }
  let scale = 0; // largest |weight| seen, so the tones stay comparable from probe to probe
  let shownStep = null; // the step the probe on show came from
  const panel = bars.closest('.probe-panel') || bars.parentElement;

  function setStale(stale, restoredStep) {
    // Inline, so the panel's own stylesheet needs nothing new.
    for (const node of [bars, cells, blank]) node.style.opacity = stale ? '0.4' : '';
    panel.dataset.stale = stale ? 'true' : 'false';
    if (stale) when.textContent = t('from step {step}, before the rollback to {restored}', { step: shownStep, restored: restoredStep });
  }

  function render(probe, stepNo) {
    if (!probe) return;
    shownStep = Number.isFinite(stepNo) ? stepNo : null;
    setStale(false);
    const top = probe.top ?? [];
    rows.forEach((r, i) => {
      const g = top[i];
      r.word.textContent = g ? g.token : '';
      r.fill.style.width = g ? `${Math.max(0.5, g.p * 100)}%` : '0%';
      r.pct.textContent = g ? `${(g.p * 100).toFixed(g.p < 0.1 ? 1 : 0)}%` : '';
    });
    blank.textContent = top[0] ? top[0].token : '___';
    const w = probe.weights ?? [];
    for (const x of w) scale = Math.max(scale, Math.abs(x));
    weightCells.forEach((c, i) => {
      const x = w[i];
      if (x === undefined) return;
      // Lightness encodes the value (dark = negative, light = positive): no hue, because
      // hues are reserved for the phases of a step.
      const v = scale > 0 ? x / scale : 0;
      c.style.setProperty('--l', `${Math.round(50 + 40 * v)}%`);
      c.title = `${x.toFixed(4)}`;
    });
    // The weight's name is the model's own (layers.1.mlp.w1): the same in every language.
    name.replaceChildren(...(probe.weights_name ? [t('from'), ' ', el('span', { translate: 'no', lang: 'en', text: probe.weights_name })] : []));
    when.textContent = stepNo !== undefined ? t('at step {step}', { step: stepNo }) : '';
  }

  store.on('step', (msg) => {
    if (msg.probe) render(msg.probe, msg.step);
  });
  store.on('event', (e) => {
    const d = e?.detail ?? {};
    if (e?.kind !== 'restored' || (d.reason === 'resume' && !d.steps_lost)) return;
    if (shownStep !== null && Number.isFinite(d.restored_step) && shownStep > d.restored_step) {
      setStale(true, d.restored_step);
    }
  });
  store.on('snapshot', (msg) => {
    if (msg.last_step?.probe) render(msg.last_step.probe, msg.last_step.step);
  });
}
