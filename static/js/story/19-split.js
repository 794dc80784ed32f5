// Chapters 19 and 20: the experts split: each GPU keeps its range (from the plan's roles),
// the given-up half dashed; memory per GPU before and after, from the memory accounts. In
// the scene, both GPUs with every layer's row of experts, each GPU's given-up half dashed
// and a cut down every row; in chapter 20 the tokens' numbers cross between them.
import { t } from '../i18n/lang.js';
import { gpuCloseUp } from './closeup.js';
import { fmtBytes } from '../ui/format.js';
import { bar, h, redrawer } from './figure.js';
import { span } from './values.js';

export function enter(ctx) {
  const { figure, store, memo } = ctx;
  let gpus = null;
  // Once the split run is on screen: its roles say which experts each GPU keeps.
  const mount = (roles, count) => {
    const keep = roles.slice(0, 2).map((r) => r.experts);
    if (gpus || keep.length < 2 || !keep.every((k) => k && k[1] - k[0] < count)) return;
    // Chapter 20 ("Tokens travel"): tokens' numbers cross to the other GPU's experts.
    const pair = ctx.chapter?.id === 'tokens-travel' ? 'travel' : 'twin';
    gpus = gpuCloseUp(ctx, true, { layers: 4, pair, split: { count, keep } });
  };
  const draw = redrawer(figure, (roles, experts, before, now) => [
    h('div', { class: 'sf-row sf-pair' }, roles.slice(0, 2).map((r) => h('div', { class: 'sf-gpu' },
      h('span', { class: 'sf-gpu-name', text: t('GPU {gpu} keeps experts {range}', { gpu: r.gpu + 1, range: span(r.experts) }) }),
      h('div', { class: 'sf-experts' }, Array.from({ length: experts }, (_, i) => h('b', { class: `sf-expert${i >= r.experts[0] && i < r.experts[1] ? '' : ' sf-dashed'}`, text: String(i + 1) }))),
    ))),
    h('div', { class: 'sf-bars' },
      before ? bar(t('before'), before / Math.max(before, now), { cls: 'sf-one', text: fmtBytes(before) }) : null,
      bar(t('now'), now / Math.max(before ?? 0, now), { cls: 'sf-now', text: fmtBytes(now) })),
    h('p', { class: 'sf-legend', text: t('Expert parallelism · memory per GPU, from the accounts') }),
  ]);
  const update = () => {
    const s = store.state;
    const roles = s.hello?.roles ?? [];
    const now = s.step?.memory?.[0]?.total;
    if (!roles.length || !now) return;
    draw([roles.map((r) => r.experts), now, memo.dp2?.memory], roles, s.hello.config.experts, memo.dp2?.memory, now);
    mount(roles, s.hello.config.experts);
    gpus?.update();
  };
  update();
  return {
    update,
    leave: () => gpus?.leave(),
    info: () => ({ before: memo.dp2?.memory ?? null, now: store.state.step?.memory?.[0]?.total ?? null, split: Boolean(gpus?.info()), pair: gpus?.info()?.pair ?? null }),
  };
}
