/** The agents feature's door: surfaces import the host only through index files. */
export * from './agent-managers.js';
export * from './agent-runs.js';
export * from './driver-lock.js';
