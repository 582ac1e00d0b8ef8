/**
 * The console's public entry: what it takes to embed the dashboard and the admin API. Its
 * settings (the config schema and loader) and the two builders main.ts assembles the service
 * with (the dashboard's app, the admin listener's app); main.ts imports them from here too, so
 * this surface is the service's own and never a test's back door. The test kit starts the
 * console in process through it. Nothing else of src/ is public (the web app's build lives
 * under `./build/web-bundle`, for the build scripts).
 */
export { type AdminAppDeps, buildAdminApp } from './admin/admin.app.js';
export { buildConsoleApp, type ConsoleDeps } from './app.js';
export { type ConsoleConfig, ConsoleConfigSchema, loadConsoleConfig } from './config.js';
export { readAllowanceHistory } from './dashboard/allowance-history.store.js';
