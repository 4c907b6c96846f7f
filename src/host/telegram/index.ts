/** The telegram feature's door: surfaces import the host only through index files. */

export * from './telegram.js';
export * from './telegram-approvals.js';
export * from './telegram-reactions.js';
