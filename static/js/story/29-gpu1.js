// Chapter 29: back to GPU 1: what it holds under the live plan, from its role.
import { h, redrawer } from './figure.js';

export function enter({ figure, store, values }) {
  const draw = redrawer(figure, (v) => [
    h('div', { class: 'sf-gpu sf-gpu1' }, h('span', { class: 'sf-gpu-name', text: 'GPU 1' }),
      h('p', { class: 'sf-sum', text: `${v.gpu1_layers_words} of ${v.layers} · experts ${v.gpu1_experts} of ${v.experts}` }),
      h('p', { class: 'sf-legend', text: `${store.state.hello?.roles?.[0]?.holds ?? ''}` })),
  ]);
  const update = () => {
    const v = values();
    draw([v.gpu1_layers_words, v.gpu1_experts, v.layers], v);
  };
  update();
  return { update, leave() {} };
}
