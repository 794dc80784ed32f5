// Chapter 21: stages: the GPUs by pipeline stage (from the plan's roles), each labelled
// with its layers, and a check that they fit (memory account against capacity). In the
// scene, the stages stacked by height over GPU 1, the live step playing through each GPU.
import { t } from '../i18n/lang.js';
import { stackedCloseUp } from './closeup.js';
import { bytes } from '../i18n/units.js';
import { fmtBytes } from '../ui/format.js';
import { h, redrawer } from './figure.js';
import { span } from './values.js';

export function stageGrid(roles, memory, { compact = false } = {}) {
  const stages = [...new Set(roles.map((r) => r.stage))].sort((a, b) => b - a);
  return h('div', { class: `sf-stages${compact ? ' sf-compact' : ''}` }, stages.map((st) => {
    const row = roles.filter((r) => r.stage === st);
    const l = row[0].layers;
    return h('div', { class: 'sf-stage' },
      h('span', { class: 'sf-stage-name', text: t(['Stage {stage} · layer {layers}', 'Stage {stage} · layers {layers}'], { stage: st + 1, layers: span(l) }, l[1] - l[0]) }),
      h('span', { class: 'sf-stage-gpus' }, row.map((r) => {
        const m = memory?.[r.gpu];
        const fits = m && m.total <= m.capacity;
        return h('b', { class: `sf-cell${r.gpu === 0 ? ' sf-lit' : ''}`, title: m ? fmtBytes(m.total) : '', 'data-gpu': String(r.gpu) }, compact ? (r.experts[1] ? span(r.experts) : '') : [t('GPU {n}', { n: r.gpu + 1 }), fits ? ' ✓' : null]);
      })),
    );
  }));
}

export function enter(ctx) {
  const { figure, store } = ctx;
  const gpus = stackedCloseUp(ctx);
  const draw = redrawer(figure, (roles, memory) => [
    stageGrid(roles, memory),
    h('p', { class: 'sf-legend', text: t('✓ fits: {used} of {capacity} on GPU 1', { used: bytes(memory[0].total), capacity: bytes(memory[0].capacity) }) }),
  ]);
  const update = () => {
    const s = store.state;
    const memory = s.step?.memory;
    // Keyed on every GPU's total: the first steps still change it, and the legend quotes the
    // same bytes as the caption above it.
    if (s.hello?.roles && memory?.length) draw([s.hello.run_id, memory.map((m) => m.total).join()], s.hello.roles, memory);
    gpus.update();
  };
  update();
  return { update, leave: gpus.leave, info: () => ({ stack: gpus.info()?.stack ?? null }) };
}
