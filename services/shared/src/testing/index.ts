export * from './env.js';
export * from './fixtures.js';
export * from './wait.js';
