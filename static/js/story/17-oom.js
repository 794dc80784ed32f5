// Chapters 16 and 17: four more layers try to fit. Four full-size layers fill the walls to
// near the top; eight overflow them, hatched, split into the weight and its gradient
// (lavender) and the optimizer's bookkeeping (sand), by the memory lab's 18 bytes a weight.
// In the scene, both GPUs: four more layers, dashed, drop onto the top of each box and stop
// there; their walls hold the four layers in two bands, and with the eight they overflow,
// hatched, far past the top. (The main scene's memory walls, behind the close-up, are left
// alone.)
import { join, t, tr } from '../i18n/lang.js';
import { percent } from '../i18n/units.js';
import { h, redrawer, wall } from './figure.js';
import { gpuCloseUp } from './closeup.js';

export function enter(ctx) {
  const { story, chapter, figure, values } = ctx;
  const f = story.figures;
  let over = Boolean(chapter.oom);
  const gpus = gpuCloseUp(ctx, true, { layers: 4, pair: 'twin', blocked: 4 });
  // The walls in the scene: the weight and its gradient (lavender) below, the optimizer's
  // bookkeeping (sand) above, as shares of one GPU's memory.
  const bands = (c) => [
    { share: (c.fraction * c.weight_grad) / c.bytes, colour: '#9d8fd6' },
    { share: (c.fraction * c.optimizer) / c.bytes, colour: '--update' },
  ];
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
      h('p', { class: 'sf-legend', title: join([tr(f.layer_source), tr(f.bytes_source)], '\n') }, h('i', { class: 'sf-swatch sf-weights' }), ` ${t('weight + gradient {n} B', { n: v.weight_grad_bytes })}  `, h('i', { class: 'sf-swatch sf-optimizer' }), ` ${t('optimizer {n} B (a weight: {total} B)', { n: v.optimizer_bytes, total: v.bytes_per_weight })}`),
      // Where the full size and the bytes come from: the short form shown, the sources held.
      h('p', {
        class: 'sf-legend sf-source',
        title: join([tr(f.layer_source), tr(f.bytes_source)], '\n'),
        text: t('Full size: a layer of {model}; {bytes} B a weight as Megatron-LM counts it.', { model: f.layer_model, bytes: v.bytes_per_weight }),
      }),
    ];
  });
  const update = () => {
    const v = values();
    draw([over, v.oom_need], over, v);
    if (shown !== over) {
      shown = over;
      gpus.setBands(bands(over ? f.layers8 : f.layers4));
    }
    gpus.update();
  };
  let shown = null;
  update();
  return {
    update,
    act() {
      over = true;
      update();
    },
    leave: gpus.leave,
    info: () => ({ overflow: over, fraction: (over ? f.layers8 : f.layers4).fraction, ...gpus.info() }),
  };
}
