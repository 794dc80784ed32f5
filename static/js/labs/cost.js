// Go deeper: what does training cost? Time, GPU-hours, energy and money from assumptions that
// are all on screen and all editable; the arithmetic is POST /api/labs/cost (app/labs/cost.py).
// Ends with a short, two-sided discussion from scenes/classroom.json.
//
// Beside it: expected interruptions (a day on this many GPUs, and over the run) at the rate
// Llama 3's pre-training published, and the whole-run estimate of `trainingrun estimate`
// (POST /api/labs/estimate: FLOPs from the active parameters, GPU-hours, days, energy, cost,
// interruptions and the share of time that trains despite them) with its assumptions stated.

import { num, t, tr } from '../i18n/lang.js';
import { say } from '../i18n/content.js';
import { h, local } from './dom.js';
import * as api from './api.js';

const FIELDS = () => [
  { key: 'params', label: t('Model size (parameters)'), type: 'text', hint: t('e.g. 7B, 70B, 1T') },
  { key: 'tokens', label: t('Training tokens'), type: 'text', hint: t('e.g. 300B, 2T, 15T') },
  { key: 'gpus', label: t('GPUs'), type: 'number', min: 1, step: 1 },
  { key: 'utilisation', label: t('Utilisation (share of peak actually used)'), type: 'number', min: 0.01, max: 1, step: 0.05 },
  { key: 'peak_tflops', label: t('Peak TFLOP/s per GPU (BF16, dense)'), type: 'number', min: 1, step: 1 },
  { key: 'power_w', label: t('Power per GPU (W)'), type: 'number', min: 1, step: 10 },
  { key: 'pue', label: t('PUE: data-centre overhead'), type: 'number', min: 1, max: 5, step: 0.05 },
  { key: 'price_per_gpu_hour', label: t('Rent, $ per GPU-hour (rough 2026)'), type: 'number', min: 0, step: 0.1 },
  { key: 'kwh_price', label: t('Electricity, $ per kWh'), type: 'number', min: 0, step: 0.01 },
  { key: 'co2_kg_per_kwh', label: t('Grid CO2, kg per kWh'), type: 'number', min: 0, max: 10, step: 0.01 },
];
// These follow the GPU choice until someone types their own value.
const FROM_GPU = { peak_tflops: 'bf16_tflops', power_w: 'power_w', price_per_gpu_hour: 'price_per_hour' };

