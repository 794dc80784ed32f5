// The concept labs as the page lists them before any is opened: what the toolbar, the help and
// a lab's header need (made when read), and where its code is. A lab's code (and its styles) load on first open.
import { t } from '../i18n/lang.js';

const TRY = () => t('Try it · concept lab');
export const CATALOG = [
  { id: 'ring', key: 'r', label: () => t('ring lab'), kicker: TRY, title: () => t('Agreeing on one answer: the ring'), load: () => import('./ringlab.js') },
  // The memory walls stand on the GPU servers; their towers grow up, so keep room above.
  { id: 'memory', key: 'm', label: () => t('memory'), kicker: TRY, title: () => t('How many GPUs does a model need?'), scene: { part: 'gpus', view: 2, headroom: 0.25, aspect: 1.8 }, load: () => import('./memory.js') },
  // The model slabs sit on the GPU servers: frame them clear of the panel.
  { id: 'swap', key: 'w', label: () => t('swap it'), kicker: () => t('Swap it'), title: () => t('Other ways to share the job'), scene: { part: 'gpus', view: 2, aspect: 1.8 }, load: () => import('./swapit.js') },
  { id: 'cost', key: 'c', label: () => t('cost'), kicker: () => t('Go deeper'), title: () => t('What does learning cost?'), load: () => import('./cost.js') },
  { id: 'talk', key: 'q', label: () => t('questions'), kicker: () => t('Talk about it'), title: () => t('Talk about it'), load: () => import('./talk.js') },
  { id: 'reallook', key: 'h', label: () => t('real look'), kicker: () => t('The real thing'), title: () => t('What it really looks like'), load: () => import('./reallook.js') },
];
