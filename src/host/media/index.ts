/** The media feature's door: surfaces import the host only through index files. */
export * from './image-fit.js';
export * from './images.js';
export * from './materialize.js';
export * from './media.js';
export * from './media-gc.js';
