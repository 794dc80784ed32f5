// Chapter 14: what if each copy used only its own gradients? Two copies really trained
// apart on a side copy (GET /api/stories/one-gpu/drift): their 16 watched weights differ.
// In the scene, the two GPUs in a dashed "what if" frame, GPU 2's layers in another shade,
// the batch's trays split, two under each GPU, each with the texts its own copy read.
import { t } from '../i18n/lang.js';
import { copies, h, redrawer } from './figure.js';
import { gpuCloseUp } from './closeup.js';

export function enter(ctx) {
  const { figure, getDrift, loadDrift } = ctx;
  const pair = gpuCloseUp(ctx, true, { layers: 4, pair: 'apart', batch: { split: true } });
  const draw = redrawer(figure, (d) => (d ? h('div', { class: 'sf-whatif' },
    h('span', { class: 'sf-whatif-tag', text: t('what if') }),
    copies(d.weights[0], d.weights[1]),
    h('p', { class: 'sf-sign-line' }, h('span', { class: 'sf-sign sf-ne', text: '≠' }), ` ${t('two different models: {differing} weights differ after {steps} steps', d)}`),
  ) : h('p', { class: 'sf-legend', text: t('Training two copies apart on a side copy…') })));
  const update = () => {
    pair.update();
    draw([Boolean(getDrift())], getDrift()?.apart);
  };
  loadDrift().then(update).catch((err) => console.warn('the side copies could not be trained', err));
  update();
  const drift = () => (getDrift() ? { differing: getDrift().apart.differing, identical: getDrift().apart.identical } : {});
  return { update, leave: pair.leave, info: () => ({ ...drift(), ...pair.info() }) };
}
