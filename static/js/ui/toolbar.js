// The toolbar: run speed (lesson, 1, 5, max steps/s), pause / step, fail a GPU, the tour,
// labels, projector mode, help, and one button per concept lab. Buttons call the same
// actions as the keys.

import { el } from './format.js';

const SPEEDS = [
  { value: 'lesson', label: 'lesson', title: 'Lesson pace: about one step every two seconds' },
  { value: 1, label: '1', title: 'One step per second' },
  { value: 5, label: '5', title: 'Five steps per second' },
  { value: 'max', label: 'max', title: 'As fast as this machine trains' },
];

export function mountToolbar(store, actions, bar) {
  const speedGroup = el('div', { class: 'group speed', role: 'group', 'aria-label': 'Speed (steps per second)' });
  const speedButtons = SPEEDS.map((s) => {
    const b = el('button', { type: 'button', title: s.title, text: s.label, onclick: () => actions.setSpeed(s.value) });
    b.dataset.speed = String(s.value);
    speedGroup.append(b);
    return b;
  });
  const pause = el('button', { type: 'button', id: 'btn-pause', title: 'Pause or resume the run (P)', text: 'pause', onclick: () => actions.togglePause() });
  const step = el('button', { type: 'button', id: 'btn-step', title: 'Run one step while paused (N)', text: 'step', onclick: () => actions.stepOnce() });
  const fail = el('button', { type: 'button', id: 'btn-fail', class: 'danger', title: 'Make a GPU fail (K)', text: 'fail a GPU', onclick: () => actions.failGpu() });
  const runGroup = el('div', { class: 'group', role: 'group', 'aria-label': 'Run' }, pause, step, fail);

  const tour = el('button', { type: 'button', id: 'btn-tour', title: 'Guided tour (T)', text: 'tour', onclick: () => actions.toggleTour() });
  const labels = el('button', { type: 'button', id: 'btn-labels', title: 'Numbered labels (L)', text: 'labels', onclick: () => actions.toggleLabels() });
  const projector = el('button', { type: 'button', id: 'btn-projector', title: 'Projector mode: big type, high contrast', text: 'projector', onclick: () => actions.toggleProjector() });
  const help = el('button', { type: 'button', id: 'btn-help', title: 'All keys (?)', text: '?', 'aria-label': 'Help: all keys', onclick: () => actions.toggleHelp() });
  const viewGroup = el('div', { class: 'group', role: 'group', 'aria-label': 'View' }, tour, labels, projector, help);
  const labGroup = el('div', { class: 'group labs', role: 'group', 'aria-label': 'Concept labs' });
  bar.append(speedGroup, runGroup, labGroup, viewGroup);

  function render() {
    const st = store.state.status;
    for (const b of speedButtons) {
      b.setAttribute('aria-pressed', String(st ? String(st.speed) === b.dataset.speed : false));
    }
    const paused = st?.state === 'paused';
    pause.textContent = paused ? 'resume' : 'pause';
    pause.setAttribute('aria-pressed', String(paused));
    step.disabled = !paused;
    tour.setAttribute('aria-pressed', String(store.state.tour.active));
    labels.setAttribute('aria-pressed', String(store.state.labels));
    projector.setAttribute('aria-pressed', String(store.state.projector));
    const canControl = store.state.hello?.can_control !== false;
    bar.classList.toggle('view-only', !canControl);
  }
  for (const name of ['snapshot', 'event', 'hello', 'change:status', 'change:tour', 'change:labels', 'change:projector']) {
    store.on(name, render);
  }
  render();

  return {
    addLabs(keys) {
      labGroup.replaceChildren();
      for (const k of keys ?? []) {
        labGroup.append(el('button', { type: 'button', title: `${k.label} (${k.key.toUpperCase()})`, text: k.label, onclick: () => k.open() }));
      }
      labGroup.hidden = !(keys ?? []).length;
    },
  };
}
