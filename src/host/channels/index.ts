/** The channels feature's door: surfaces import the host only through index files. */
export * from './channel-list-live.js';
export * from './channel-pages.js';
export * from './channel-reads.js';
export * from './channel-refs.js';
export * from './channels.js';
export * from './invitations.js';
export * from './member-pages.js';
export * from './read-marks.js';
