import { fileURLToPath } from 'node:url';

/** Repository-relative locations of files the services read at run time. */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const CLICKHOUSE_MIGRATIONS_DIR = fileURLToPath(new URL('../../../deploy/clickhouse/migrations/', import.meta.url));
