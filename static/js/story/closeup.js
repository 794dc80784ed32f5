// GPU 1 up close for a chapter, kept free of three.js (chapter modules load without a
// page): the drawing (gpu3d.js) is imported once the 3D stage is up, which starts after
// the socket, so a chapter may enter before it.

/** gpuCloseUp(ctx, open) -> { update(), leave(), info() }: mounted now or on a later update. */
export function gpuCloseUp({ getStage, store, reduced }, open) {
  let gpu = null;
  let left = false;
  let loading = null;
  const ensure = () => {
    if (gpu || left || loading || !getStage?.()) return gpu;
    loading = import('./gpu3d.js')
      .then((m) => {
        if (!left) gpu = m.mountGpu3d({ getStage, store, reduced, open });
      })
      .catch((err) => {
        left = true; // not tried again
        console.warn('GPU 1 up close could not be drawn', err);
      })
      .finally(() => {
        loading = null;
      });
    return gpu;
  };
  ensure();
  return {
    update: () => ensure()?.update(),
    leave() {
      left = true;
      gpu?.leave();
    },
    info: () => gpu?.info() ?? null,
  };
}
