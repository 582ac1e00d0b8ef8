import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '@ingest/platform';
import { validateMapping } from './mapping.validate.js';

// The mapping examples of docs/crm-mapping.md (its ```json blocks) are what users copy: each must be a valid document.
function readmeMappingExamples(): unknown[] {
  const page = readFileSync(join(REPO_ROOT, 'docs/crm-mapping.md'), 'utf8');
  return [...page.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1] ?? '') as unknown);
}

describe('docs/crm-mapping.md examples', () => {
  const examples = readmeMappingExamples();

  it('has the HubSpot, Salesforce and webhook examples', () => {
    expect(examples.map((e) => (e as { crm: { type: string } }).crm.type)).toEqual(['hubspot', 'salesforce', 'webhook']);
  });

  it.each(examples.map((e, i) => [i, e]))('example %i is a valid mapping', (_i, example) => {
    expect(validateMapping(example)).toEqual({ ok: true, mapping: example });
  });

  it('the examples use every action op and several condition ops', () => {
    const text = JSON.stringify(examples);
    for (const op of ['set', 'setOnce', 'increment', 'max', 'min', 'append']) expect(text).toContain(`"op":"${op}"`);
    for (const op of ['in', 'gt', 'exists']) expect(text).toContain(`"op":"${op}"`);
  });
});
