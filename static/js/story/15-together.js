// Chapter 15: comparing notes: the averaged copies stay equal (the side copy trained
// together), and the step's time bar against one GPU's. In the scene, beads of gradients
// leave both GPUs' layers at the live step's all-reduce, meet in the gap and go back.
import { t } from '../i18n/lang.js';
import { copies, h, redrawer } from './figure.js';
import { timeBar } from './11-timebar.js';
import { gpuCloseUp } from './closeup.js';

export function enter(ctx) {
  const { figure, getDrift, loadDrift } = ctx;
  const pair = gpuCloseUp(ctx, true, { layers: 4, pair: 'together' });
  const top = document.createElement('div');
  const bottom = document.createElement('div');
  figure.append(top, bottom);
  const draw = redrawer(top, (d) => (d ? h('div', { class: 'sf-whatif sf-together' },
    copies(d.weights[0], d.weights[1]),
    h('p', { class: 'sf-sign-line' }, h('span', { class: 'sf-sign', text: '=' }), ` ${t('averaged gradients: {differing} weights differ', d)}`),
  ) : h('p', { class: 'sf-legend', text: t('Training two copies together on a side copy…') })));
  const bars = timeBar({ ...ctx, figure: bottom });
  const update = () => {
    pair.update();
    draw([Boolean(getDrift())], getDrift()?.together);
    bars.update();
  };
  loadDrift().then(update).catch((err) => console.warn('the side copies could not be trained', err));
  update();
  const drift = () => (getDrift() ? { differing: getDrift().together.differing, identical: getDrift().together.identical } : {});
  return { update, leave: pair.leave, info: () => ({ ...drift(), ...pair.info() }) };
}
