// Go deeper: what does training cost? Time, GPU-hours, energy and money from assumptions that
// are all on screen and all editable; the arithmetic is POST /api/labs/cost (app/labs/cost.py).
// Ends with a short, two-sided discussion from scenes/classroom.json.
//
// Beside it: expected interruptions (a day on this many GPUs, and over the run) at the rate
// Llama 3's pre-training published, and the whole-run estimate of `trainingrun estimate`
// (POST /api/labs/estimate: FLOPs from the active parameters, GPU-hours, days, energy, cost,
// interruptions) with its assumptions stated.

import { h, money, plain } from './dom.js';
import * as api from './api.js';

const FIELDS = [
  { key: 'params', label: 'Model size (parameters)', type: 'text', hint: 'e.g. 7B, 70B, 1T' },
  { key: 'tokens', label: 'Training tokens', type: 'text', hint: 'e.g. 300B, 2T, 15T' },
  { key: 'gpus', label: 'GPUs', type: 'number', min: 1, step: 1 },
  { key: 'utilisation', label: 'Utilisation (share of peak actually used)', type: 'number', min: 0.01, max: 1, step: 0.05 },
  { key: 'peak_tflops', label: 'Peak TFLOP/s per GPU (BF16, dense)', type: 'number', min: 1, step: 1 },
  { key: 'power_w', label: 'Power per GPU (W)', type: 'number', min: 1, step: 10 },
  { key: 'pue', label: 'PUE: data-centre overhead', type: 'number', min: 1, max: 5, step: 0.05 },
  { key: 'price_per_gpu_hour', label: 'Rent, $ per GPU-hour (rough 2026)', type: 'number', min: 0, step: 0.1 },
  { key: 'kwh_price', label: 'Electricity, $ per kWh', type: 'number', min: 0, step: 0.01 },
];
// These follow the GPU choice until someone types their own value.
const FROM_GPU = { peak_tflops: 'bf16_tflops', power_w: 'power_w', price_per_gpu_hour: 'price_per_hour' };

