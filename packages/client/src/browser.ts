import { createClient, type IngestClient } from './client.js';
import type { ClientOptions } from './client.options.js';

/**
 * The client for a web page, with a publishable key (`svc_pub_…`; the account lists the page's
 * origin). When the page is hidden (tab switched, app backgrounded: often the last moment a
 * mobile browser runs the page's code) or unloaded, what is queued goes out at once through
 * `fetch(…, { keepalive: true })`, which outlives the page. Not `navigator.sendBeacon`: a beacon
 * cannot carry the `Authorization` header the API authenticates with.
 */
interface PageEvents {
  addEventListener(type: string, listener: () => void): void;
  removeEventListener(type: string, listener: () => void): void;
}

/** `close()` also removes the page listeners. */
export function createBrowserClient(options: ClientOptions): IngestClient {
  const client = createClient(options);
  const page = globalThis as unknown as PageEvents & { document?: PageEvents & { visibilityState?: string } };
  const onVisibility = () => {
    if (page.document?.visibilityState === 'hidden') client.flushKeepalive();
  };
  const onPageHide = () => client.flushKeepalive();
  page.document?.addEventListener('visibilitychange', onVisibility);
  page.addEventListener?.('pagehide', onPageHide);
  const close = client.close.bind(client);
  client.close = async (options) => {
    page.document?.removeEventListener('visibilitychange', onVisibility);
    page.removeEventListener?.('pagehide', onPageHide);
    await close(options);
  };
  return client;
}
