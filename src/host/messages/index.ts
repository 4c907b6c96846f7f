/** The messages feature's door: surfaces import the host only through index files. */

export * from './edit-message.js';
export * from './handle-messages.js';
export * from './idempotent-sends.js';
export * from './message-place.js';
export * from './message-status.js';
export * from './message-status-types.js';
export * from './messages.js';
export * from './projection.js';
export * from './provenance.js';
