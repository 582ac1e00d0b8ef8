export * from './control-plane.js';
export * from './event-record.js';
export * from './ingest-event.js';
export * from './job-chunk.js';
export * from './stored-event.js';
export * from './mapping.js';
export * from './owners.js';
export * from './dashboard.js';
