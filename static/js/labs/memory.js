// GPU memory calculator: model size x bytes per number = memory. The answer comes from
// /api/labs/memory (the same Python as `trainingrun memory`), and the chosen case fills the
// GPU memory walls in the 3D scene through store.state.memoryCase (cleared on close).

import { h, bytes, count, sig3 } from './dom.js';
import * as api from './api.js';

export function create({ store, ui }) {
  const state = { params: '70B', precision: 'bf16', gpu: 'h100-80gb' };
  let result = null;
  let els = null;
  let seq = 0;
  let open = false;

  async function compute() {
    const mine = ++seq;
    try {
      const r = await api.post('memory', state);
      if (mine !== seq) return;
      result = r;
      els.error.textContent = '';
      els.custom.removeAttribute('aria-invalid');
      render();
      if (open) store?.set('memoryCase', r.memory_case);
    } catch (err) {
      if (mine !== seq) return;
      els.error.textContent = `Check ${err.field ?? 'the input'}: ${err.message.replace(/^\w+: /, '')}`;
      if (err.field === 'params') els.custom.setAttribute('aria-invalid', 'true');
    }
  }

  function choice(group, value, label, onPick) {
    return h('button', { type: 'button', class: 'chip', 'data-group': group, 'data-value': value, 'aria-pressed': 'false', text: label, onclick: () => onPick(value) });
  }

  function pick(key, value) {
    state[key] = value;
    if (key === 'params') els.custom.value = value;
    syncChips();
    compute();
  }

  function syncChips() {
    for (const b of els.root.querySelectorAll('.chip')) {
      b.setAttribute('aria-pressed', String(state[b.dataset.group] === b.dataset.value));
    }
  }

  function mount(body, { setTitle }) {
    els = {
      root: body,
      lede: h('p', { class: 'lab-lede' }),
      sizes: h('div', { class: 'chips', role: 'group', 'aria-label': 'Model size' }),
      custom: h('input', { type: 'text', class: 'lab-input', id: 'mem-params', value: state.params, 'aria-label': 'Custom model size, e.g. 30B', inputmode: 'decimal', size: '7' }),
      precisions: h('div', { class: 'chips', role: 'group', 'aria-label': 'Precision: bytes per number' }),
      gpus: h('div', { class: 'chips', role: 'group', 'aria-label': 'GPU' }),
      outs: h('div', { class: 'mem-outs' }),
      bar: h('div', { class: 'mem-bar', role: 'img' }),
      barKey: h('ul', { class: 'mem-key' }),
      onegpu: h('p', { class: 'mem-onegpu' }),
      rules: h('ul', { class: 'lab-rules' }),
      source: h('p', { class: 'lab-source' }),
      idea: h('p', { class: 'lab-idea' }),
      error: h('p', { class: 'lab-error', role: 'alert' }),
    };
    els.custom.addEventListener('change', () => pick('params', els.custom.value.trim()));
    els.custom.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') pick('params', els.custom.value.trim());
    });
    body.append(
      els.lede,
      h('div', { class: 'lab-field' }, h('span', { class: 'lab-label', text: 'Model size (parameters)' }), h('div', { class: 'lab-row' }, els.sizes, h('label', { class: 'custom', for: 'mem-params', text: 'or' }), els.custom)),
      h('div', { class: 'lab-field' }, h('span', { class: 'lab-label', text: 'Precision: bytes per number' }), els.precisions),
      h('div', { class: 'lab-field' }, h('span', { class: 'lab-label', text: 'GPU' }), els.gpus),
      els.error,
      els.outs,
      h('h3', { text: 'Training memory, byte by byte' }),
      els.bar,
      els.barKey,
      els.onegpu,
      h('h3', { text: 'Rules of thumb used here' }),
      els.rules,
      els.source,
      els.idea,
    );
    api.content().then((c) => {
      setTitle(c.memory.title);
      els.lede.textContent = c.memory.lede;
      els.idea.textContent = c.memory.big_idea;
    }).catch(() => {});
    api.options().then((o) => {
      els.sizes.replaceChildren(...Object.keys(o.models).map((m) => choice('params', m, m, (v) => pick('params', v))));
      els.precisions.replaceChildren(...o.precisions.map((p) => choice('precision', p.id, p.label, (v) => pick('precision', v))));
      els.gpus.replaceChildren(...o.gpus.map((g) => choice('gpu', g.id, g.label.replace('NVIDIA ', ''), (v) => pick('gpu', v))));
      els.rules.replaceChildren(...o.rules.map((r) => h('li', { text: r })));
      syncChips();
    }).catch((err) => (els.error.textContent = `Could not load the options (${err.message}).`));
    compute();
  }

  function out(label, value, note, cls = '') {
    return h('div', { class: `mem-out ${cls}` }, h('span', { class: 'k', text: label }), h('span', { class: 'v', text: value }), h('span', { class: 'n', text: note }));
  }

  function render() {
    const r = result;
    const usable = bytes(r.usable_bytes_per_gpu);
    els.outs.replaceChildren(
      out('Weights', bytes(r.weights_bytes), `${count(r.params)} × ${r.bytes_per_param} B`),
      out('GPUs to answer', String(r.gpus_to_serve), `${bytes(r.serve_bytes)} with +20% over ${usable} each`, 'gpus'),
      out('Training memory', bytes(r.training_bytes), `${r.training_bytes_per_param} bytes per parameter`),
      out('GPUs just to fit training', String(r.gpus_to_fit_training), `${r.gpus_to_fit_training_fp32_grads} at 18 B/param`, 'gpus'),
    );
    const total = r.training_bytes;
    els.bar.setAttribute('aria-label', `Training memory: ${r.training_parts.map((p) => `${p.label} ${bytes(p.bytes)}`).join(', ')}`);
    els.bar.replaceChildren(...r.training_parts.map((p) =>
      h('span', { class: `seg seg-${p.name}`, style: `flex-grow:${p.bytes / total}`, title: `${p.label}: ${bytes(p.bytes)}` }, h('b', { text: `${p.bytes_per_param}` }), ' B'),
    ));
    els.barKey.replaceChildren(
      h('li', {}, h('i', { class: 'sw seg-weights' }), `weight + gradient: 4 B (${bytes(r.training_parts[0].bytes + r.training_parts[1].bytes)})`),
      h('li', {}, h('i', { class: 'sw seg-master' }), `optimizer: fp32 copy, momentum, variance: 12 B (${bytes(r.training_parts.slice(2).reduce((a, p) => a + p.bytes, 0))})`),
      h('li', { class: 'muted', text: `With fp32 gradients the weight and its gradient take 6 B, so 18 B in all: ${bytes(r.training_bytes_fp32_grads)}.` }),
    );
    const frac = r.one_gpu_fraction;
    els.onegpu.replaceChildren(
      h('b', { class: r.fits_one_gpu ? 'fits' : 'nofit', text: r.fits_one_gpu ? 'Fits on one GPU. ' : "Doesn't fit on one GPU. " }),
      `Training it on a single ${r.gpu_label.replace('NVIDIA ', '')} would need ${frac >= 1.5 ? `${sig3(frac)} times` : `${sig3(frac * 100)}% of`} its ${usable} usable memory (${Math.round(r.usable_fraction * 100)}% of ${bytes(r.gpu_memory_bytes)}). The GPU memory walls in the scene show this case while the panel is open.`,
    );
    els.source.textContent = `GPU figures: ${r.source}. Decimal units: 1 GB = 10⁹ bytes.`;
  }

  return {
    id: 'memory',
    key: 'm',
    label: 'memory',
    kicker: 'Try it · concept lab',
    title: 'How many GPUs does a model need?',
    mount,
    onOpen() {
      open = true;
      ui?.actions?.view?.(2); // the GPU servers, where the memory walls are
      if (result) store?.set('memoryCase', result.memory_case);
    },
    onClose() {
      open = false;
      store?.set('memoryCase', null);
    },
    info() {
      return result ? { ...state, result: JSON.parse(JSON.stringify(result)) } : { ...state, result: null };
    },
  };
}
