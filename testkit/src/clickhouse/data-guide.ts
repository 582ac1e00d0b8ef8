// The data guide's test helpers for tests outside the test kit (docs/data-guide.md).
export * from './data-guide.fixture.js';
export * from './data-guide-sample.fixture.js';
