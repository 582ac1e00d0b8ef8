import type { IngestEvent } from '@ingest/schemas/ingest-event';
import { describe, expectTypeOf, it } from 'vitest';
import type { TrackEvent } from './event.types.js';

describe('TrackEvent', () => {
  it('is exactly the API schema’s IngestEvent (checked by tsc; a change of either fails type-checking)', () => {
    expectTypeOf<TrackEvent>().toEqualTypeOf<{ [K in keyof IngestEvent]: IngestEvent[K] }>();
  });
});
