// Chapters 22 and 23: hand it up, and wait: the measured bubble (the share of the stages'
// time spent idle) as a hatched gauge per stage, against one microbatch's when measured.
// In the scene, the stages stacked by height, each GPU hatched while it waits.
import { t } from '../i18n/lang.js';
import { stackedCloseUp } from './closeup.js';
import { percent } from '../i18n/units.js';
import { h, redrawer } from './figure.js';

export function enter(ctx) {
  const { figure, store, memo } = ctx;
  const gpus = stackedCloseUp(ctx);
  const gauge = (label, f, cls) => h('div', { class: `sf-gauge ${cls}` },
    h('span', { class: 'sf-bar-label', text: label }),
    h('span', { class: 'sf-gauge-track' }, h('b', { class: 'sf-busy', style: `width:${(1 - f) * 100}%` }), h('b', { class: 'sf-wait', style: `width:${f * 100}%` })),
    h('span', { class: 'sf-bar-text', text: t('{share} waiting', { share: percent(f) }) }));
  const draw = redrawer(figure, (f, mb, one) => [
    one !== undefined && mb > 1 ? gauge(t('1 microbatch'), one, 'sf-one') : null,
    gauge(t(['{n} microbatch', '{n} microbatches'], { n: mb }, mb), f, 'sf-now'),
    h('p', { class: 'sf-legend' }, h('i', { class: 'sf-swatch sf-busy' }), ` ${t('working')}  `, h('i', { class: 'sf-swatch sf-wait' }), ` ${t('waiting (the bubble), measured this step')}`),
  ]);
  const update = () => {
    const s = store.state;
    gpus.update();
    const f = s.step?.plan_stats?.bubble_fraction;
    if (!Number.isFinite(f)) return;
    draw([f, memo.pp4?.bubble], f, s.hello?.plan?.microbatches ?? 1, memo.pp4?.bubble);
  };
  update();
  return { update, leave: gpus.leave, info: () => ({ bubble: store.state.step?.plan_stats?.bubble_fraction ?? null, before: memo.pp4?.bubble ?? null, stack: gpus.info()?.stack ?? null }) };
}
