// GPU 1 up close for a chapter, kept free of three.js (chapter modules load without a
// page): the drawing (gpu3d.js) is imported once the 3D stage is up, which starts after
// the socket, so a chapter may enter before it.

/** gpuCloseUp(ctx, open, {layers, stepping, trays, batch, prompt, pair, ...}) -> { update(), setLayers(n), setFill(f), replay(), leave(), info() }:
 * mounted now or on a later update; layers shown before it is up are shown when it is.
 * `stepping`: every layer in place, and the live step drawn through them (stepinside.js),
 * with `trays` microbatches as trays beside the GPU. `batch`: the batch as trays of text at
 * the GPU's door ({answer, dim, split}: batch3d.js), the top one the live probe's `prompt()`.
 * `pair`: GPU 2 beside it (pair3d.js), its layers copied ('copy'), learning alone
 * ('apart'), averaging with GPU 1 ('together') or simply there ('twin'); `blocked`: that
 * many more layers, dashed, stopped over every GPU's box; `layer`: the bottom layer opened
 * over the GPU ({experts, k, route()}: layer3d.js); `split`: each GPU's experts of every
 * layer ({count, keep: [[lo, hi), ...]}), the rest dashed; `stack`: the pipeline's stages
 * by height over GPU 1 ({roles, memory()}: stack3d.js); `guess()`: the live probe, its
 * guesses drawn as bars over the layers (guess3d.js). */
export function gpuCloseUp({ getStage, store, reduced }, open, { layers = 0, stepping = false, trays = 0, batch = null, prompt = null, pair = null, blocked = 0, layer = null, split = null, stack = null, guess = null } = {}) {
  let gpu = null;
  let left = false;
  let loading = null;
  let shown = 0;
  let fill = null;
  let bands = null;
  const ensure = () => {
    if (gpu || left || loading || !getStage?.()) return gpu;
    loading = import('./gpu3d.js')
      .then((m) => {
        if (left) return;
        gpu = m.mountGpu3d({ getStage, store, reduced, open, layers, stepping, trays, batch, prompt, pair, blocked, layer, split, stack, guess });
        if (bands) gpu?.setBands(bands);
        if (shown) gpu?.setLayers(shown);
        if (fill !== null) gpu?.setFill(fill);
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
    setLayers(n) {
      shown = n;
      ensure()?.setLayers(n);
    },
    /** Fill the walls to this fraction of the GPU's memory instead of its live account. */
    setFill(f) {
      fill = f;
      ensure()?.setFill(f);
    },
    /** What the walls hold, in bands (gpu3d.js's setBands). */
    setBands(b) {
      bands = b;
      ensure()?.setBands(b);
    },
    /** Play GPU 2's copy again (pair 'copy'). */
    replay: () => gpu?.replay(),
    leave() {
      left = true;
      gpu?.leave();
    },
    info: () => gpu?.info() ?? null,
  };
}

/** The pipeline's stages by height (chapters 21 to 23), once the chapter's run is on screen:
 * its roles put GPUs on more than one stage. { update(), leave(), info() }. */
export function stackedCloseUp(ctx) {
  const { store } = ctx;
  let gpu = null;
  let left = false;
  const ensure = () => {
    const h = store.state.hello;
    const roles = h?.roles ?? [];
    if (gpu || left || new Set(roles.map((r) => r.stage)).size < 2 || roles[0]?.gpu !== 0) return gpu;
    const per = roles[0].layers[1] - roles[0].layers[0];
    gpu = gpuCloseUp(ctx, true, { layers: per, stepping: true, stack: { roles, memory: () => store.state.step?.memory } });
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

/** The 64-GPU team as one block (chapters 24 to 26: team3d.js), once its roles are here:
 * `per` GPUs a stage (0: all), `live` each GPU in the colour of its work. { update(), leave(),
 * info() }. */
export function teamCloseUp({ getStage, store, reduced }, { per = 0, live = false } = {}) {
  let team = null;
  let left = false;
  let loading = null;
  const ensure = () => {
    const h = store.state.hello;
    if (team || left || loading || !getStage?.() || !(h?.plan?.pp > 1)) return team;
    loading = import('./team3d.js')
      .then((m) => {
        if (!left) team = m.mountTeam({ stage: getStage(), roles: h.roles, plan: h.plan, config: h.config, per, live, reduced });
      })
      .catch((err) => {
        left = true;
        console.warn('the team could not be drawn', err);
      })
      .finally(() => {
        loading = null;
      });
    return team;
  };
  ensure();
  return {
    update: () => ensure()?.update(),
    leave() {
      left = true;
      team?.leave();
    },
    info: () => team?.info() ?? null,
  };
}
