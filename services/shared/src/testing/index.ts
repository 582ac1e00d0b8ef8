export * from './env.js';
export * from './fixtures.js';
export * from './wait.js';
export * from './ports.js';
export * from './metrics-text.js';
export * from './redis-server.js';
export * from './kafka-broker.js';
export * from './secure-kafka.js';