export function create() {
  const state = { params: '70B', tokens: '2T', gpu: 'h100-80gb', gpus: 1024, utilisation: 0.4, pue: 1.2, kwh_price: 0.1, co2_kg_per_kwh: 0.37 };
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
      const est = { params: state.params, tokens: state.tokens, gpu: state.gpu, gpus: state.gpus, mfu: state.utilisation, pue: state.pue, precision: extra.precision, co2_kg_per_kwh: state.co2_kg_per_kwh };
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
      els.error.textContent = api.checkMessage(err);
      els.inputs[err.field]?.setAttribute('aria-invalid', 'true');
    }
  }

  function mount(body, { setTitle }) {
    els = { inputs: {}, gpu: h('select', { id: 'cost-gpu', class: 'lab-input' }), outs: h('div', { class: 'cost-outs' }), assumptions: h('ul', { class: 'lab-rules' }), sources: h('p', { class: 'lab-source' }), talk: h('div', { class: 'cost-talk' }), error: h('p', { class: 'lab-error', role: 'alert' }) };
    const grid = h('div', { class: 'cost-grid' }, h('label', { class: 'cost-field' }, h('span', { text: t('GPU') }), els.gpu));
    for (const f of FIELDS()) {
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
    els.active = h('input', { id: 'cost-active_params', class: 'lab-input', type: 'text', placeholder: t('e.g. 37B; empty: all'), value: extra.active_params });
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
      h('p', { class: 'lab-lede', text: t('Every assumption below can be changed. Work = 6 × parameters × tokens; the rest follows.') }),
      grid,
      els.error,
      els.outs,
      h('h3', { text: t('Assumptions') }),
      els.assumptions,
      h('h3', { text: t('The whole run, as trainingrun estimate works it out') }),
      h('div', { class: 'cost-grid' }, h('label', { class: 'cost-field' }, h('span', { text: t('Active parameters (mixture of experts)') }), els.active), h('label', { class: 'cost-field' }, h('span', { text: t('Precision') }), els.precision)),
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
      els.talk.replaceChildren(h('h3', { text: t('Is it worth it?') }), ...c.cost.paragraphs.map((p) => h('p', { text: say(p) })), h('p', { class: 'lab-note', text: say(c.cost.note) }));
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
    const { plain, money, sci } = local;
    const time = days >= 2 ? t('{n} days', { n: plain(days) }) : t('{n} hours', { n: plain(r.seconds / 3600) });
    els.outs.replaceChildren(
      out(t('Training time'), time, t('{gpus} GPUs at {pct}%', { gpus: plain(i.gpus), pct: Math.round(i.utilisation * 100) })),
      out(t('GPU-hours'), plain(r.gpu_hours), t('{flops} FLOPs of work', { flops: sci(r.flops) })),
      out(t('Energy'), r.energy_kwh >= 1000 ? t('{n} MWh', { n: plain(r.energy_kwh / 1000) }) : t('{n} kWh', { n: plain(r.energy_kwh) }), t('≈ {n} US homes for a year', { n: plain(r.homes_for_a_year) })),
      out(t('CO2'), t('{n} t', { n: plain(r.co2_tonnes) }), t('at {kg} kg per kWh', { kg: i.co2_kg_per_kwh })),
      out(t('Cost'), money(r.rental_cost), t('rent; electricity alone {money}', { money: money(r.electricity_cost) })),
      out(t('Interruptions'), t('{n} a day', { n: plain(r.interruptions_per_day) }), t("on {gpus} GPUs; ≈ {n} over the run (Llama 3's rate)", { gpus: plain(i.gpus), n: plain(r.interruptions) })),
    );
    const e = estimate;
    els.estimateError.textContent = e?.error ? api.checkMessage(e.error) : '';
    if (e && !e.error) {
      els.estimate.replaceChildren(
        out(t('Work'), t('{flops} FLOPs', { flops: sci(e.flops) }), t('6 × {active} active parameters × {tokens} tokens', { active: plain(e.active_params), tokens: plain(e.tokens) })),
        out(t('GPU-hours'), plain(e.gpu_hours), t('{precision} at {pct}% MFU', { precision: e.precision.toUpperCase(), pct: Math.round(e.mfu * 100) })),
        out(t('Days'), plain(e.days), t('on {gpus} GPUs', { gpus: plain(e.gpus) })),
        out(t('Energy'), t('{n} MWh', { n: plain(e.energy_mwh) }), t('PUE {pue}; {n} t CO2', { pue: e.pue, n: plain(e.co2_tonnes) })),
        out(t('Cost'), money(e.cost_usd), t('at ${price} per GPU-hour', { price: e.price_per_gpu_hour })),
        out(t('Interruptions'), plain(e.interruptions), t('≈ {n} a day', { n: plain(e.interruptions_per_day) })),
        goodput(e),
      );
      els.estimateRules.replaceChildren(...e.assumptions.map((a) => h('li', { text: tr(a) })));
    } else {
      els.estimate.replaceChildren();
      els.estimateRules.replaceChildren();
    }
    els.assumptions.replaceChildren(...r.assumptions.map((a) => h('li', { text: tr(a) })));
    els.sources.replaceChildren(`${t('Sources:')} `, ...r.sources.flatMap((src, k) => [...(k ? ['; '] : []), h('span', { text: tr(src) })]), '.');
  }

  // What the interruptions cost: the share of time that trains, with checkpoints at
  // Young's interval (app/labs/goodput.py).
  function goodput(e) {
    const g = e.goodput;
    const { plain } = local;
    if (!g) return out(t('Time that trains'), '0', t('interruptions come faster than a restart'));
    return out(
      t('Time that trains'),
      num(g.effective, { percent: 1 }),
      t('checkpoint every {min} min; {days} days with restarts', { min: plain(g.interval_s / 60), days: plain(g.wall_hours / 24) }),
    );
  }

  return {
    mount,
    info() {
      return result ? JSON.parse(JSON.stringify({ ...result, estimate })) : null;
    },
  };
}
