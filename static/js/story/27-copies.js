// Chapters 27 and 28: copies: the live team mirrored across the field, with the sum. In
// "again" the field re-tones at every tenfold of the live run's steps (scene/field/tones.js),
// and a strip of the shades marks the one the run is in now.
import { h, redrawer } from './figure.js';
import { TONES, toneOf } from '../scene/field/tones.js';
import { fmtInt as fmt } from '../ui/format.js';

function shades(step) {
  const now = toneOf(step);
  const label = now < 0 ? "The field's shades, one for each tenfold of steps"
    : `The field's shade now: steps ${fmt(10 ** now)} to ${fmt(10 ** (now + 1) - 1)}`;
  return h('div', { class: 'sf-tones', role: 'img', 'aria-label': label },
    TONES.map((c, i) => h('span', { class: `sf-tone${i === now ? ' sf-tone-now' : ''}`, style: `--tone:${c}` },
      h('b', {}), h('small', { text: fmt(10 ** i) }))));
}

export function enter({ figure, values, store, chapter }) {
  const again = chapter?.id === 'again';
  if (again) store.set('fieldTone', true);
  const draw = redrawer(figure, (v) => [
    h('p', { class: 'sf-sum', text: `${v.field_dp} × ${v.pp} = ${v.field_gpus}` }),
    h('p', { class: 'sf-legend', text: `Data · ${v.field_dp}-way  ·  Expert parallelism · ${v.ep} across  ·  the live ${v.gpus}-GPU run mirrored ${v.mirror} times` }),
    again ? shades(store.state.step?.step) : null,
  ]);
  const update = () => {
    const v = values();
    draw([v.field_dp, v.pp, v.field_gpus, again ? toneOf(store.state.step?.step) : 0], v);
  };
  update();
  return {
    update,
    leave() {
      if (again) store.set('fieldTone', false);
    },
  };
}
