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
 * guesses drawn as bars over the layers (guess3d.js); `caption`: words over the GPU. */
export function gpuCloseUp({ getStage, store, reduced }, open, { layers = 0, stepping = false, trays = 0, batch = null, prompt = null, pair = null, blocked = 0, layer = null, split = null, stack = null, guess = null, caption = null } = {}) {
  let shown = 0;
  let fill = null;
  let bands = null;
  const gpu = later(() => Boolean(getStage?.()), () => import('./gpu3d.js'), 'GPU 1 up close', (m) => {
    const made = m.mountGpu3d({ getStage, store, reduced, open, layers, stepping, trays, batch, prompt, pair, blocked, layer, split, stack, guess, caption });
    if (bands) made?.setBands(bands);
    if (shown) made?.setLayers(shown);
    if (fill !== null) made?.setFill(fill);
    return made;
  });
  const ensure = gpu.ensure;
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
    replay: () => gpu.made()?.replay(),
    leave: gpu.leave,
    info: () => gpu.made()?.info() ?? null,
  };
}

/** GPU 1 of the run this page watches, opened, the live step playing through the layers it
 * holds (the GPU servers' card, a tour stop): { update(), leave(), info() }, or null before
 * the run's hello has said what GPU 1 holds. */
export function watchedGpuCloseUp({ getStage, store }) {
  const h = store.state.hello;
  const held = h?.roles?.[0]?.layers;
  const layers = held ? held[1] - held[0] : h?.config?.n_layer ?? 0;
  if (!layers) return null;
  return gpuCloseUp({ getStage, store, reduced: () => store.state.reducedMotion }, true, { layers, stepping: true });
}

/** A drawing mounted once `can()` holds and its module has loaded: `mount(module)` makes it
 * (anything with leave()). { ensure() -> it or null, made(), leave() }; a module that cannot
 * load is said once (`what`) and not tried again. */
function later(can, load, what, mount) {
  let made = null;
  let left = false;
  let loading = null;
  const ensure = () => {
    if (made || left || loading || !can()) return made;
    loading = load()
      .then((m) => {
        if (!left) made = mount(m);
      })
      .catch((err) => {
        left = true; // not tried again
        console.warn(`${what} could not be drawn`, err);
      })
      .finally(() => {
        loading = null;
      });
    return made;
  };
  ensure();
  return {
    ensure,
    made: () => made,
    leave() {
      left = true;
      made?.leave();
    },
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

/** The 64-GPU team as one block (chapters 24 to 27: team3d.js), once its roles are here:
 * `per` GPUs a stage (0: all), `live` each GPU in the colour of its work, `copies` the block
 * and its mirrors behind it (a number, or a function asked once the roles are here). { update(), leave(), info() }. */
export function teamCloseUp({ getStage, store, reduced }, { per = 0, live = false, copies = 1 } = {}) {
  const hello = () => store.state.hello;
  const team = later(() => Boolean(getStage?.()) && hello()?.plan?.pp > 1, () => import('./team3d.js'), 'the team', (m) =>
    m.mountTeam({ stage: getStage(), roles: hello().roles, plan: hello().plan, config: hello().config, per, live, copies: typeof copies === 'function' ? copies() : copies, reduced }));
  return {
    update: () => team.ensure()?.update(),
    leave: team.leave,
    info: () => team.made()?.info() ?? null,
  };
}
