// Chapter 27: copies: the live team mirrored across the field, with the sum. (Chapter 28
// climbs on the same field: 28-again.js.)
import { h, redrawer } from './figure.js';

export function enter({ figure, values }) {
  const draw = redrawer(figure, (v) => [
    h('p', { class: 'sf-sum', text: `${v.field_dp} × ${v.pp} = ${v.field_gpus}` }),
    h('p', { class: 'sf-legend', text: `Data · ${v.field_dp}-way  ·  Expert parallelism · ${v.ep} across  ·  the live ${v.gpus}-GPU run mirrored ${v.mirror} times` }),
  ]);
  const update = () => {
    const v = values();
    draw([v.field_dp, v.pp, v.field_gpus], v);
  };
  update();
  return { update, leave() {} };
}
