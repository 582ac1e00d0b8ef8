import { type Base, type CallbackWithPromise, type ClusterMetadata, kMetadata, type MetadataOptions, NetworkError } from '@platformatic/kafka';

/**
 * @platformatic/kafka (1.35, and 2.12 alike) answers a metadata request from its cache for the
 * topics it holds and fetches the others; a `clearMetadata()` while that fetch is in flight (the
 * library clears on every stale-metadata error, as a broker waking from a stall answers
 * LEADER_NOT_AVAILABLE) rebuilds the cache from the fetched topics alone, and the answer maps the
 * cached ones to `undefined`. The library's own callers read them without a check (the consumer's
 * fetch loop, the producer's partition leaders), so a TypeError would be thrown from its callback,
 * where no caller can catch it, and the process would exit. Found while tracing the broker-pause
 * chaos test's crashes (those came from a stream left running after its consumer closed: see the
 * consumer's stop()); platformatic.metadata.integration.test.ts reproduces the race.
 *
 * Guarded per client, for every caller inside the library too: an answer that lacks a requested
 * topic is turned into a retriable network error (what the callers handle: a send fails and is
 * retried, the consumer's session ends and the wrapper starts a fresh one), and the cache is
 * dropped so that the next request fetches every topic again.
 */
export function completeMetadataAnswers<C extends Base>(client: C): C {
  const metadata = client[kMetadata].bind(client);
  client[kMetadata] = (options: MetadataOptions, callback: CallbackWithPromise<ClusterMetadata>) =>
    metadata(options, ((error: Error | null, answer?: ClusterMetadata) => {
      const missing = error || !answer ? [] : (options.topics ?? []).filter((topic) => answer.topics.get(topic) === undefined);
      if (missing.length === 0) {
        callback(error, answer);
        return;
      }
      client.clearMetadata();
      callback(new NetworkError(`the metadata answer lacks ${missing.join(', ')} (its cache was cleared while it was fetched); asking again`), undefined);
    }) as CallbackWithPromise<ClusterMetadata>);
  return client;
}
