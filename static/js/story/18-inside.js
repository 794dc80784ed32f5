// Chapter 18: inside one layer: attention at the base, the router's notch, the experts
// above (as many as the live model has). The token is the prompt's last word, "a" of "Once
// upon a": the experts lit are the ones the live router sent it to in the first layer, at
// the step the probe was last computed (the probe's `route`), with their gates.
import { h, redrawer } from './figure.js';

const pct = (g) => `${Math.round(g * 100)}%`;

export function enter({ figure, store }) {
  const draw = redrawer(figure, (experts, k, route, at) => {
    const chosen = new Map((route?.experts ?? []).map((e, i) => [e, route.gates[i]]));
    return [
      h('div', { class: 'sf-layer' },
        h('div', { class: 'sf-experts' }, Array.from({ length: experts }, (_, i) => h('b', {
          class: `sf-expert${chosen.has(i) ? ' sf-chosen' : ''}`,
          title: chosen.has(i) ? `expert ${i + 1}: gate ${pct(chosen.get(i))}` : `expert ${i + 1}`,
          text: String(i + 1),
        }))),
        h('div', { class: 'sf-router', text: `router: picks ${k} of ${experts}` }),
        h('div', { class: 'sf-attn', text: 'attention' }),
      ),
      route
        ? h('p', { class: 'sf-legend sf-route' },
          'The word ', h('q', { translate: 'no', lang: 'en', text: 'a' }),
          ` goes to ${route.experts.map((e, i) => `expert ${e + 1} (${pct(route.gates[i])})`).join(' and ')}: the live router's choice in layer 1, step ${at}`)
        : h('p', { class: 'sf-legend', text: 'Waiting for the router’s choice at the next probe…' }),
    ];
  });
  const update = () => {
    const s = store.state;
    const cfg = s.hello?.config;
    const probe = s.step?.probe ?? s.lastProbe;
    const route = probe?.route?.[0] ?? null;
    const at = s.lastProbeStep ?? s.step?.step ?? '';
    if (cfg) draw([cfg.experts, cfg.top_k, route?.experts, route?.gates?.map((g) => g.toFixed(2)), at], cfg.experts, cfg.top_k, route, at);
  };
  update();
  return {
    update,
    leave() {},
    info: () => {
      const probe = store.state.step?.probe ?? store.state.lastProbe;
      return { route: probe?.route?.[0] ?? null, lit: [...figure.querySelectorAll('.sf-chosen')].map((b) => Number(b.textContent) - 1) };
    },
  };
}
