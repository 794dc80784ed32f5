// Chapter 9: microbatches inside GPU 1: the close-up open with its four layers, the run's
// microbatches as trays beside it; each in turn lights as it climbs the layers and comes
// back down, its gradient ticks piling on the last, then one update (stepinside.js).
import { gpuCloseUp } from './closeup.js';

export function enter(ctx) {
  const run = ctx.story.runs[ctx.chapter.run];
  return gpuCloseUp(ctx, true, { layers: 4, stepping: true, trays: run?.microbatches ?? 1 });
}
