import { AppError, errorMessage } from '../errors.js';

/**
 * The wrapper's errors. Whatever the library threw is kept as `cause`; callers classify by
 * `code` and `retryable` only:
 * - `kafka_unavailable`: no broker answered in time, or the connection broke (retryable).
 * - `kafka_rebalance`: the group moved on (rebalance, fenced member); the work is read again
 *   by whoever owns the partition now (retryable).
 * - `kafka_send_expired`: a send waited in the queue past its deadline and was dropped before
 *   it reached the network: nothing of it was written (retryable).
 * - `kafka_producer_full`: the producer already holds its bound of queued bytes; nothing was
 *   queued (retryable).
 * - `kafka_outcome_unknown`: a send in flight got no answer in time, or failed in a way that
 *   does not prove it was not written (some partition leaders wrote their part): it may be
 *   stored (retryable with the same ids).
 * - `kafka_producer_state`: the broker no longer accepts this producer's identity or sequence
 *   numbers (OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID, INVALID_PRODUCER_EPOCH,
 *   PRODUCER_FENCED, ...): typically a send that timed out on our side was written on the
 *   broker's after all. The producer must continue under a new identity (`createProducer` does);
 *   for the caller the send's outcome is unknown (retryable).
 * - `kafka_unknown_topic`: the topic does not exist (not retryable: setup creates topics).
 * - `kafka_auth_failed`: the brokers refused our credentials (SASL) or we refused their
 *   certificate (TLS): retrying cannot help, a setting must change (docs/security.md).
 * - `kafka_not_authorized`: the principal lacks an ACL for the topic, group or cluster
 *   operation (not retryable: the ACLs must change).
 * - `kafka_error`: anything else the broker or library refused (`retryable` as the library says).
 */
export type KafkaErrorCode =
  | 'kafka_unavailable'
  | 'kafka_rebalance'
  | 'kafka_send_expired'
  | 'kafka_producer_full'
  | 'kafka_outcome_unknown'
  | 'kafka_producer_state'
  | 'kafka_unknown_topic'
  | 'kafka_auth_failed'
  | 'kafka_not_authorized'
  | 'kafka_error';

export class KafkaError extends AppError {
  declare readonly code: KafkaErrorCode;

  constructor(code: KafkaErrorCode, message: string, options: { retryable: boolean; cause?: unknown }) {
    super(code, message, options);
    this.name = 'KafkaError';
  }
}

/** How a driver reads its library's errors. */
export interface ErrorTraits {
  /** The library says retrying can help. */
  retryable: boolean;
  /** Connection refused/closed or a request timeout. */
  unavailable: boolean;
  /** The member's generation is stale, or it is unknown to the coordinator. */
  rebalance: boolean;
  /** The broker does not know the topic (or partition). */
  unknownTopic?: boolean;
  /** SASL authentication failed. */
  authentication?: boolean;
  /** Node's code of a failed TLS verification or handshake (e.g. SELF_SIGNED_CERT_IN_CHAIN). */
  tlsCode?: string;
  /** The broker's authorization error (TOPIC_AUTHORIZATION_FAILED, GROUP_..., CLUSTER_...). */
  authorization?: string;
  /** The broker's error for a producer identity or sequence it no longer accepts (`PRODUCER_STATE_ERRORS`). */
  producerState?: string;
  /**
   * A failed send of which some part may be written although its failure reads as "refused":
   * a send spans one produce request per partition leader, and the library answered for some
   * leaders (written) while the dead one refused the connection (@platformatic/kafka says so;
   * kafkajs cannot tell, see `drivers/kafkajs.client.ts`). The send's outcome is unknown.
   */
  mayBeWritten?: boolean;
}

/**
 * Kafka's errors that say the idempotent producer's identity or sequence numbers are out of
 * step with the broker's (the same names in every client library). Retrying on the same
 * producer fails the same way for ever: the Java client takes a new epoch or producer id
 * (KIP-360, KIP-890), and so does the wrapper (`createProducer`).
 */
export const PRODUCER_STATE_ERRORS: ReadonlySet<string> = new Set([
  'OUT_OF_ORDER_SEQUENCE_NUMBER',
  'UNKNOWN_PRODUCER_ID',
  'INVALID_PRODUCER_EPOCH',
  'PRODUCER_FENCED',
  'INVALID_PRODUCER_ID_MAPPING',
  'INVALID_TXN_STATE',
]);

