// "Swap it": other ways to share the job, and the live run's plan. With the presenter's rights,
// choosing a card re-plans the live run: a reset with the card's plan on the current cluster
// (data parallel, tensor x pipeline with microbatches, experts shared out over GPUs), so a
// fresh run starts that really trains that way, and its hello and steps say so. A card with
// no plan of its own (fine-tuning) says on the card that it is shown, not run. Without the
// rights a card explains that it cannot change the run and shows the plan the run has.
//
// store.state.placement tells the scene (parts/placement.js) where the model lives: it
// follows the live run's plan (hello.plan), and while the panel is open it shows the card in
// view (a card that is only shown, or one a viewer without the rights looks at).
// Card text and plans live in scenes/classroom.json.

import { t } from '../i18n/lang.js';
import { say } from '../i18n/content.js';
import { bytes, percent } from '../i18n/units.js';
import { h } from './dom.js';
import * as api from './api.js';
import { planTraffic, planWords } from '../ui/hud.js';

/** The card kind that draws a plan: how the scene arranges the model for it. */
export function placementOf(plan) {
  if (!plan) return 'data';
  if (plan.tp > 1 || plan.pp > 1) return 'tensor_pipeline';
  if (plan.experts > 0) return 'expert';
  return 'data';
}

/** Does the live run already train on this card's plan? (The schedule only matters with a
 * pipeline, and top-k only with experts.) */
function samePlan(card, live) {
  if (!card || !live) return false;
  const same = ['tp', 'pp', 'ep', 'microbatches', 'experts'].every((k) => card[k] === live[k]);
  return same && (card.pp === 1 || card.schedule === live.schedule) && (card.experts === 0 || card.top_k === live.top_k);
}

