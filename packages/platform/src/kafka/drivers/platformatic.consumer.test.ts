import { describe, expect, it } from 'vitest';
import { isFetchLoopDefect } from './platformatic.consumer.js';

const FRAME = '    at MessagesStream.#fetch (file:///app/node_modules/@platformatic/kafka/dist/clients/consumer/messages-stream.js:381:57)';

function withStack<E extends Error>(err: E, stack: string): E {
  err.stack = `${err.name}: ${err.message}\n${stack}`;
  return err;
}

describe('the fetch-loop defect of @platformatic/kafka 1.35', () => {
  it('is recognised by its type and the library frame that throws it', () => {
    expect(isFetchLoopDefect(withStack(new TypeError("Cannot read properties of undefined (reading 'partitions')"), FRAME))).toBe(true);
  });

  it('is nothing else: other errors from there, type errors from elsewhere, non-errors', () => {
    expect(isFetchLoopDefect(withStack(new Error('Connection closed'), FRAME))).toBe(false);
    expect(
      isFetchLoopDefect(withStack(new TypeError('x is undefined'), '    at handle (file:///app/services/processor/src/storage/storage.consumer.ts:10:3)')),
    ).toBe(false);
    expect(
      isFetchLoopDefect(
        withStack(new TypeError('y'), '    at Consumer.#join (file:///app/node_modules/@platformatic/kafka/dist/clients/consumer/consumer.js:10:3)'),
      ),
    ).toBe(false);
    expect(isFetchLoopDefect('TypeError')).toBe(false);
  });
});
