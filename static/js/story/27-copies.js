// Chapter 27: copies: the live team mirrored across the field, with the sum. (Chapter 28
// climbs on the same field: 28-again.js.)
import { t } from '../i18n/lang.js';
import { h, redrawer } from './figure.js';

export function enter({ figure, values }) {
  const draw = redrawer(figure, (v) => [
    h('p', { class: 'sf-sum', text: t('{a} × {b} = {c}', { a: v.field_dp, b: v.pp, c: v.field_gpus }) }),
    h('p', { class: 'sf-legend', text: t('Data · {field_dp}-way · Expert parallelism · {ep} across · the live {gpus}-GPU run mirrored {mirror} times', v) }),
  ]);
  const update = () => {
    const v = values();
    draw([v.field_dp, v.pp, v.field_gpus], v);
  };
  update();
  return { update, leave() {} };
}
