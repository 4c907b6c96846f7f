/** The queue feature's door: surfaces import the host only through index files. */
export * from './delivery.js';
export * from './in-flight.js';
export * from './inbox.js';
export * from './queue.js';
