import { describe, expect, it } from 'vitest';
import { duration, formatSummary, parseTimings } from './summary.js';

// As scripts/test.sh writes it: a project's line comes before the line of the step it ran in.
const TSV = [
  'step\tnpm dependencies\t412\tok',
  'step\tlocal stack\t3120\tok',
  'project\tunit tests\tunit\t57900\tok',
  'step\tunit tests\t58200\tok',
  'project\tintegration tests\tintegration\t95000\tok',
  'step\tintegration tests\t95400\tok',
  '',
].join('\n');

describe('npm test summary', () => {
  it('prints every step and every vitest project with its duration, and the tests: line last', () => {
    const lines = formatSummary(
      parseTimings(TSV),
      { unit: { passed: 885, failed: 0, skipped: 2 }, integration: { passed: 300, failed: 0, skipped: 1 } },
      0,
      160_000,
    );
    expect(lines.at(-1)).toBe('tests: 1185 passed, 0 failed, 3 skipped');
    expect(lines.at(-2)).toBe('all checks passed in 160s');
    const text = lines.join('\n');
    expect(text).toContain('Durations (total 2m 40s):');
    expect(text).toMatch(/^ {2}npm dependencies +0\.4s +0%$/m);
    expect(text).toMatch(/^ {2}unit tests +58\.2s +36%$/m);
    expect(text).toMatch(/^ {4}vitest project unit +57\.9s +36% {2}885 passed, 0 failed, 2 skipped$/m);
    expect(text).toMatch(/^ {4}vitest project integration +1m 35s +59% {2}300 passed, 0 failed, 1 skipped$/m);
    // Each project right under its step.
    expect(lines.findIndex((l) => l.includes('vitest project unit'))).toBe(lines.findIndex((l) => l.startsWith('  unit tests')) + 1);
  });

  it('after a failure: the durations so far and the step that failed last, no tests: line', () => {
    const tsv = `${TSV}project\tabuse tests\tabuse\t30000\tfailed\nstep\tabuse tests\t30100\tfailed\n`;
    const lines = formatSummary(parseTimings(tsv), { unit: { passed: 885, failed: 0, skipped: 2 }, abuse: { passed: 20, failed: 1, skipped: 0 } }, 1, 190_000);
    expect(lines.at(-1)).toBe('npm test failed in step "abuse tests" (exit 1) after 3m 10s');
    expect(lines.join('\n')).toMatch(/^ {4}vitest project abuse +30\.0s +16% {2}FAILED: 20 passed, 1 failed, 0 skipped$/m);
    expect(lines.some((l) => l.startsWith('tests:'))).toBe(false);
  });

  it('rejects a line it does not know, rather than leaving a step out', () => {
    expect(() => parseTimings('stpe\tlint\t1\tok\n')).toThrow(/unexpected line/);
  });

  it('writes durations in seconds, and in minutes from one minute on', () => {
    expect(duration(412)).toBe('0.4s');
    expect(duration(59_940)).toBe('59.9s');
    expect(duration(60_000)).toBe('1m 00s');
    expect(duration(401_000)).toBe('6m 41s');
  });
});
