// Chapter 29: back to GPU 1: what it holds under the live plan, from its role.
import { t } from '../i18n/lang.js';
import { h, redrawer } from './figure.js';

export function enter({ figure, store, values }) {
  const draw = redrawer(figure, (v, l) => [
    h('div', { class: 'sf-gpu sf-gpu1' }, h('span', { class: 'sf-gpu-name', text: t('GPU {n}', { n: 1 }) }),
      h('p', { class: 'sf-sum', text: t(['layer {layer} of {layers} · experts {experts_held} of {experts}', 'layers {layer} of {layers} · experts {experts_held} of {experts}'], { layer: v.gpu1_layers, layers: v.layers, experts_held: v.gpu1_experts, experts: v.experts }, l ? l[1] - l[0] : 2) }),
      h('p', { class: 'sf-legend', text: `${store.state.hello?.roles?.[0]?.holds ?? ''}` })),
  ]);
  const update = () => {
    const v = values();
    draw([v.gpu1_layers_words, v.gpu1_experts, v.layers], v, store.state.hello?.roles?.[0]?.layers);
  };
  update();
  return { update, leave() {} };
}
