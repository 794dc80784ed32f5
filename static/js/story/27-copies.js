// Chapter 27: copies: the live 64-GPU block copied behind itself until the field's GPUs are
// all there (copies3d.js), under brackets; the card carries the sum. (Chapter 28 climbs on
// the field: 28-again.js.)
import { t } from '../i18n/lang.js';
import { teamCloseUp } from './closeup.js';
import { h, redrawer } from './figure.js';

export function enter(ctx) {
  const { figure, values } = ctx;
  // The field's GPUs over the live team's, once the team's hello is here.
  const block = teamCloseUp(ctx, { copies: () => Math.max(1, Math.round(Number(ctx.story?.figures?.field) / ctx.store.state.hello.config.gpus) || 1) });
  const draw = redrawer(figure, (v) => [
    h('p', { class: 'sf-sum', text: t('{a} × {b} = {c}', { a: v.field_dp, b: v.pp, c: v.field_gpus }) }),
    h('p', { class: 'sf-legend', text: t('Data · {field_dp}-way · Expert parallelism · {ep} across · the live {gpus}-GPU run mirrored {mirror} times', v) }),
  ]);
  const update = () => {
    block.update();
    const v = values();
    draw([v.field_dp, v.pp, v.field_gpus], v);
  };
  update();
  return { update, leave: block.leave, info: () => ({ team: block.info() }) };
}
