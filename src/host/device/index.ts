/** The device feature's door: surfaces import the host only through index files. */
export * from './body-parts.js';
export * from './cards.js';
export * from './page-window.js';
export * from './queue-page.js';
export * from './queue-pages.js';
export * from './queue-read.js';
