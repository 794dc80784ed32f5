// Chapter 4: layers drop in one at a time and the walls fill a notch each: the live
// account per layer, and the same four layers at full size (the memory lab's 18 bytes a
// weight) on the GPU's walls, to near the top tick. In the scene, GPU 1 stays open and the
// four layers drop in as slabs between its walls, the walls filling with each.
import { t } from '../i18n/lang.js';
import { percent } from '../i18n/units.js';
import { h, redrawer, wall } from './figure.js';
import { gpuCloseUp } from './closeup.js';

export function enter(ctx) {
  const { figure, store, story, values } = ctx;
  const f = story.figures;
  const four = f.layers4;
  const per = four.fraction / 4;
  const share = four.weight_grad / four.bytes;
  let shown = 0;
  let timer = 0;
  const gpu = gpuCloseUp(ctx, true, { layers: 4 });
  const draw = redrawer(figure, (n, v) => [
    h('div', { class: 'sf-row' },
      h('div', { class: 'sf-slabs' }, Array.from({ length: 4 }, (_, i) => h('b', { class: `sf-slab${i < n ? ' in' : ''}`, text: t('Layer {n}', { n: i + 1 }) })),
        h('span', { class: 'sf-hair', text: t('4 drawn · real models stack dozens') })),
      wall({ parts: [
        { name: 'weights', fraction: per * n * share, label: t('weights and gradients') },
        { name: 'optimizer', fraction: per * n * (1 - share), label: t('optimizer') },
      ], caption: t('{n} of 4 full-size layers: {share} of the {gpu}', { n, share: percent(per * n), gpu: f.gpu_label }) }),
    ),
    h('p', { class: 'sf-legend', text: t('Live: {layer_bytes} a layer here. Full size: {scale_layer_params} weights a layer.', v) }),
  ]);
  // GPU 1's walls in the scene hold the same four layers (the main scene's walls, hidden
  // behind the close-up, are left alone).
  const setWalls = (n) => gpu.setFill(per * n);
  const update = () => {
    draw([shown, values().layer_bytes], shown, values());
    gpu.update();
  };
  const drop = () => {
    shown += 1;
    setWalls(shown);
    gpu.setLayers(shown);
    update();
    if (shown < 4) timer = setTimeout(drop, store.state.reducedMotion ? 0 : 900);
  };
  if (store.state.reducedMotion) shown = 3;
  drop();
  return {
    update,
    leave() {
      clearTimeout(timer);
      gpu.leave();
    },
    info: () => ({ ...gpu.info(), layers: shown, fraction: per * shown }),
  };
}
