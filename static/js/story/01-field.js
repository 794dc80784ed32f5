// Chapter 1: the field of GPUs, GPU 1 lit. The stage's scale field draws it; this names it.
import { t } from '../i18n/lang.js';
import { h, redrawer } from './figure.js';

export function enter({ figure, store, values }) {
  const draw = redrawer(figure, (v) => h('p', { class: 'sf-legend' },
    h('i', { class: 'sf-swatch sf-lit' }), ` ${t("GPU 1, the one we follow · {field_gpus} GPUs in the field; the live run's {gpus} mirrored into every cell", v)}`));
  const update = () => {
    const v = values();
    draw([v.field_gpus, v.gpus], v);
  };
  update();
  return { update, leave() {}, info: () => ({ field: store.state.story?.id ?? null }) };
}
