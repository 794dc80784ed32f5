// Chapter 2: GPU 1 pulled out and drawn large, lid shut: what a GPU is made of.
import { gpuCloseUp } from './closeup.js';

export function enter(ctx) {
  return gpuCloseUp(ctx, false);
}
