/**
 * A device's bounded queue reads (DESIGN.md §3.3), one module each under host/device/: cards and
 * their limits (cards.ts), which cards a page draws from (page-window.ts), the page fitted to its
 * budget (queue-page.ts), body parts (queue-read.ts over body-parts.ts). This file keeps the import
 * path the surfaces and tests use.
 */
export { type BodyPartOptions, renderBodyPart } from './body-parts.js';
export {
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  PREVIEW_BYTES,
  type QueueCard,
  SENDER_LABEL_BYTES,
  toCard,
} from './cards.js';
export type { StaleReason } from './page-window.js';
export { type QueuePageParams, type QueuePageResult, readQueuePage } from './queue-page.js';
export { type BodyStatus, type QueueReadResult, readQueueBody } from './queue-read.js';
