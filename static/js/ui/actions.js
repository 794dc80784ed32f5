// Everything a person can ask for, in one place, so a key, a toolbar button and a clicker
// all do exactly the same thing. Each action updates the store (the state tests and other
// modules read) and drives the stage when there is one (there is none without WebGL).

import { t } from '../i18n/lang.js';

const ROTATE_STEP = Math.PI / 18; // 10 degrees per arrow press
const ZOOM_STEP = 1.15;

// Said wherever a control needs the presenter's rights and this page does not have them.
export const needsPresenter = () => t('Only the presenter can start a new run: open the page with the presenter’s link (it carries the token)');

export function createActions({ store, getStage, send, watch, key, overlays, getTour, getLabs, panels }) {
  const camera = { azimuth: 0, polar: 0, zoom: 1, moves: 0 };

  const stage = () => getStage();
  const instant = () => ({ instant: store.state.reducedMotion });

  function control(action, extra = {}) {
    if (!send({ type: 'control', action, ...extra })) {
      overlays.toast(t('Not connected to the run, so that was not sent'), 'error');
      return false;
    }
    return true;
  }

  function resetCamera() {
    camera.azimuth = 0;
    camera.polar = 0;
    camera.zoom = 1;
  }

  const actions = {
    camera,
    rotate(dAz, dPol) {
      camera.azimuth += dAz * ROTATE_STEP;
      camera.polar += dPol * ROTATE_STEP;
      camera.moves += 1;
      stage()?.rotate(dAz * ROTATE_STEP, dPol * ROTATE_STEP);
    },
    zoom(direction) {
      const f = direction > 0 ? ZOOM_STEP : 1 / ZOOM_STEP; // zoom in (+) = move closer
      camera.zoom *= f;
      camera.moves += 1;
      stage()?.zoom(f);
    },
    reset() {
      resetCamera();
      store.set('view', 0);
      stage()?.reset();
    },
    view(n) {
      resetCamera();
      store.set('view', n);
      stage()?.setView(n, instant());
    },
    toggleSignal() {
      store.set('signal', !store.state.signal);
      stage()?.setSignal(store.state.signal);
    },
    toggleLabels() {
      store.set('labels', !store.state.labels);
    },
    toggleSpin() {
      store.set('spin', !store.state.spin);
      stage()?.setSpin(store.state.spin);
    },
    toggleExplode() {
      store.set('exploded', !store.state.exploded);
      stage()?.setExploded(store.state.exploded);
    },
    toggleTour() {
      const tour = getTour();
      if (!tour) return;
      if (store.state.tour.active) tour.stop();
      else tour.start();
    },
    tourNext() {
      const tour = getTour();
      if (!tour) return;
      if (!store.state.tour.active) tour.start();
      else tour.next();
    },
    tourPrev() {
      const tour = getTour();
      if (!tour) return;
      if (!store.state.tour.active) tour.start();
      else tour.prev();
    },
    toggleHelp() {
      panels.help.toggle();
    },
    toggleFullscreen() {
      if (document.fullscreenElement) document.exitFullscreen?.().catch(() => {});
      else
        document.documentElement.requestFullscreen?.().catch(() => {
          overlays.toast(t('This browser would not go full screen'), 'warn');
        });
    },
    toggleProjector() {
      store.set('projector', !store.state.projector);
    },
    togglePause() {
      const st = store.state.status;
      control(st?.state === 'paused' ? 'resume' : 'pause');
    },
    stepOnce() {
      if (store.state.status?.state !== 'paused') {
        overlays.toast(t('Pause first (P), then N runs one step at a time'), 'info', 3500);
        return;
      }
      control('step');
    },
    setSpeed(value) {
      control('speed', { value });
    },
    checkpointNow() {
      control('checkpoint_now');
    },
    failGpu() {
      const gpus = store.state.hello?.topology?.gpus ?? [];
      const live = gpus.map((g) => g.id).filter((id) => !store.state.failedGpus.has(id));
      if (!live.length) {
        overlays.toast(t('No GPU is up to fail right now'), 'info');
        return;
      }
      const gpu = live[Math.floor(Math.random() * live.length)];
      control('fail_gpu', { gpu });
    },
    /** Slow motion on or off: the next step (the current one, if the run is paused) plays
     * block by block, each block named in a caption; the stage turns it off when done. */
    slowStep() {
      if (!store.state.slowMotion && !stage()) {
        overlays.toast(t('Slow motion needs the 3D scene, which this browser cannot draw'), 'info', 3500);
        return;
      }
      store.set('slowMotion', !store.state.slowMotion);
    },
    escape() {
      if (store.state.slowMotion) store.set('slowMotion', false);
      const tour = getTour();
      if (store.state.tour.active) tour?.stop();
      panels.help.close();
      panels.card.close();
      panels.newRun?.close();
      panels.howBig?.close();
      panels.menu?.close();
      getLabs()?.closeAll?.();
    },
    // ---- the lesson: start over, hold or auto-advance the tour, the longer story ----
    canControl() {
      return store.state.hello?.can_control !== false;
    },
    /** A fresh run on the same cluster at step 0, lesson pace, the tour at its first stop. */
    startLesson() {
      if (!actions.canControl()) {
        overlays.toast(needsPresenter(), 'info', 5000);
        return false;
      }
      if (!control('reset')) return false;
      actions.beginLesson();
      return true;
    },
    /** Lesson pace, running, every panel closed and the tour from stop 1 (the run is the
     * caller's business: a fresh one from startLesson or from the new-run panel). */
    beginLesson() {
      control('speed', { value: 'lesson' });
      if (store.state.status?.state === 'paused') control('resume');
      actions.escape();
      getTour()?.start(0);
    },
    /** Watch another of the server's runs ('class', or a story chapter's 'one-gpu.dp2'):
     * nobody else's page changes. False when there is no socket to ask on yet. */
    watchRun(id) {
      return watch ? watch(id) : false;
    },
    /** Have the server start a run this page will soon watch (a story's next chapters). */
    warmRun(id) {
      return send({ type: 'warm', run: id });
    },
    /** A run of this page's own (no rights needed): the server starts it with `choice` on
     * the class run's settings and this page watches it; only this page controls it. */
    ownRun(choice = {}) {
      return send({ type: 'own_run', key, ...choice });
    },
    /** Start a new run; `choice` may name seed, preset, gpus and servers (the rest stays). */
    newRun(choice = {}) {
      if (!actions.canControl()) {
        overlays.toast(needsPresenter(), 'info', 5000);
        return false;
      }
      return control('reset', choice);
    },
    toggleNewRun() {
      panels.newRun?.toggle();
    },
    toggleHowBig() {
      panels.howBig?.toggle();
    },
    toggleTourAuto() {
      getTour()?.setAuto(!store.state.tourAuto);
    },
    toggleTourMore() {
      const tour = getTour();
      if (!tour) return;
      if (!store.state.tour.active) {
        overlays.toast(t('“More” belongs to a tour stop: start the tour (T) first'), 'info', 3500);
        return;
      }
      tour.setMore(!store.state.tourMore);
    },
    /** Enter's job: the next stop, while the tour is on. False when there is no tour to move. */
    tourAdvance() {
      if (!store.state.tour.active) return false;
      getTour()?.next();
      return true;
    },
  };
  return actions;
}
