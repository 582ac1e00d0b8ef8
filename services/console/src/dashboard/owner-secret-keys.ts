import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { AppError } from '@ingest/platform';
import { type OwnerSecretKey, ownerSecretKey } from '@ingest/domain';

/**
 * The console's secret keys (DASHBOARD_SECRET_KEYS[_FILE]): the first seals new TOTP secrets and
 * signs device cookies, all of them open and verify (rotation: put the new key first, keep the
 * old one until every owner signed in again). `configured: false` means none was given: device
 * cookies then use a key made at start (they are forgotten at restart and differ between
 * replicas) and second-factor enrolment is refused.
 */
export interface ConsoleSecretKeys {
  configured: boolean;
  keys: OwnerSecretKey[];
}

export function consoleSecretKeysFromConfig(config: { DASHBOARD_SECRET_KEYS: string; DASHBOARD_SECRET_KEYS_FILE: string }): ConsoleSecretKeys {
  let variable = 'DASHBOARD_SECRET_KEYS';
  let text = config.DASHBOARD_SECRET_KEYS;
  if (config.DASHBOARD_SECRET_KEYS_FILE !== '') {
    variable = 'DASHBOARD_SECRET_KEYS_FILE';
    try {
      text = readFileSync(config.DASHBOARD_SECRET_KEYS_FILE, 'utf8');
    } catch (err) {
      throw new AppError('invalid_config', `${variable}: cannot read ${config.DASHBOARD_SECRET_KEYS_FILE} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  const values = text
    .split(/[,\s]+/)
    .map((v) => v.trim())
    .filter(Boolean);
  if (values.length === 0) return { configured: false, keys: [ownerSecretKey(randomBytes(32).toString('base64'))] };
  try {
    return { configured: true, keys: values.map(ownerSecretKey) };
  } catch (err) {
    throw new AppError('invalid_config', `${variable}: ${(err as Error).message}`);
  }
}