export function create() {
  const state = { params: '70B', tokens: '2T', gpu: 'h100-80gb', gpus: 1024, utilisation: 0.4, pue: 1.2, kwh_price: 0.1 };
  // The estimator's own choices: the parameters each token uses (a mixture of experts uses
  // only some of them; empty: all) and the precision the maths runs in.
  const extra = { active_params: '', precision: 'bf16' };
  let estimate = null;
  const edited = new Set();
  let gpus = [];
  let result = null;
  let els = null;
  let seq = 0;

  async function compute() {
    const mine = ++seq;
    const body = { ...state };
    for (const k of Object.keys(FROM_GPU)) if (!edited.has(k)) delete body[k];
    try {
      const r = await api.post('cost', body);
      const est = { params: state.params, tokens: state.tokens, gpu: state.gpu, gpus: state.gpus, mfu: state.utilisation, pue: state.pue, precision: extra.precision };
      if (extra.active_params) est.active_params = extra.active_params;
      if (edited.has('price_per_gpu_hour')) est.price_per_gpu_hour = state.price_per_gpu_hour;
      const e = await api.post('estimate', est).catch((err) => ({ error: err }));
      if (mine !== seq) return;
      result = r;
      estimate = e;
      els.error.textContent = '';
      for (const inp of Object.values(els.inputs)) inp.removeAttribute('aria-invalid');
      render();
    } catch (err) {
      if (mine !== seq) return;
      els.error.textContent = `Check ${err.field ?? 'the input'}: ${err.message.replace(/^\w+: /, '')}`;
      els.inputs[err.field]?.setAttribute('aria-invalid', 'true');
    }
  }

  function mount(body, { setTitle }) {
    els = { inputs: {}, gpu: h('select', { id: 'cost-gpu', class: 'lab-input' }), outs: h('div', { class: 'cost-outs' }), assumptions: h('ul', { class: 'lab-rules' }), sources: h('p', { class: 'lab-source' }), talk: h('div', { class: 'cost-talk' }), error: h('p', { class: 'lab-error', role: 'alert' }) };
    const grid = h('div', { class: 'cost-grid' }, h('label', { class: 'cost-field' }, h('span', { text: 'GPU' }), els.gpu));
    for (const f of FIELDS) {
      const inp = h('input', { id: `cost-${f.key}`, class: 'lab-input', type: f.type, min: f.min, max: f.max, step: f.step, placeholder: f.hint, value: state[f.key] ?? '' });
      inp.addEventListener('change', () => {
        const raw = inp.value.trim();
        state[f.key] = f.type === 'number' ? Number(raw) : raw;
        if (f.key in FROM_GPU) edited.add(f.key);
        compute();
      });
      els.inputs[f.key] = inp;
      grid.append(h('label', { class: 'cost-field' }, h('span', { text: f.label }), inp));
    }
    els.active = h('input', { id: 'cost-active_params', class: 'lab-input', type: 'text', placeholder: 'e.g. 37B; empty: all', value: extra.active_params });
    els.precision = h('select', { id: 'cost-precision', class: 'lab-input' }, h('option', { value: 'bf16', text: 'BF16' }), h('option', { value: 'fp8', text: 'FP8' }));
    els.active.addEventListener('change', () => {
      extra.active_params = els.active.value.trim();
      compute();
    });
    els.precision.addEventListener('change', () => {
      extra.precision = els.precision.value;
      compute();
    });
    els.estimate = h('div', { class: 'cost-outs', id: 'cost-estimate' });
    els.estimateRules = h('ul', { class: 'lab-rules', id: 'cost-estimate-rules' });
    els.estimateError = h('p', { class: 'lab-error', role: 'alert' });
    els.gpu.addEventListener('change', () => {
      state.gpu = els.gpu.value;
      for (const k of Object.keys(FROM_GPU)) edited.delete(k);
      compute();
    });
    body.append(
      h('p', { class: 'lab-lede', text: 'Every assumption below can be changed. Work = 6 × parameters × tokens; the rest follows.' }),
      grid,
      els.error,
      els.outs,
      h('h3', { text: 'Assumptions' }),
      els.assumptions,
      h('h3', { text: 'The whole run, as trainingrun estimate works it out' }),
      h('div', { class: 'cost-grid' }, h('label', { class: 'cost-field' }, h('span', { text: 'Active parameters (mixture of experts)' }), els.active), h('label', { class: 'cost-field' }, h('span', { text: 'Precision' }), els.precision)),
      els.estimateError,
      els.estimate,
      els.estimateRules,
      els.sources,
      els.talk,
    );
    api.options().then((o) => {
      gpus = o.gpus;
      els.gpu.replaceChildren(...gpus.map((g) => h('option', { value: g.id, text: g.label, selected: g.id === state.gpu, translate: 'no' })));
    }).catch(() => {});
    api.content().then((c) => {
      setTitle(c.cost.title);
      els.talk.replaceChildren(h('h3', { text: 'Is it worth it?' }), ...c.cost.paragraphs.map((p) => h('p', { text: p })), h('p', { class: 'lab-note', text: c.cost.note }));
    }).catch(() => {});
    compute();
  }

  function out(label, value, note) {
    return h('div', { class: 'mem-out' }, h('span', { class: 'k', text: label }), h('span', { class: 'v', text: value }), h('span', { class: 'n', text: note }));
  }

  function render() {
    const r = result;
    const i = r.inputs;
    // Show the figures actually used, so defaults taken from the GPU are visible too.
    for (const k of Object.keys(FROM_GPU)) if (!edited.has(k)) els.inputs[k].value = i[k];
    const days = r.days;
    const time = days >= 2 ? `${plain(days)} days` : `${plain(r.seconds / 3600)} hours`;
    els.outs.replaceChildren(
      out('Training time', time, `${plain(i.gpus)} GPUs at ${Math.round(i.utilisation * 100)}%`),
      out('GPU-hours', plain(r.gpu_hours), `${(r.flops).toExponential(2)} FLOPs of work`),
      out('Energy', r.energy_kwh >= 1000 ? `${plain(r.energy_kwh / 1000)} MWh` : `${plain(r.energy_kwh)} kWh`, `≈ ${plain(r.homes_for_a_year)} US homes for a year`),
      out('Cost', money(r.rental_cost), `rent; electricity alone ${money(r.electricity_cost)}`),
      out('Interruptions', `${plain(r.interruptions_per_day)} a day`, `on ${plain(i.gpus)} GPUs; ≈ ${plain(r.interruptions)} over the run (Llama 3's rate)`),
    );
    const e = estimate;
    els.estimateError.textContent = e?.error ? `Check ${e.error.field ?? 'the input'}: ${e.error.message.replace(/^\w+: /, '')}` : '';
    if (e && !e.error) {
      els.estimate.replaceChildren(
        out('Work', `${e.flops.toExponential(2)} FLOPs`, `6 × ${plain(e.active_params)} active parameters × ${plain(e.tokens)} tokens`),
        out('GPU-hours', plain(e.gpu_hours), `${e.precision.toUpperCase()} at ${Math.round(e.mfu * 100)}% MFU`),
        out('Days', plain(e.days), `on ${plain(e.gpus)} GPUs`),
        out('Energy', `${plain(e.energy_mwh)} MWh`, `PUE ${e.pue}`),
        out('Cost', money(e.cost_usd), `at $${e.price_per_gpu_hour} per GPU-hour`),
        out('Interruptions', plain(e.interruptions), `≈ ${plain(e.interruptions_per_day)} a day`),
      );
      els.estimateRules.replaceChildren(...e.assumptions.map((a) => h('li', { text: a })));
    } else {
      els.estimate.replaceChildren();
      els.estimateRules.replaceChildren();
    }
    els.assumptions.replaceChildren(...r.assumptions.map((a) => h('li', { text: a })));
    // One element per source, so a page in another language finds each one's words.
    els.sources.replaceChildren('Sources: ', ...r.sources.flatMap((src, k) => [...(k ? ['; '] : []), h('span', { text: src })]), '.');
  }

  return {
    mount,
    info() {
      return result ? JSON.parse(JSON.stringify({ ...result, estimate })) : null;
    },
  };
}
