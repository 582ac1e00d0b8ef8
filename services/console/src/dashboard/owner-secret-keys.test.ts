import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { consoleSecretKeysFromConfig } from './owner-secret-keys.js';

const key = (b: number) => Buffer.alloc(32, b).toString('base64');

describe('console secret keys (DASHBOARD_SECRET_KEYS)', () => {
  it('without any: not configured, with a key made at start for device cookies', () => {
    const keys = consoleSecretKeysFromConfig({ DASHBOARD_SECRET_KEYS: '', DASHBOARD_SECRET_KEYS_FILE: '' });
    expect(keys.configured).toBe(false);
    expect(keys.keys).toHaveLength(1);
  });

  it('several, comma-separated, the first current; the file wins over the variable', () => {
    const keys = consoleSecretKeysFromConfig({ DASHBOARD_SECRET_KEYS: `${key(1)}, ${key(2)}`, DASHBOARD_SECRET_KEYS_FILE: '' });
    expect(keys.configured).toBe(true);
    expect(keys.keys.map((k) => k.kid)).toHaveLength(2);
    const file = join(mkdtempSync(join(tmpdir(), 'keys-')), 'dashboard.key');
    writeFileSync(file, `${key(3)}\n`);
    const fromFile = consoleSecretKeysFromConfig({ DASHBOARD_SECRET_KEYS: key(1), DASHBOARD_SECRET_KEYS_FILE: file });
    expect(fromFile.keys).toHaveLength(1);
    expect(fromFile.keys[0]?.kid).not.toBe(keys.keys[0]?.kid);
  });

  it('refuses a short key or a missing file, naming the variable and not the key', () => {
    const short = Buffer.alloc(16, 1).toString('base64');
    expect(() => consoleSecretKeysFromConfig({ DASHBOARD_SECRET_KEYS: short, DASHBOARD_SECRET_KEYS_FILE: '' })).toThrow(
      /^DASHBOARD_SECRET_KEYS: .*at least 32 bytes/,
    );
    expect(() => consoleSecretKeysFromConfig({ DASHBOARD_SECRET_KEYS: short, DASHBOARD_SECRET_KEYS_FILE: '' })).not.toThrow(short);
    expect(() => consoleSecretKeysFromConfig({ DASHBOARD_SECRET_KEYS: '', DASHBOARD_SECRET_KEYS_FILE: '/nonexistent/key' })).toThrow(
      /DASHBOARD_SECRET_KEYS_FILE: cannot read/,
    );
  });
});
