/**
 * The gateway's public entry: what it takes to embed the ingestion API. Its settings (the
 * config schema and loader) and the builder main.ts assembles the service with; main.ts imports
 * them from here too, so this surface is the service's own and never a test's back door. The
 * test kit starts the gateway in process through it. Nothing else of src/ is public.
 */
export { buildApp, type GatewayDeps } from './app.js';
export { type GatewayConfig, GatewayConfigSchema, gatewayDeprecations, loadGatewayConfig } from './config.js';
