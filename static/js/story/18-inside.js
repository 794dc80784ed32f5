// Chapter 18: inside one layer: attention at the base, the router's notch, the experts
// above (as many as the live model has). The token is the prompt's last word, "a" of "Once
// upon a": the experts lit are the ones the live router sent it to in the first layer, at
// the step the probe was last computed (the probe's `route`), with their gates. In the scene,
// GPU 1's bottom layer opens up over the GPU, and the token goes through it (layer3d.js).
import { t } from '../i18n/lang.js';
import { percent } from '../i18n/units.js';
import { h, redrawer } from './figure.js';
import { gpuCloseUp } from './closeup.js';

// Where the router sent the word: one expert or two (the story's runs route each token to two).
function goesTo({ experts: [e1, e2], gates: [g1, g2] }, step) {
  const v = { e1: e1 + 1, g1: percent(g1), e2: e2 + 1, g2: percent(g2), step };
  return e2 === undefined
    ? t("goes to expert {e1} ({g1}): the live router's choice in layer 1, step {step}", v)
    : t("goes to expert {e1} ({g1}) and expert {e2} ({g2}): the live router's choice in layer 1, step {step}", v);
}

export function enter(ctx) {
  const { figure, store } = ctx;
  const routeNow = () => (store.state.step?.probe ?? store.state.lastProbe)?.route?.[0] ?? null;
  const cfg0 = store.state.hello?.config;
  let gpu = null;
  const mount = (cfg) => {
    gpu ??= gpuCloseUp(ctx, true, { layers: 4, layer: { experts: cfg.experts, k: cfg.top_k, route: routeNow } });
  };
  if (cfg0?.experts) mount(cfg0);
  const draw = redrawer(figure, (experts, k, route, at) => {
    const chosen = new Map((route?.experts ?? []).map((e, i) => [e, route.gates[i]]));
    return [
      h('div', { class: 'sf-layer' },
        h('div', { class: 'sf-experts' }, Array.from({ length: experts }, (_, i) => h('b', {
          class: `sf-expert${chosen.has(i) ? ' sf-chosen' : ''}`,
          title: chosen.has(i) ? t('expert {n}: gate {gate}', { n: i + 1, gate: percent(chosen.get(i)) }) : t('expert {n}', { n: i + 1 }),
          text: String(i + 1),
        }))),
        h('div', { class: 'sf-router', text: t('router: picks {k} of {experts}', { k, experts }) }),
        h('div', { class: 'sf-attn', text: t('attention') }),
      ),
      route
        ? h('p', { class: 'sf-legend sf-route' },
          `${t('The word')} `, h('q', { translate: 'no', lang: 'en', text: 'a' }), ` ${goesTo(route, at)}`)
        : h('p', { class: 'sf-legend', text: t('Waiting for the router’s choice at the next probe…') }),
    ];
  });
  const update = () => {
    const s = store.state;
    const cfg = s.hello?.config;
    const probe = s.step?.probe ?? s.lastProbe;
    const route = probe?.route?.[0] ?? null;
    const at = s.lastProbeStep ?? s.step?.step ?? '';
    if (cfg) draw([cfg.experts, cfg.top_k, route?.experts, route?.gates?.map((g) => g.toFixed(2)), at], cfg.experts, cfg.top_k, route, at);
    if (cfg?.experts) mount(cfg);
    gpu?.update();
  };
  update();
  return {
    update,
    leave: () => gpu?.leave(),
    info: () => {
      const probe = store.state.step?.probe ?? store.state.lastProbe;
      return { route: probe?.route?.[0] ?? null, lit: [...figure.querySelectorAll('.sf-chosen')].map((b) => Number(b.textContent) - 1), layer: gpu?.info()?.layer ?? null };
    },
  };
}
