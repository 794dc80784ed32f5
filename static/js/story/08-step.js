// Chapter 8: one step: 16 of the model's weights (the probe watches them), shifting as
// each update lands; the step counter beside them. In the scene, GPU 1 open with its four
// layers, the whole step drawn through them: up, back down, then the update; the batch's
// trays beside it, the top one's blank filled and a tick under every text once the backward
// pass has noted their gradients.
import { t } from '../i18n/lang.js';
import { dots, h, redrawer } from './figure.js';
import { gpuCloseUp } from './closeup.js';

export function enter(ctx) {
  const { figure, store } = ctx;
  const prompt = () => (store.state.step?.probe ?? store.state.lastProbe)?.prompt ?? null;
  const gpu = gpuCloseUp(ctx, true, { layers: 4, stepping: true, batch: { answer: true }, prompt });
  let before = null;
  const draw = redrawer(figure, (probe, step) => [
    dots(before ? [before, probe.weights] : [probe.weights], { labels: before ? [t('before'), t('step {n}', { n: step })] : [t('step {n}', { n: step })] }),
    h('p', { class: 'sf-legend', text: t('16 weights of {name}, live', { name: probe.weights_name }) }),
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
  const both = () => {
    gpu.update();
    update();
  };
  both();
  return { update: both, leave: gpu.leave, info: gpu.info };
}
