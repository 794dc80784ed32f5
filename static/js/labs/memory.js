// GPU memory calculator: model size x bytes per number = memory. The answer comes from
// /api/labs/memory (the same Python as `trainingrun memory`), and the chosen case fills the
// GPU memory walls in the 3D scene through store.state.memoryCase (cleared on close): first
// the whole training state on one GPU (it towers over the wall), then, with "spread over N
// GPUs", each GPU's share of it (the walls come back below the line).

import { t, tr } from '../i18n/lang.js';
import { say } from '../i18n/content.js';
import { whole } from '../i18n/units.js';
import { h, local } from './dom.js';
import * as api from './api.js';
import { RECOMPUTED } from '../ui/hud.js';

export function create({ store }) {
  const state = { params: '70B', precision: 'bf16', gpu: 'h100-80gb', traffic: 'rule' };
  // Models whose shape is published and the traffic to try (from /api/labs/options): with
  // one of those models, serving counts the key/value cache of that traffic.
  let shapes = [];
  let traffic = [];
  let models = {}; // the size chips' counts, {'70B': 70e9, ...}, from the same options
  const shapeOf = () => shapes.find((x) => x.params === models[String(state.params).trim().toUpperCase()]) ?? null;
  function request() {
    const { traffic: want, ...body } = state;
    const flow = traffic.find((x) => x.id === want);
    const shape = shapeOf();
    return flow && shape ? { ...body, shape: shape.id, context: flow.context, batch: flow.batch } : body;
  }
  let spread = false; // show each GPU's share over gpus_to_fit_training GPUs
  let result = null;
  let els = null;
  let seq = 0;
  let open = false;

  async function compute() {
    const mine = ++seq;
    try {
      const r = await api.post('memory', request());
      if (mine !== seq) return;
      result = r;
      els.error.textContent = '';
      els.custom.removeAttribute('aria-invalid');
      render();
      applySpread();
      showCase();
    } catch (err) {
      if (mine !== seq) return;
      els.error.textContent = api.checkMessage(err);
      if (err.field === 'params') els.custom.setAttribute('aria-invalid', 'true');
    }
  }

  const canSpread = () => Boolean(result && result.spread_case && result.gpus_to_fit_training > 1);
  const sceneGpus = () => store?.state.hello?.topology?.gpus?.length ?? 0;

  /** Put the case on show into the scene's memory walls (only while the panel is open). */
  function showCase() {
    if (!open || !result) return;
    store?.set('memoryCase', spread && canSpread() ? result.spread_case : result.memory_case);
  }

  let wantSpread = null; // a spread asked for from outside, applied once the answer is in
  function applySpread() {
    if (wantSpread === null || !result) return;
    const want = wantSpread && canSpread();
    wantSpread = null;
    if (want !== (spread && canSpread())) toggleSpread();
  }

  function toggleSpread() {
    if (!canSpread()) return;
    spread = !spread;
    renderVerdict();
    showCase();
  }

  function choice(group, value, label, onPick, title = null) {
    // GPU names are product names: the same in every language.
    const translate = group === 'gpu' ? 'no' : null;
    return h('button', { type: 'button', class: 'chip', 'data-group': group, 'data-value': value, 'aria-pressed': 'false', title, translate, text: label, onclick: () => onPick(value) });
  }

  /** "NVIDIA B200 (HGX, 180 GB)" -> "B200 180 GB": short enough for two rows of chips on a
   * small projector (the full name is the chip's tooltip and is in the answer below). */
  function shortGpu(label) {
    return label.replace('NVIDIA ', '').replace(/ SXM\d*/, '').replace(/\s*\((?:[^,)]*,\s*)?([^)]*)\)/, ' $1');
  }

  function pick(key, value) {
    state[key] = value;
    if (key === 'params') els.custom.value = value;
    syncChips();
    compute();
  }

  function syncChips() {
    const shaped = Boolean(shapeOf());
    for (const b of els.root.querySelectorAll('.chip')) {
      const group = b.dataset.group;
      // Traffic needs a published shape: other sizes keep the rule of thumb.
      const now = group === 'traffic' && !shaped ? 'rule' : state[group];
      b.setAttribute('aria-pressed', String(now === b.dataset.value));
      if (group === 'traffic' && b.dataset.value !== 'rule') {
        b.disabled = !shaped;
        b.title = shaped ? '' : t("Llama 3's shape is published for 70B and 405B: pick one of those sizes");
      }
    }
  }

  function mount(body, { setTitle }) {
    els = {
      root: body,
      lede: h('p', { class: 'lab-lede' }),
      sizes: h('div', { class: 'chips', role: 'group', 'aria-label': t('Model size') }),
      or: h('label', { class: 'custom', for: 'mem-params', text: t('or') }),
      custom: h('input', { type: 'text', class: 'lab-input', id: 'mem-params', value: state.params, 'aria-label': t('Custom model size, e.g. 30B'), inputmode: 'decimal', size: '7' }),
      precisions: h('div', { class: 'chips', role: 'group', 'aria-label': t('Precision: bytes per number') }),
      gpus: h('div', { class: 'chips', role: 'group', 'aria-label': t('GPU') }),
      traffic: h('div', { class: 'chips', role: 'group', 'aria-label': t('Serving: what the GPUs hold beside the weights') }),
      outs: h('div', { class: 'mem-outs' }),
      bar: h('div', { class: 'mem-bar', role: 'img' }),
      barKey: h('ul', { class: 'mem-key' }),
      verdict: h('b', { class: 'mem-verdict-word' }),
      onegpu: h('p', { class: 'mem-onegpu' }),
      spread: h('button', { type: 'button', class: 'lab-btn primary mem-spread', 'aria-pressed': 'false', onclick: toggleSpread }),
      spreadNote: h('p', { class: 'mem-spread-note', 'aria-live': 'polite' }),
      rules: h('ul', { class: 'lab-rules' }),
      acts: h('div', { class: 'mem-acts', hidden: true }),
      source: h('p', { class: 'lab-source' }),
      idea: h('p', { class: 'lab-idea' }),
      error: h('p', { class: 'lab-error', role: 'alert' }),
    };
    els.sizes.append(els.or, els.custom); // the chips join them when the options arrive
    els.custom.addEventListener('change', () => pick('params', els.custom.value.trim()));
    els.custom.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') pick('params', els.custom.value.trim());
    });
    body.append(
      els.lede,
      h('div', { class: 'lab-field' }, h('span', { class: 'lab-label', text: t('Model size (parameters)') }), els.sizes),
      h('div', { class: 'lab-field' }, h('span', { class: 'lab-label', text: t('GPU') }), els.gpus),
      els.error,
      // The verdict and "spread" come before the finer choices, so they are on screen
      // without scrolling on a small projector; precision changes serving only.
      h('div', { class: 'mem-verdict' }, h('div', { class: 'lab-row mem-verdict-head' }, els.verdict, els.spread), els.onegpu, els.spreadNote),
      h('div', { class: 'lab-field' }, h('span', { class: 'lab-label', text: t('Precision: bytes per number (weights and serving)') }), els.precisions),
      h('div', { class: 'lab-field' }, h('span', { class: 'lab-label', text: t('Serving: what the GPUs hold beside the weights') }), els.traffic),
      els.outs,
      h('h3', { text: t('Training memory, byte by byte') }),
      els.bar,
      els.barKey,
      els.acts,
      h('h3', { text: t('Rules of thumb used here') }),
      els.rules,
      els.source,
      els.idea,
    );
    api.content().then((c) => {
      setTitle(c.memory.title);
      els.lede.textContent = say(c.memory.lede);
      els.idea.textContent = say(c.memory.big_idea);
    }).catch(() => {});
    api.options().then((o) => {
      els.sizes.replaceChildren(...Object.keys(o.models).map((m) => choice('params', m, m, (v) => pick('params', v))), els.or, els.custom);
      els.precisions.replaceChildren(...o.precisions.map((p) => choice('precision', p.id, tr(p.label), (v) => pick('precision', v))));
      els.gpus.replaceChildren(...o.gpus.map((g) => choice('gpu', g.id, shortGpu(g.label), (v) => pick('gpu', v), g.label)));
      els.rules.replaceChildren(...o.rules.map((r) => h('li', { text: tr(r) })));
      models = o.models;
      shapes = o.shapes ?? [];
      traffic = o.traffic ?? [];
      els.traffic.replaceChildren(
        choice('traffic', 'rule', t('+20%, a rule of thumb'), (v) => pick('traffic', v)),
        ...traffic.map((x) => choice('traffic', x.id, t('{batch} × {context} tokens of keys and values', { batch: x.batch, context: x.context % 1024 ? whole(x.context) : `${x.context / 1024}K` }), (v) => pick('traffic', v))),
      );
      syncChips();
    }).catch((err) => (els.error.textContent = t('Could not load the options ({error}).', { error: err.message })));
    compute();
  }

  function out(label, value, note, cls = '') {
    return h('div', { class: `mem-out ${cls}` }, h('span', { class: 'k', text: label }), h('span', { class: 'v', text: value }), h('span', { class: 'n', text: note }));
  }

  function render() {
    const r = result;
    const usable = local.bytes(r.usable_bytes_per_gpu);
    els.outs.replaceChildren(
      out(t('Weights'), local.bytes(r.weights_bytes), t('{count} × {bytes} B', { count: local.count(r.params), bytes: r.bytes_per_param })),
      out(
        t('GPUs to answer'),
        whole(r.gpus_to_serve),
        r.kv_cache_bytes == null
          ? t('{serve} with +20% over {usable} each', { serve: local.bytes(r.serve_bytes), usable })
          : t('{serve}: the weights and {kv} of keys and values, over {usable} each', { serve: local.bytes(r.serve_bytes), kv: local.bytes(r.kv_cache_bytes), usable }),
        'gpus',
      ),
      out(t('Training memory'), local.bytes(r.training_bytes), t('{n} bytes per parameter', { n: r.training_bytes_per_param })),
      out(t('GPUs just to fit training'), whole(r.gpus_to_fit_training), t('{n} at 18 B/param', { n: r.gpus_to_fit_training_fp32_grads }), 'gpus'),
    );
    const total = r.training_bytes;
    // The parts' names come from the server in English: said in the page's language.
    const parts = r.training_parts.map((p) => t('{part} {size}', { part: tr(p.label), size: local.bytes(p.bytes) }));
    els.bar.setAttribute('aria-label', t('Training memory: {parts}', { parts: parts.join(', ') }));
    els.bar.replaceChildren(...r.training_parts.map((p) =>
      h('span', { class: `seg seg-${p.name}`, style: `flex-grow:${p.bytes / total}`, title: t('{part}: {size}', { part: tr(p.label), size: local.bytes(p.bytes) }) }, h('b', { text: `${p.bytes_per_param}` }), ' B'),
    ));
    els.barKey.replaceChildren(
      h('li', {}, h('i', { class: 'sw seg-weights' }), t('weight + gradient: 4 B ({size})', { size: local.bytes(r.training_parts[0].bytes + r.training_parts[1].bytes) })),
      h('li', {}, h('i', { class: 'sw seg-master' }), t('optimizer: fp32 copy, momentum, variance: 12 B ({size})', { size: local.bytes(r.training_parts.slice(2).reduce((a, p) => a + p.bytes, 0)) })),
      h('li', { class: 'muted', text: t('With fp32 gradients the weight and its gradient take 6 B, so 18 B in all: {size}.', { size: local.bytes(r.training_bytes_fp32_grads) }) }),
    );
    renderActivations(r.activations);
    const frac = r.one_gpu_fraction;
    els.verdict.className = `mem-verdict-word ${r.fits_one_gpu ? 'fits' : 'nofit'}`;
    els.verdict.textContent = r.fits_one_gpu ? t('Fits on one GPU.') : t("Doesn't fit on one GPU.");
    const one = { gpu: r.gpu_label.replace('NVIDIA ', ''), times: local.sig3(frac), share: local.sig3(frac * 100), usable, pct: Math.round(r.usable_fraction * 100), total: local.bytes(r.gpu_memory_bytes) };
    els.onegpu.replaceChildren(
      frac >= 1.5
        ? t('Training it on a single {gpu} would need {times} times its {usable} usable memory ({pct}% of {total}).', one)
        : t('Training it on a single {gpu} would need {share}% of its {usable} usable memory ({pct}% of {total}).', one),
    );
    els.source.textContent = t('GPU figures: {source}. Decimal units: 1 GB = 10⁹ bytes.', { source: tr(r.source) });
    renderVerdict();
  }

  /** What training keeps for the backward pass, for a published shape of this size. */
  function renderActivations(a) {
    els.acts.hidden = !a;
    if (!a) return els.acts.replaceChildren();
    els.acts.replaceChildren(
      h('p', { class: 'lab-label', text: t('Activations kept for the backward pass, for one {sequence}-token sequence through its {layers} layers:', { sequence: a.sequence, layers: a.layers }) }),
      h('ul', { class: 'lab-rules' }, ...['none', 'selective', 'full'].map((mode) =>
        h('li', { 'data-recompute': mode }, h('b', { text: local.bytes(a.bytes[mode]) }), ' ', RECOMPUTED[mode]()))),
    );
  }

  /** The spread button and what the walls in the scene show now. */
  function renderVerdict() {
    const r = result;
    if (!r || !els) return;
    const n = r.gpus_to_fit_training;
    const on = spread && canSpread();
    els.spread.disabled = !canSpread();
    els.spread.setAttribute('aria-pressed', String(on));
    els.spread.textContent = canSpread() ? t('Spread over {n} GPUs', { n }) : t('One GPU holds it all');
    if (on) {
      const have = sceneGpus();
      const v = { n, have, more: n - have, share: local.bytes(r.training_bytes / n), usable: local.bytes(r.usable_bytes_per_gpu), pct: Math.round(r.spread_case.fraction * 100) };
      els.spreadNote.textContent =
        have > 0 && have < n
          ? t('Each of the {n} GPUs holds 1/{n} of the training state: {share} of its {usable} usable ({pct}%): it fits. This scene has {have} GPUs, so its {have} walls each show one share; picture {more} more like them. Press again for one GPU.', v)
          : have > n
            ? t("Each of the {n} GPUs holds 1/{n} of the training state: {share} of its {usable} usable ({pct}%): it fits. Here {n} of the scene's {have} GPUs hold a share; the others are free. Press again for one GPU.", v)
            : t('Each of the {n} GPUs holds 1/{n} of the training state: {share} of its {usable} usable ({pct}%): it fits. Press again for one GPU.', v);
    } else if (!r.fits_one_gpu) {
      els.spreadNote.textContent = t('The walls in the scene show it on one GPU: the hatched tower is what does not fit, drawn on a log scale (a bright tick at every ×10). Sharing it out over {n} GPUs, each holding 1/{n}, is the least that fits.', { n });
    } else {
      els.spreadNote.textContent = t('The walls in the scene show it on one GPU while this panel is open.');
    }
  }

  return {
    mount,
    onOpen() {
      open = true;
      renderVerdict();
      showCase();
    },
    onClose() {
      open = false;
      store?.set('memoryCase', null);
    },
    info() {
      return { ...state, spread: spread && canSpread(), result: result ? JSON.parse(JSON.stringify(result)) : null };
    },
    // The inputs as a presenter's page or a lesson link carries them, and applying them.
    inputs() {
      return { ...state, spread: spread && canSpread() };
    },
    setInputs(next = {}) {
      let changed = false;
      for (const key of ['params', 'precision', 'gpu']) {
        const v = next[key];
        if (typeof v === 'string' && v && v !== state[key]) {
          state[key] = v;
          changed = true;
        }
      }
      if (typeof next.spread === 'boolean') wantSpread = next.spread;
      if (!els) return;
      els.custom.value = state.params;
      syncChips();
      if (changed) compute();
      else applySpread();
    },
  };
}
