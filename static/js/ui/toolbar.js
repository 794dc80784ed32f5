// The toolbar: start the lesson or a new run, run speed (lesson, 1, 5, max steps/s), pause /
// step / fail a GPU, the tour, one button per concept lab, labels, projector mode, "how big?"
// and help. Buttons call the same actions as the keys.
//
// The groups a lesson leans on (.tb-main) always stay in the bar; the rest (.tb-more) sit in
// the bar on wide screens and behind the "more" button on narrower ones; on a phone both go
// behind one menu button. Which is which is the CSS's call (static/css/app.css); menu.js opens
// and closes the menu.

import { t } from '../i18n/lang.js';
import { needsPresenter } from './actions.js';
import { el } from './format.js';
import { mountMenu } from './menu.js';

const SPEEDS = () => [
  { value: 'lesson', label: t('lesson'), title: t('Lesson pace: about one step every two seconds') },
  { value: 1, label: '1', title: t('One step per second') },
  { value: 5, label: '5', title: t('Five steps per second') },
  { value: 'max', label: t('max'), title: t('As fast as this machine trains') },
];

export function mountToolbar(store, actions, bar) {
  const button = (attrs) => el('button', { type: 'button', ...attrs });

  const lesson = button({
    id: 'btn-lesson',
    class: 'primary',
    title: t('Start the lesson: a fresh run from step 0, lesson pace, and the tour from its first stop'),
    text: t('Start lesson'),
    onclick: () => actions.startLesson(),
  });
  const newRun = button({
    id: 'btn-newrun',
    title: t('New run: choose the seed, the hardware and the cluster, then start from step 0'),
    text: t('new run…'),
    onclick: () => actions.toggleNewRun(),
  });
  const lessonGroup = el('div', { class: 'group lesson', role: 'group', 'aria-label': t('Lesson') }, lesson, newRun);

  const speedGroup = el('div', { class: 'group speed', role: 'group', 'aria-label': t('Speed (steps per second)') });
  const speedButtons = SPEEDS().map((s) => {
    const b = button({ title: s.title, text: s.label, onclick: () => actions.setSpeed(s.value) });
    b.dataset.speed = String(s.value);
    speedGroup.append(b);
    return b;
  });
  const pause = button({ id: 'btn-pause', title: t('Pause or resume the run (P)'), text: t('pause'), onclick: () => actions.togglePause() });
  const step = button({ id: 'btn-step', title: t('Run one step while paused (N)'), text: t('step'), onclick: () => actions.stepOnce() });
  const runGroup = el('div', { class: 'group run', role: 'group', 'aria-label': t('Run') }, pause, step);
  // Slow motion belongs to the scene; its button appears when the scene offers it.
  if (typeof actions.slowStep === 'function') {
    runGroup.append(
      button({
        id: 'btn-slow',
        title: t('Play the next step in slow motion, one block of work at a time'),
        text: t('slow step'),
        onclick: () => actions.slowStep(),
      }),
    );
  }
  const fail = button({ id: 'btn-fail', class: 'danger', title: t('Make a GPU fail (K)'), text: t('fail a GPU'), onclick: () => actions.failGpu() });
  runGroup.append(fail);

  const tour = button({ id: 'btn-tour', title: t('Guided tour (T)'), text: t('tour'), onclick: () => actions.toggleTour() });
  const tourGroup = el('div', { class: 'group tour', role: 'group', 'aria-label': t('Tour') }, tour);

  const labGroup = el('div', { class: 'group labs', role: 'group', 'aria-label': t('Concept labs') });
  labGroup.hidden = true;
  const labels = button({ id: 'btn-labels', title: t('Numbered labels (L)'), text: t('labels'), onclick: () => actions.toggleLabels() });
  const projector = button({ id: 'btn-projector', title: t('Projector mode: big type, high contrast'), text: t('projector'), onclick: () => actions.toggleProjector() });
  const howBig = button({ id: 'btn-howbig', title: t('How big is a real training run?'), text: t('how big?'), onclick: () => actions.toggleHowBig() });
  const help = button({ id: 'btn-help', title: t('All keys (?)'), text: '?', 'aria-label': t('Help: all keys'), onclick: () => actions.toggleHelp() });
  const viewGroup = el('div', { class: 'group view', role: 'group', 'aria-label': t('View') }, labels, projector, howBig, help);

  const main = el('div', { class: 'tb-main' }, lessonGroup, speedGroup, runGroup, tourGroup);
  const more = el('div', { class: 'tb-more', id: 'tb-more' }, labGroup, viewGroup);
  const panel = el('div', { class: 'tb-panel', id: 'tb-panel' }, main, more);
  const menu = mountMenu(store, { bar, panel });
  bar.append(menu.toggle, panel);

  // Starting over throws the run away for everyone: only the presenter may. The lesson
  // button stays in sight (a viewer learns it exists) but is marked disabled and says why;
  // "new run…" opens for a viewer too, and starts a run of the viewer's own (ui/settings.js).
  const presenterOnly = new Map([[lesson, lesson.title]]);
  const newRunTitle = newRun.title;

  function render() {
    const st = store.state.status;
    for (const b of speedButtons) {
      b.setAttribute('aria-pressed', String(st ? String(st.speed) === b.dataset.speed : false));
    }
    const paused = st?.state === 'paused';
    pause.textContent = paused ? t('resume') : t('pause');
    pause.setAttribute('aria-pressed', String(paused));
    step.disabled = !paused;
    tour.setAttribute('aria-pressed', String(store.state.tour.active));
    labels.setAttribute('aria-pressed', String(store.state.labels));
    projector.setAttribute('aria-pressed', String(store.state.projector));
    howBig.setAttribute('aria-pressed', String(store.state.howBigOpen));
    newRun.setAttribute('aria-pressed', String(store.state.newRunOpen));
    const canControl = store.state.hello?.can_control !== false;
    bar.classList.toggle('view-only', !canControl);
    for (const [b, title] of presenterOnly) {
      if (canControl) b.removeAttribute('aria-disabled');
      else b.setAttribute('aria-disabled', 'true');
      b.title = canControl ? title : needsPresenter();
    }
    newRun.title = canControl ? newRunTitle : t('A run of your own: only the presenter changes the class run, so this starts one for you alone');
  }
  for (const name of [
    'snapshot',
    'event',
    'hello',
    'change:status',
    'change:tour',
    'change:labels',
    'change:projector',
    'change:howBigOpen',
    'change:newRunOpen',
  ]) {
    store.on(name, render);
  }
  render();

  return {
    menu,
    addLabs(keys) {
      labGroup.replaceChildren();
      for (const k of keys ?? []) {
        labGroup.append(button({ title: k.title, text: k.label, onclick: () => k.open() }));
      }
      labGroup.hidden = !(keys ?? []).length;
    },
  };
}
