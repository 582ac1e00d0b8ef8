export * from './abuse.fixture.js';
export * from './admin.fixture.js';
export * from './browser.js';
export * from './dashboard.client.js';
export * from './gateway.fixture.js';
export * from './multipart.js';
export * from './neighbour.js';
export * from './raw-client.js';