/** Wraps a library error once; a `KafkaError` passes through unchanged. */
export function toKafkaError(what: string, err: unknown, traits: (err: unknown) => ErrorTraits): KafkaError {
  if (err instanceof KafkaError) return err;
  const t = traits(err);
  // First: whatever else went wrong, part of it is stored, so the caller must not take it for "nothing written".
  if (t.mayBeWritten) {
    return new KafkaError('kafka_outcome_unknown', `${what}: part of the send may be written (other partition leaders took theirs): ${errorMessage(err)}`, {
      retryable: true,
      cause: err,
    });
  }
  if (t.authentication || t.tlsCode) return new KafkaError('kafka_auth_failed', `${what}: ${errorMessage(err)}`, { retryable: false, cause: err });
  if (t.authorization) {
    return new KafkaError('kafka_not_authorized', `${what}: not authorized (${t.authorization}): ${errorMessage(err)}`, { retryable: false, cause: err });
  }
  if (t.unknownTopic) return new KafkaError('kafka_unknown_topic', `${what}: ${errorMessage(err)}`, { retryable: false, cause: err });
  if (t.producerState) {
    return new KafkaError('kafka_producer_state', `${what}: the broker refused the producer's state (${t.producerState}): ${errorMessage(err)}`, {
      retryable: true,
      cause: err,
    });
  }
  const code: KafkaErrorCode = t.rebalance ? 'kafka_rebalance' : t.unavailable ? 'kafka_unavailable' : 'kafka_error';
  return new KafkaError(code, `${what}: ${errorMessage(err)}`, { retryable: t.retryable || t.unavailable || t.rebalance, cause: err });
}

/** Runs a library call and wraps what it throws. */
export async function wrapErrors<T>(what: string, traits: (err: unknown) => ErrorTraits, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw toKafkaError(what, err, traits);
  }
}

const REFUSED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/**
 * True when every attempt behind `err` failed to connect at all (connection refused, no such
 * host): no request left this process to the brokers it names. Any other failure of a send
 * (a timeout, a connection closed with the request on it, a broker error for some of the
 * partitions of a request) leaves the outcome open.
 * It does not prove that nothing was written: a send goes to every partition leader at once, and
 * the errors list only the leaders that failed, so the requests to the others may have been
 * written (a cluster with one broker down). The driver says so (`ErrorTraits.mayBeWritten`,
 * which makes the error `kafka_outcome_unknown`); the producer checks that first.
 */
export function connectionRefused(err: unknown): boolean {
  const leaves: unknown[] = [];
  const seen = new Set<unknown>();
  const walk = (e: unknown, depth: number) => {
    if (!e || typeof e !== 'object' || seen.has(e) || depth > 12) return;
    seen.add(e);
    const x = e as { cause?: unknown; errors?: unknown[] };
    const inner = [...(x.cause ? [x.cause] : []), ...(Array.isArray(x.errors) ? x.errors : [])];
    if (inner.length === 0) leaves.push(e);
    for (const i of inner) walk(i, depth + 1);
  };
  walk(err, 0);
  return leaves.length > 0 && leaves.every((l) => REFUSED.has(String((l as { code?: unknown }).code)));
}

/**
 * Node's codes of a TLS failure: the peer's certificate not trusted or not for this host, or a
 * handshake that failed (e.g. ERR_SSL_WRONG_VERSION_NUMBER: the port does not speak TLS).
 */
const TLS_VERIFY_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
  'HOSTNAME_MISMATCH',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

export function isTlsFailureCode(code: string): boolean {
  return TLS_VERIFY_CODES.has(code) || code.startsWith('ERR_SSL_');
}

/** The first TLS failure code along `cause` and aggregated `errors`, if any. */
export function findTlsFailure(err: unknown): string | undefined {
  const seen = new Set<unknown>();
  const walk = (e: unknown, depth: number): string | undefined => {
    if (!e || typeof e !== 'object' || seen.has(e) || depth > 12) return undefined;
    seen.add(e);
    const x = e as { code?: unknown; cause?: unknown; errors?: unknown[] };
    if (typeof x.code === 'string' && isTlsFailureCode(x.code)) return x.code;
    for (const inner of [x.cause, ...(Array.isArray(x.errors) ? x.errors : [])]) {
      const found = walk(inner, depth + 1);
      if (found) return found;
    }
    return undefined;
  };
  return walk(err, 0);
}
