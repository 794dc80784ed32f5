// Chapters 16 and 17: four more layers try to fit. Four full-size layers fill the walls to
// near the top; eight overflow them, hatched, split into the weight and its gradient
// (lavender) and the optimizer's bookkeeping (sand), by the memory lab's 18 bytes a weight.
import { t } from '../i18n/lang.js';
import { percent } from '../i18n/units.js';
import { h, redrawer, wall } from './figure.js';

export function enter({ store, story, chapter, figure, values }) {
  const f = story.figures;
  let over = Boolean(chapter.oom);
  const caseOf = (c, n) => ({
    label: `${n} full-size layers on one GPU`,
    fraction: c.fraction,
    parts: [
      { name: 'weights', fraction: (c.fraction * c.weight_grad) / c.bytes / 2 },
      { name: 'grads', fraction: (c.fraction * c.weight_grad) / c.bytes / 2 },
      { name: 'optimizer', fraction: (c.fraction * c.optimizer) / c.bytes },
    ],
    fits: c.fraction <= 1,
    gpus: store.state.hello?.config?.gpus ?? null,
  });
  const draw = redrawer(figure, (o, v) => {
    const c = o ? f.layers8 : f.layers4;
    return [
      h('div', { class: 'sf-row' },
        h('div', { class: 'sf-slabs' },
          o ? null : h('span', { class: 'sf-hair', text: t('the model we want · 8 layers') }),
          Array.from({ length: 8 }, (_, i) => h('b', { class: `sf-slab${i < 4 || o ? ' in' : ' sf-dashed'}${i >= 4 && o ? ' sf-blocked' : ''}`, text: t('Layer {n}', { n: i + 1 }) })).reverse()),
        wall({
          parts: [
            { name: 'weights', fraction: (c.fraction * c.weight_grad) / c.bytes, label: t('weight + gradient: {n} bytes a weight', { n: v.weight_grad_bytes }) },
            { name: 'optimizer', fraction: (c.fraction * c.optimizer) / c.bytes, label: t('optimizer: {n} bytes a weight', { n: v.optimizer_bytes }) },
          ],
          caption: o ? t('8 layers: {need} · {share} of one GPU', { need: v.oom_need, share: v.oom_share }) : t('4 layers: {share} of one GPU', { share: percent(c.fraction) }),
        }),
      ),
      h('p', { class: 'sf-legend' }, h('i', { class: 'sf-swatch sf-weights' }), ` ${t('weight + gradient {n} B', { n: v.weight_grad_bytes })}  `, h('i', { class: 'sf-swatch sf-optimizer' }), ` ${t('optimizer {n} B (a weight: {total} B)', { n: v.optimizer_bytes, total: v.bytes_per_weight })}`),
    ];
  });
  const update = () => {
    const v = values();
    store.set('memoryCase', caseOf(over ? f.layers8 : f.layers4, over ? 8 : 4));
    draw([over, v.oom_need], over, v);
  };
  update();
  return {
    update,
    act() {
      over = true;
      update();
    },
    leave() {
      store.set('memoryCase', null);
    },
    info: () => ({ overflow: over, fraction: (over ? f.layers8 : f.layers4).fraction }),
  };
}
