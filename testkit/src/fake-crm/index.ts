export * from './fake-crm.state.js';
export * from './fake-crm.js';
export * from './fake-hubspot.routes.js';
export * from './fake-salesforce.routes.js';
export * from './fake-soql.js';
export * from './fake-webhook.routes.js';
export * from './fake-schema.routes.js';
export * from './fake-oauth.server.js';
