/** The approvals feature's door: surfaces import the host only through index files. */
export * from './decisions.js';
export * from './policy.js';
export * from './requests.js';
export * from './rules.js';
export * from './subject.js';
export * from './views.js';
