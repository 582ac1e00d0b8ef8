/**
 * What the CRM pages' browser tests start: the real console (Kafka control plane, Redis,
 * ClickHouse) listening on a loopback port, crm-sink's connection channel in process on the same
 * control plane (the console's connection tests go through it), the fake HubSpot over HTTP
 * accepting `token`, an account with an owner, and that owner's signed-in dashboard page in
 * headless Chromium. Registered for the file (beforeAll/afterAll); use it inside tests.
 */
import { hashPassword } from '@ingest/domain';
import { uniqueSuffix, useFixture } from '@ingest/testkit';
import { type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import { type ChannelConsole, type GatewayFixture, launchChromium, signedInDashboardPage, startChannelConsole } from '@ingest/testkit/gateway';
import type { Browser, Page } from 'playwright-core';
import { ensureWebBuilt } from '../../web/bundle.js';

export interface CrmConnectionPage {
  gw: GatewayFixture;
  crm: FakeCrm;
  page: Page;
  accountId: string;
}

export function useCrmConnectionPage(options: {
  /** Names the owner and the channel's Redis key prefix. */
  label: string;
  /** The access token the fake HubSpot accepts. */
  token: string;
  viewport?: { width: number; height: number };
  /** Runs on the new account before the owner signs in (e.g. a stored credential the page's document names). */
  prepare?: (ctx: { gw: GatewayFixture; crm: FakeCrm; accountId: string }) => Promise<unknown>;
}): CrmConnectionPage {
  const email = `${options.label}-${uniqueSuffix()}@example.com`;
  const password = `${options.label}-${uniqueSuffix()}-password`;
  let browser: Browser | undefined;
  let stack: ChannelConsole | undefined;
  let crm: FakeCrm | undefined;
  const close = async () => {
    await browser?.close();
    await stack?.close();
    await crm?.stop();
  };
  return useFixture(async () => {
    try {
      await ensureWebBuilt();
      crm = await startFakeCrm({ tokens: [options.token] });
      stack = await startChannelConsole({ label: `${options.label}-browser` });
      const { gw } = stack;
      const baseUrl = await gw.console.listen({ host: '127.0.0.1', port: 0 });
      const { account } = await gw.newAccount('pro');
      await options.prepare?.({ gw, crm, accountId: account.id });
      await gw.controlPlane.createOwner(account.id, email, await hashPassword(password));
      browser = await launchChromium();
      const page = await signedInDashboardPage(browser, baseUrl, { email, password }, options.viewport);
      return { gw, crm, page, accountId: account.id };
    } catch (err) {
      await close();
      throw err;
    }
  }, close);
}
