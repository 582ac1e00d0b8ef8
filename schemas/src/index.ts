export * from './event-record.js';
