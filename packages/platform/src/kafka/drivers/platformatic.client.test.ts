import { ConnectionPool } from '@platformatic/kafka';
import { describe, expect, it } from 'vitest';
import './platformatic.client.js';

describe('the @platformatic/kafka connection pool, as the driver patches it', () => {
  it('answers a broker the metadata does not name with an error instead of throwing', async () => {
    const pool = new ConnectionPool('test-client');
    const viaCallback = await new Promise<Error | null>((resolve) => {
      (pool.get as unknown as (broker: unknown, cb: (error: Error | null) => void) => void)(undefined, (error) => resolve(error));
    });
    expect(viaCallback?.message).toMatch(/does not name/);
    await expect((pool.get as unknown as (broker: unknown) => Promise<unknown>)(undefined)).rejects.toThrow(/does not name/);
    await pool.close();
  });
});
