// Chapter 7: the backward pass inside GPU 1: the close-up open with its four layers in
// place, the live step drawn through them (stepinside.js): an amber band climbs, a pink
// ring comes back down leaving a tick on each layer, the gradients noted, not yet applied.
import { gpuCloseUp } from './closeup.js';

export function enter(ctx) {
  return gpuCloseUp(ctx, true, { layers: 4, stepping: true });
}
