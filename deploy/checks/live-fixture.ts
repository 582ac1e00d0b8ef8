/**
 * Kafka side of deploy/checks/prometheus-live.sh, on topics of its own prefix so the shared
 * servers and the running services are not touched:
 *   topics <prefix>   create the topics (as `npm run setup` does, without migrations)
 *   produce <prefix>  one valid event and one message that is not JSON, to events.raw
 *   cleanup <prefix>  delete the topics and the consumer groups live-<id>-*
 */
import { randomUUID } from 'node:crypto';
import {
  allTopicSpecs,
  createKafkaClient,
  createLogger,
  createProducer,
  deleteConsumerGroups,
  deleteTopics,
  ensureTopics,
  topicName,
  withAdmin,
} from '@ingest/platform';

const [command, prefix] = process.argv.slice(2);
if (!command || !prefix || !/^live-[a-z0-9]+\.$/.test(prefix)) {
  console.error('usage: live-fixture.ts topics|produce|cleanup live-<id>.');
  process.exit(2);
}
const logger = createLogger({ service: 'prometheus-live', level: 'warn' });
const kafka = createKafkaClient({ brokers: process.env.KAFKA_BROKERS ?? '127.0.0.1:9092', clientId: 'prometheus-live', logger });

if (command === 'topics') {
  await ensureTopics(kafka, { prefix, replicationFactor: 1, logger });
} else if (command === 'produce') {
  const producer = createProducer(kafka);
  await producer.connect();
  const now = Date.now();
  const record = {
    v: 1,
    accountId: 'acc_prometheus_live',
    eventId: randomUUID(),
    eventName: 'Live Check',
    email: 'ops@example.com',
    domain: null,
    timestampMs: now,
    receivedAtMs: now,
    properties: {},
    source: 'api',
    jobId: null,
  };
  await producer.send(topicName(prefix, 'eventsRaw'), [
    { key: `${record.accountId}:${record.eventId}`, value: JSON.stringify(record) },
    { key: 'acc_prometheus_live:not-json', value: '{"this is": not json' },
  ]);
  await producer.disconnect();
} else if (command === 'cleanup') {
  await deleteTopics(
    kafka,
    allTopicSpecs().map((s) => `${prefix}${s.name}`),
  );
  // The consumer groups prometheus-live.sh gave its processors: live-<id>-jobs|dedupe|storage.
  // A group whose member was killed stays non-empty until the session timeout (6 s, the faulty processor's): retry.
  const id = prefix.slice(0, -1);
  const deadline = Date.now() + 45_000;
  let left: string[];
  do {
    left = await withAdmin(kafka, async (admin) => (await admin.listGroups()).filter((g) => g.startsWith(`${id}-`)));
    if (left.length === 0) break;
    await deleteConsumerGroups(kafka, (g) => left.includes(g)).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 2_000));
  } while (Date.now() < deadline);
  if (left.length > 0) console.error(`consumer groups left (Kafka expires them): ${left.join(', ')}`);
} else {
  console.error(`unknown command ${command}`);
  process.exit(2);
}
