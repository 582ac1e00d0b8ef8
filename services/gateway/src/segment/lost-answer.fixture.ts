/**
 * The "lost answer" a retrying SDK must survive: a producer for the gateway fixture that writes a
 * chosen events.raw record and then reports the write as lost (kafka_outcome_unknown, a 504), so
 * the SDK sends the same messages again and dedupe has to keep one copy.
 */
import { KafkaError, type OutgoingMessage, type Producer } from '@ingest/platform';

export interface AnswerLosingProducer {
  /** For `createGatewayFixture(config, { producer: lossy.wrap })`. */
  wrap(real: Producer): Producer;
  /** The next write whose values include `text` is written, then reported lost; once. */
  loseNextAnswerTo(text: string): void;
  /** Answers reported lost so far. */
  readonly lost: number;
}

export function answerLosingProducer(): AnswerLosingProducer {
  let loseAckOf: string | undefined;
  let lost = 0;
  return {
    wrap: (real) => ({
      ...real,
      async send(topic: string, messages: OutgoingMessage[]) {
        await real.send(topic, messages);
        if (loseAckOf !== undefined && messages.some((m) => String(m.value).includes(loseAckOf as string))) {
          loseAckOf = undefined;
          lost++;
          throw new KafkaError('kafka_outcome_unknown', 'no answer within the in-flight timeout (test)', { retryable: true });
        }
      },
    }),
    loseNextAnswerTo(text) {
      loseAckOf = text;
    },
    get lost() {
      return lost;
    },
  };
}
