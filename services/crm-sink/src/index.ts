/**
 * The crm-sink's public entry: what it takes to embed the CRM sync. Its settings (the config
 * schema and loader) and the builders main.ts assembles the service with (the sink, the CRM
 * adapters, the check of the credentials' keys, the connection channel); main.ts imports them
 * from here too, so this surface is the service's own. Nothing else of src/ is public.
 */
export { createAdapter } from './adapters/index.js';
export { type CrmSinkConfig, CrmSinkConfigSchema, loadCrmSinkConfig } from './config.js';
export { createCredentialsCheck } from './credentials.check.js';
export { createCrmSink, type CrmSinkDeps } from './crm-sink.js';
export { type ConnectionChannelDeps, createConnectionChannel } from './connections/connection.channel.js';
