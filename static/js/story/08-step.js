// Chapter 8: one step: 16 of the model's weights (the probe watches them), shifting as
// each update lands; the step counter beside them.
import { dots, h, redrawer } from './figure.js';

export function enter({ figure, store }) {
  let before = null;
  const draw = redrawer(figure, (probe, step) => [
    dots(before ? [before, probe.weights] : [probe.weights], { labels: before ? ['before', `step ${step}`] : [`step ${step}`] }),
    h('p', { class: 'sf-legend', text: `16 weights of ${probe.weights_name}, live` }),
  ]);
  let last = null;
  const update = () => {
    const s = store.state;
    const probe = s.step?.probe ?? s.lastProbe;
    if (!probe) return;
    if (last && JSON.stringify(last) !== JSON.stringify(probe.weights)) before = last;
    last = probe.weights;
    draw([probe.weights, before], probe, s.step?.step ?? 0);
  };
  update();
  return { update, leave() {} };
}
