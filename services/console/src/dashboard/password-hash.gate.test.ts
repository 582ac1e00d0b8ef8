import { ProblemError } from '@ingest/http';
import { describe, expect, it } from 'vitest';
import { createPasswordHashGate } from './password-hash.gate.js';

describe('password hash gate', () => {
  it('runs up to the cap at once, refuses the next with a 503 at once, and frees slots on success and failure', async () => {
    const gate = createPasswordHashGate(2);
    const releases: (() => void)[] = [];
    const held = () => gate.run(() => new Promise<string>((resolve) => releases.push(() => resolve('done'))));
    const a = held();
    await expect(gate.run(() => Promise.reject(new Error('scrypt failed')))).rejects.toThrow('scrypt failed');
    const c = held();
    expect(gate.inFlight).toBe(2);
    const refused = await gate.run(async () => 'never').catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ProblemError);
    expect(refused).toMatchObject({ kind: 'unavailable', headers: { 'retry-after': '1' } });
    releases.forEach((r) => r());
    expect(await Promise.all([a, c])).toEqual(['done', 'done']);
    expect(gate.inFlight).toBe(0);
    expect(await gate.run(async () => 'again')).toBe('again');
  });
});
