// Chapter 13: a second GPU arrives empty and the model is copied over, layer by layer,
// until an equals sign settles between the two: in the card, and in the scene beside GPU 1.
import { t } from '../i18n/lang.js';
import { h, redrawer } from './figure.js';
import { gpuCloseUp } from './closeup.js';

export function enter(ctx) {
  const { figure, store, values } = ctx;
  const pair = gpuCloseUp(ctx, true, { layers: 4, pair: 'copy' });
  let copied = 0;
  let timer = 0;
  const layers = () => store.state.hello?.config?.n_layer ?? 4;
  const gpu = (name, n, total) => h('div', { class: 'sf-gpu' }, h('span', { class: 'sf-gpu-name', text: name }),
    Array.from({ length: total }, (_, i) => h('b', { class: `sf-slab${i < n ? ' in' : ''}`, text: t('Layer {n}', { n: total - i }) })).reverse());
  const draw = redrawer(figure, (n, total, v) => [
    h('div', { class: 'sf-row sf-pair' }, gpu(t('GPU {n}', { n: 1 }), total, total), h('span', { class: 'sf-sign', text: n >= total ? '=' : '→' }), gpu(t('GPU {n}', { n: 2 }), n, total)),
    h('p', { class: 'sf-legend', text: t('{gpus} GPUs · {n_params} weights each', v) }),
  ]);
  const update = () => draw([copied, layers(), values().gpus], copied, layers(), values());
  const run = () => {
    copied = store.state.reducedMotion ? layers() : copied + 1;
    update();
    if (copied < layers()) timer = setTimeout(run, 700);
  };
  timer = setTimeout(run, 400);
  update();
  return {
    update: () => {
      pair.update();
      update();
    },
    act() {
      clearTimeout(timer);
      copied = 0;
      timer = setTimeout(run, 400);
      pair.replay();
    },
    leave() {
      clearTimeout(timer);
      pair.leave();
    },
    info: () => ({ copied, ...pair.info() }),
  };
}
