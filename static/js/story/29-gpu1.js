// Chapter 29: back to GPU 1: what it holds under the live plan, from its role. In the scene
// the view dives from the field back into GPU 1, open once more with the live step playing
// through the layers it holds (4 of 32), each with its experts (1–8 of 64) kept and the
// rest dashed, named over it.
import { t, tr } from '../i18n/lang.js';
import { h, redrawer } from './figure.js';
import { gpuCloseUp } from './closeup.js';

const holds = (v, l) =>
  t(['layer {layer} of {layers} · experts {experts_held} of {experts}', 'layers {layer} of {layers} · experts {experts_held} of {experts}'], { layer: v.gpu1_layers, layers: v.layers, experts_held: v.gpu1_experts, experts: v.experts }, l ? l[1] - l[0] : 2);

export function enter(ctx) {
  const { figure, store, values } = ctx;
  const draw = redrawer(figure, (v, l) => [
    h('div', { class: 'sf-gpu sf-gpu1' }, h('span', { class: 'sf-gpu-name', text: t('GPU {n}', { n: 1 }) }),
      h('p', { class: 'sf-sum', text: holds(v, l) }),
      h('p', { class: 'sf-legend', text: tr(store.state.hello?.roles?.[0]?.holds ?? '') })),
  ]);
  // GPU 1 up close once the team's roles are here (the field's run until then).
  let gpu = null;
  const ensure = () => {
    const hello = store.state.hello;
    const role = hello?.roles?.[0];
    if (gpu || role?.gpu !== 0 || !(hello.plan?.pp > 1)) return;
    const split = role.experts?.[1] > role.experts?.[0] ? { count: hello.config.experts, keep: [role.experts] } : null;
    gpu = gpuCloseUp(ctx, true, { layers: role.layers[1] - role.layers[0], stepping: true, split, caption: holds(values(), role.layers) });
  };
  const update = () => {
    ensure();
    gpu?.update();
    const v = values();
    draw([v.gpu1_layers_words, v.gpu1_experts, v.layers], v, store.state.hello?.roles?.[0]?.layers);
  };
  update();
  return { update, leave: () => gpu?.leave(), info: () => gpu?.info() ?? null };
}
