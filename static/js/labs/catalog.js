// The concept labs as the page lists them before any is opened: what the toolbar, the help and
// a lab's header need, and where its code is. A lab's code (and its styles) load on first open.
export const CATALOG = [
  { id: 'ring', key: 'r', label: 'ring lab', kicker: 'Try it · concept lab', title: 'Agreeing on one answer: the ring', load: () => import('./ringlab.js') },
  // The memory walls stand on the GPU servers; their towers grow up, so keep room above.
  { id: 'memory', key: 'm', label: 'memory', kicker: 'Try it · concept lab', title: 'How many GPUs does a model need?', scene: { part: 'gpus', view: 2, headroom: 0.25, aspect: 1.8 }, load: () => import('./memory.js') },
  // The model slabs sit on the GPU servers: frame them clear of the panel.
  { id: 'swap', key: 'w', label: 'swap it', kicker: 'Swap it', title: 'Other ways to share the job', scene: { part: 'gpus', view: 2, aspect: 1.8 }, load: () => import('./swapit.js') },
  { id: 'cost', key: 'c', label: 'cost', kicker: 'Go deeper', title: 'What does learning cost?', load: () => import('./cost.js') },
  { id: 'talk', key: 'q', label: 'questions', kicker: 'Talk about it', title: 'Talk about it', load: () => import('./talk.js') },
  { id: 'reallook', key: 'h', label: 'real look', kicker: 'The real thing', title: 'What it really looks like', load: () => import('./reallook.js') },
];
