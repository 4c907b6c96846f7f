/**
 * The model's bounded reads (DESIGN.md §3.1), one module each under host/reads/: pages
 * (channel-read.ts, search.ts over page.ts), one message whole or in fragments (message.ts),
 * inbox_status (inbox-status.ts) and results within the tool budget (budgets.ts). This file keeps
 * the import path the surfaces and tests use.
 */
export { errorText, errorTextFor, fitsToolOutput, toolBudgets } from './budgets.js';
export { channelRead } from './channel-read.js';
export * from './cursors.js';
export * from './history.js';
export { type InboxStatus, inboxStatus } from './inbox-status.js';
export * from './live-reads.js';
export * from './message.js';
export * from './page.js';
export {
  type ChannelReadParams,
  type ChannelSearchParams,
  DEFAULT_PAGE_LIMIT,
  MAX_PAGE_LIMIT,
  MAX_QUERY_UNITS,
  type PageResult,
  type ReadContentLocator,
  type ReadOutcome,
} from './params.js';
export { channelSearch } from './search.js';
