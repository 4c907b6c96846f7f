/** The live feature's door: surfaces import the host only through index files. */

export * from './live.js';
export * from './live-outbox.js';
