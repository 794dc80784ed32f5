// A GPU failure, staged so a room can follow it. The engine reports it in one breath
// (gpu_failed, restored, gpu_replaced, all within milliseconds); the scene plays those same
// events over a few seconds, in the order they happened, and shows nothing they do not say:
//
//   0 s      the GPU dies: red, an X, cross-hatched                           (gpu_failed)
//   0.4 s    the other GPUs stall, hatched grey: the ring cannot close without it
//   2.4 s    the run reloads the last checkpoint: weights flow from the disks  (restored)
//   4.0 s    the replacement joins (outlined) and loads the same weights       (gpu_replaced)
//   5.6 s    done; the step animation carries on with the newest step
//
// Without a `restored` event the others stall until the end; without `gpu_replaced` the
// GPU stays failed (the store keeps it in failedGpus). Reduced motion plays the same beats as
// state changes. Parts read the frame's `failure` (see at()).

export const BEATS = Object.freeze({
  stall: [0.4, 2.4],
  reload: [2.4, 4.2],
  rejoin: [4.0, 5.2],
  end: 5.6,
});

export function createFailureStaging(store, { onStart = () => {}, requestRender = () => {} } = {}) {
  let current = null; // {gpu, step, t0 (ms), restored: detail | null, replaced}

  const unsub = store.on('event', (e) => {
    const d = e?.detail ?? {};
    if (e?.kind === 'gpu_failed') {
      current = { gpu: d.gpu, step: e.step, t0: performance.now(), restored: null, replaced: false };
      onStart(BEATS.end * 1000);
      requestRender();
    } else if (e?.kind === 'restored' && current && !(d.reason === 'resume' && !d.steps_lost)) {
      current.restored = d;
    } else if (e?.kind === 'gpu_replaced' && current && d.gpu === current.gpu) {
      current.replaced = true;
    }
  });

  const within = (t, [a, b]) => t >= a && t < b;
  const progress = (t, [a, b]) => Math.min(1, Math.max(0, (t - a) / (b - a)));

  return {
    /** Where the staging is at wall time `now` (ms), or null when nothing is staged:
     * {gpu, t (s since the failure), dead, stall, reload (0..1 or null), rejoin (0..1 or
     * null), restoredStep, failedStep, stepsLost}. */
    at(now) {
      if (!current) return null;
      const t = (now - current.t0) / 1000;
      if (t >= BEATS.end) {
        current = null;
        requestRender();
        return null;
      }
      const r = current.restored;
      const rejoining = current.replaced && t >= BEATS.rejoin[0];
      return {
        gpu: current.gpu,
        t,
        dead: !rejoining,
        stall: r ? within(t, BEATS.stall) : t >= BEATS.stall[0],
        reload: r && within(t, BEATS.reload) ? progress(t, BEATS.reload) : null,
        rejoin: rejoining ? progress(t, BEATS.rejoin) : null,
        restoredStep: r?.restored_step ?? null,
        failedStep: r?.failed_step ?? null,
        stepsLost: r?.steps_lost ?? null,
      };
    },
    get active() {
      return current !== null;
    },
    dispose() {
      unsub();
    },
  };
}
