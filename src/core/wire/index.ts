/**
 * The shapes of the JSON-RPC replies and live notifications (docs/rpc.md), declared once: the
 * host's functions return them and the web page (web/src/wire.ts) imports them type-only. Types
 * only, and nothing imported from outside this folder, so the page type-checks them without the
 * host's Node-typed modules.
 */
export type * from './agents.js';
export type * from './approvals.js';
export type * from './channels.js';
export type * from './kinds.js';
export type * from './live.js';
export type * from './queue.js';
export type * from './rpc.js';