export function create({ store, ui } = {}) {
  let els = null;
  let cards = [];
  let open = false;
  let selected = null; // the card in view while the panel is open
  let pending = null; // {placement, plan, runId}: a re-plan sent, its new run not here yet
  let problem = ''; // why the last re-plan was refused (the engine's rule, in its words)
  let revealMeasured = false; // bring the new plan's first figures into view when they come

  const hello = () => store?.state.hello ?? null;
  const live = () => hello()?.plan ?? null;
  const canControl = () => (ui?.actions?.canControl ? ui.actions.canControl() : hello()?.can_control !== false);
  const cardOf = (placement) => cards.find((c) => c.placement === placement) ?? null;

  function showLive() {
    store?.set('placement', placementOf(live()));
  }

  function choose(card) {
    selected = card.placement;
    problem = '';
    // The scene re-arranges at once; the new run's hello confirms it.
    store?.set('placement', card.placement);
    // Against the plan the run is about to have: a card chosen while another's run is on its
    // way must start its own, even when the run has its plan now.
    const target = pending ? pending.plan : live();
    if (card.plan && canControl() && !samePlan(card.plan, target) && typeof ui?.actions?.newRun === 'function') {
      pending = { placement: card.placement, plan: card.plan, runId: hello()?.run_id ?? null };
      if (!ui.actions.newRun({ ...card.plan })) {
        pending = null;
        showLive();
      }
    }
    sync();
    reveal();
  }

  /** On a short screen the card's answer sits below the cards: bring it into view. */
  function reveal(node = null) {
    const said = node ?? els?.detail.querySelector('.swap-live') ?? els?.detail.querySelector('.lab-note, .lab-error');
    said?.scrollIntoView?.({ block: 'nearest', behavior: store?.state.reducedMotion ? 'auto' : 'smooth' });
  }

  store?.on('hello', (msg) => {
    // Cards chosen in quick succession each start a run: only the last one's answers.
    const was = pending;
    const answered = Boolean(was) && msg.run_id !== was.runId && samePlan(was.plan, msg.plan);
    if (answered) pending = null;
    if (pending) return;
    // The open panel keeps what the viewer looks at: a card only shown (or looked at without
    // the rights), or another card chosen since this run was asked for.
    const keep = open && selected && (answered ? selected !== was.placement : !(cardOf(selected)?.plan && canControl()));
    if (!keep) {
      showLive();
      if (open) selected = placementOf(msg.plan);
    }
    revealMeasured = answered && open && !keep;
    sync();
    if (revealMeasured) reveal();
  });
  // A refusal while a re-plan is on its way is the answer to it: say so on the card.
  store?.on('error', (msg) => {
    if (!pending) return;
    pending = null;
    problem = msg.message || msg.code || 'the server refused it';
    showLive();
    sync();
    if (open) reveal();
  });
  if (hello()) showLive();
  store?.on('step', () => measured());

  function sync() {
    if (!els) return;
    const now = selected ?? placementOf(live());
    const running = placementOf(live());
    for (const b of els.list.querySelectorAll('.swap-card')) {
      b.setAttribute('aria-pressed', String(b.dataset.placement === now));
      b.dataset.live = String(b.dataset.placement === running);
      const tag = b.querySelector('.swap-running');
      if (tag) tag.hidden = b.dataset.placement !== running;
    }
    els.lede.textContent = canControl()
      ? t('The same job can be shared out in different ways. Pick one and the live run is re-planned that way: watch where the model lives on the GPUs and what travels between them.')
      : t('The same job can be shared out in different ways. Pick one to see where the model would live on the GPUs.');
    const card = cardOf(now);
    els.detail.replaceChildren(...(card ? detail(card).flat().filter(Boolean) : []));
    measured();
  }

  /** What the step on screen measured of the live plan, kept up to date on the live card
   * (outside the panel's announcements: it changes every step). */
  function measured() {
    const node = els?.detail.querySelector('.swap-measured');
    if (!node) return;
    const stats = store?.state.step?.plan_stats;
    if (!stats) {
      node.textContent = '';
      return;
    }
    // Each name in its own element, so a page in another language finds its words.
    const parts = [];
    if ((live()?.pp ?? 1) > 1) parts.push([h('span', { text: t('pipeline bubble') }), ` ${percent(stats.bubble_fraction, 1)}`]);
    for (const x of planTraffic(hello(), stats)) parts.push([h('span', { text: x.label }), ` ${bytes(x.bytes)}`]);
    node.replaceChildren(...(parts.length ? [`${t('This step:')} `, ...parts.flatMap((p, i) => (i ? [' · ', ...p] : p))] : []));
    if (node.textContent && revealMeasured) {
      revealMeasured = false;
      reveal(node);
    }
  }

  function liveLine() {
    const words = planWords(live());
    if (!words.layout) return null;
    // "layout, detail.", with each part as the plan card shows it (one element each).
    const layout = words.parts.flatMap((part, i) => [...(i ? [' × '] : []), h('span', { text: part })]);
    const detail = words.detail ? [', ', h('span', { text: words.detail })] : [];
    return h('p', { class: 'swap-live' }, h('strong', { text: `${t('The live run:')} ` }), ...layout, ...detail, '.');
  }

  function status(c) {
    if (pending?.placement === c.placement) {
      return h('p', { class: 'lab-note', text: t('Re-planning the live run: a fresh run starts on this plan…') });
    }
    if (problem && selected === c.placement) {
      return h('p', { class: 'lab-error', role: 'alert', text: `This cluster cannot run it: ${problem}` });
    }
    if (!c.plan) return h('p', { class: 'lab-note', text: say(c.not_run) });
    if (samePlan(c.plan, live())) {
      return h('p', { class: 'lab-note' }, h('strong', { text: `${t('The live run trains this way now.')} ` }), c.watch ? t('What to watch: {watch}', { watch: say(c.watch) }) : '');
    }
    if (!canControl()) {
      return h('p', {
        class: 'lab-note',
        text: t('Only the presenter can change the run, so this card cannot re-plan it: the scene shows where the model would live, and the run below keeps its plan.'),
      });
    }
    return h('p', { class: 'lab-note', text: t('Choose it to re-plan the live run this way.') });
  }

  function detail(c) {
    return [
      h('h3', { text: say(c.title) }),
      h('p', { text: say(c.summary) }),
      h('dl', { class: 'swap-dl' },
        h('dt', { text: t('Memory') }), h('dd', { text: say(c.memory) }),
        h('dt', { text: t('Communication') }), h('dd', { text: say(c.communication) }),
        h('dt', { text: t('Speed') }), h('dd', { text: say(c.speed) }),
      ),
      status(c),
      liveLine(),
      // Last, as it changes every step: the step's own figures for the plan it trains on.
      c.plan && samePlan(c.plan, live()) ? h('p', { class: 'lab-note swap-measured', 'aria-live': 'off' }) : null,
    ];
  }

  function mount(body) {
    els = {
      lede: h('p', { class: 'lab-lede' }),
      list: h('div', { class: 'swap-list', role: 'group', 'aria-label': t('Ways to share the job') }),
      detail: h('div', { class: 'swap-detail', 'aria-live': 'polite' }),
      error: h('p', { class: 'lab-error', role: 'alert' }),
    };
    body.append(els.lede, els.list, els.detail, els.error);
    api.content().then((c) => {
      cards = c.swap_cards;
      els.list.replaceChildren(...cards.map((card) => {
        const b = h('button', { type: 'button', class: `swap-card place-${card.placement}`, 'data-placement': card.placement, 'data-runs': String(Boolean(card.plan)), 'aria-pressed': 'false', onclick: () => choose(card) },
          h('span', { class: 'swap-icon', 'aria-hidden': 'true' }, ...icon(card.placement)),
          h('span', { class: 'swap-title', text: say(card.title) }),
          h('span', { class: 'swap-line', text: say(card.tradeoff) }),
          h('span', { class: 'swap-line swap-running', text: t('● the live run trains this way'), hidden: true }),
        );
        return b;
      }));
      sync();
    }).catch((err) => (els.error.textContent = t('Could not load the cards ({error}).', { error: err.message })));
  }

  // A tiny picture of four GPUs and what each holds: whole stacks, slices, experts, or a few.
  function icon(placement) {
    const gpu = (fill) => h('i', { class: `g ${fill}` });
    switch (placement) {
      case 'data': return [gpu('full'), gpu('full'), gpu('full'), gpu('full')];
      case 'tensor_pipeline': return [gpu('top'), gpu('top'), gpu('bottom'), gpu('bottom')];
      case 'expert': return [gpu('left'), gpu('right'), gpu('left'), gpu('right')];
      default: return [gpu('full'), gpu('off'), gpu('off'), gpu('off')];
    }
  }

  return {
    mount,
    // Show a card, as a follower of the presenter does: the scene and the panel change, the
    // run does not (the presenter's own choice already re-planned it).
    select(placement) {
      if (!cardOf(placement) || selected === placement) return;
      selected = placement;
      store?.set('placement', placement);
      sync();
    },
    onOpen() {
      open = true;
      selected = pending?.placement ?? placementOf(live());
      store?.set('placementPreview', true); // show the model copies even for data parallel
      sync();
    },
    onClose() {
      open = false;
      selected = null;
      problem = '';
      // The scene goes back to the live run's plan (a re-plan on its way brings its own).
      if (!pending) showLive();
      store?.set('placementPreview', false);
    },
    info() {
      return {
        placement: store?.state.placement ?? null,
        cards: cards.map((c) => c.placement),
        live: cards.filter((c) => c.plan).map((c) => c.placement),
        running: placementOf(live()),
        pending: pending ? pending.placement : null,
        problem: problem || null,
      };
    },
  };
}
