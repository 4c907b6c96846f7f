/** The identity feature's door: surfaces import the host only through index files. */
export * from './access.js';
export * from './context.js';
export * from './home.js';
export * from './presence.js';
export * from './principal-directory.js';
export * from './principals.js';
export { lastUseNotRecorded } from './record-use.js';
export * from './sessions.js';
