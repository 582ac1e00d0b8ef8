import type { Component } from '@ingest/platform';
import type { FastifyInstance } from 'fastify';

/** The API server as a lifecycle component: stop() lets in-flight requests finish (new ones get 503). */
export function httpServerComponent(app: FastifyInstance, host: string, port: number, name = 'http-server'): Component & { url(): string } {
  let listening = false;
  let url = '';
  return {
    name,
    async start() {
      url = await app.listen({ host, port });
      listening = true;
    },
    async stop() {
      listening = false;
      await app.close();
    },
    healthy: () => listening,
    url: () => url,
  };
}
