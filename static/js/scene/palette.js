// Colours of the scene, one meaning each, for the default and the projector theme.
//
// The meaning colours (forward, backward, all-reduce, waiting, failure, saved, data, and the
// plan's tensor-parallel joins, experts and pipeline hand-offs) come from
// the scene spec so the legend, the HUD and the 3D scene agree; the fallbacks below are the
// same Okabe-Ito based values, used when a spec lacks one. Structural colours (metal, boards,
// switches) are quiet on purpose so only activity draws the eye.

const MEANING_FALLBACK = {
  forward: { default: '#E69F00', projector: '#FFB000' },
  backward: { default: '#CC79A7', projector: '#FF5FC8' },
  allreduce: { default: '#56B4E9', projector: '#3FC8FF' },
  waiting: { default: '#8A94A6', projector: '#9AA3B2' },
  // Crimson, not vermilion: vermilion sits too close to the forward pass's amber, also for
  // red-green colour-blind viewers. The X and the cross-hatching carry the meaning as well.
  failure: { default: '#D7263D', projector: '#FF1F3D' },
  saved: { default: '#009E73', projector: '#00C98F' },
  data: { default: '#DCE4F0', projector: '#FFFFFF' },
  // The plan's traffic, as the HUD's time bar names it (static/css/app.css): a tensor-
  // parallel join is an all-reduce inside a server, a deeper blue than the ring's; the
  // experts and the tokens travelling to them are yellow; a pipeline hand-off is violet.
  // Each is drawn in a shape of its own too (a bridge, cubes, a capsule), never as a glow.
  tensor: { default: '#0072B2', projector: '#3A8DFF' },
  experts: { default: '#F0E442', projector: '#FFF35C' },
  pipeline: { default: '#A78BFA', projector: '#C4B5FD' },
  // The optimizer update, apart from compute (the HUD's --update): sand, not a glow colour.
  update: { default: '#D8C38F', projector: '#F0D890' },
};

// Which meaning colour each trace kind is drawn in. The all-reduce's buckets hidden under the
// backward pass are the all-reduce's blue (drawn as pulses beside the pink backward); what a
// GPU still waits for after its backward is waiting (grey, hatched), not a transfer.
export const KIND_MEANING = {
  data: 'data',
  forward: 'forward',
  backward: 'backward',
  optimizer: 'update',
  allreduce: 'allreduce',
  allreduce_hidden: 'allreduce',
  allreduce_wait: 'waiting',
  checkpoint: 'saved',
  wait: 'waiting',
  tp_allreduce: 'tensor',
  all_to_all: 'experts',
  p2p: 'pipeline',
};

const STRUCTURE = {
  default: {
    background: '#0B1220',
    floor: '#121d33',
    grid: '#1c2a44',
    chassis: '#34445f',
    gpu: '#4a5c7e',
    gpuIdle: '#5a6e96',
    wallFrame: '#7f90b0',
    switch: '#485a7c',
    switchLit: '#9fb2d8',
    cable: '#51698f',
    lake: '#1b4166',
    lakeRim: '#3d6a99',
    loader: '#4c5b7a',
    slotEmpty: '#2a3652',
    plinth: '#2a3650',
    modelSlab: '#41517a',
    text: '#e8eef8',
    // Memory account bands: lavender for weights and gradients, sand for the optimizer's
    // bookkeeping, slate for activations (none of them a meaning colour).
    memWeights: '#9d8fd6',
    memGrads: '#c3b8f0',
    memOptimizer: '#d8c38f',
    memActivations: '#6f8fa8',
    // "Doesn't fit" is hatched in a light neutral, not red: red means a failed GPU only.
    overflow: '#e8eef8',
    expert: '#f4f6fb',
    // Role plates under a stage's GPUs: quiet shades of the board, lighter stage by stage.
    stageLow: '#2c3a55',
    stageHigh: '#6f83aa',
    roleText: '#dfe7f5',
  },
  projector: {
    background: '#000000',
    floor: '#05080f',
    grid: '#121a2c',
    // On a washed-out projector the racks must read as objects, not as shadows on black:
    // the GPU packages and their dies are much lighter than in the default theme.
    chassis: '#5a6e96',
    gpu: '#8a9cc4',
    gpuIdle: '#b4c2e0',
    wallFrame: '#9fb0d0',
    switch: '#55688f',
    switchLit: '#b8c8e8',
    cable: '#6d85b0',
    lake: '#1d4a78',
    lakeRim: '#4a78aa',
    loader: '#5a6a8c',
    slotEmpty: '#2c3a55',
    plinth: '#34425e',
    modelSlab: '#4a5a80',
    text: '#ffffff',
    memWeights: '#b3a6ff',
    memGrads: '#d8d0ff',
    memOptimizer: '#f0d890',
    memActivations: '#8fb6d6',
    overflow: '#ffffff',
    expert: '#ffffff',
    stageLow: '#34466a',
    stageHigh: '#8ea4cf',
    roleText: '#ffffff',
  },
};

/** makePalette(spec, theme) -> { forward: '#..', ..., background: '#..', ... } */
export function makePalette(spec, theme = 'default') {
  const t = theme === 'projector' ? 'projector' : 'default';
  const out = { theme: t, ...STRUCTURE[t] };
  for (const [name, fb] of Object.entries(MEANING_FALLBACK)) {
    const c = spec?.colours?.[name];
    out[name] = (c && c[t]) || fb[t];
  }
  if (spec?.background?.[t]) out.background = spec.background[t];
  return out;
}
