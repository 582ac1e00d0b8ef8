/**
 * Baseline C: fastify with one POST route that parses the JSON body (fastify's default parser,
 * like the gateway) and answers 202. Started as its own process by baselines.ts:
 * `node --import tsx bench/src/noop-server.ts <port>`.
 */
import Fastify from 'fastify';

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0) throw new Error('usage: noop-server.ts <port>');

const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 });
app.post<{ Body: { events?: unknown[] } }>('/v1/events', async (request, reply) =>
  reply.code(202).send({ accepted: request.body.events?.length ?? 0, rejected: 0 }),
);
app.get('/readyz', async () => ({ status: 'ready' }));

await app.listen({ host: '127.0.0.1', port });
const stop = () => void app.close().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
