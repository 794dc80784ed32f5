// Chapter 3: the lid off: the memory walls with capacity ticks, filled from GPU 1's live
// memory account (to scale: the tiny model barely shows against a real GPU's memory), in
// the scene (GPU 1 up close, its lid lifting) and in the card.
import { t } from '../i18n/lang.js';
import { h, redrawer, wall } from './figure.js';
import { gpuCloseUp } from './closeup.js';

export function enter(ctx) {
  const { figure, store, values } = ctx;
  const gpu = gpuCloseUp(ctx, true);
  const draw = redrawer(figure, (m, v) => [
    wall({
      parts: [
        { name: 'weights', fraction: (m.weights + m.grads) / m.capacity, label: t('weights and gradients') },
        { name: 'optimizer', fraction: m.optimizer / m.capacity, label: t('optimizer') },
        { name: 'activations', fraction: m.activations / m.capacity, label: t('activations') },
      ],
      caption: t('GPU 1: {used} of {capacity}', { used: v.memory_per_gpu, capacity: v.memory_capacity }),
    }),
    h('p', { class: 'sf-legend' }, t('Ticks: each quarter of the memory. The live model is tiny: a sliver at the floor.')),
  ]);
  const update = () => {
    const m = store.state.step?.memory?.[0];
    if (m) draw([m.total, m.capacity], m, values());
    gpu.update();
  };
  update();
  return { update, leave: gpu.leave, info: gpu.info };
}
