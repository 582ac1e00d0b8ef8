/**
 * What the dashboard's end-to-end browser tests start: the real console and the gateway's
 * public API each on a loopback port, the real processor in process (so events sent with a key
 * the dashboard made are stored and shown), an account with an owner, and headless Chromium.
 * When a test fails, the pipeline's state is printed (a page that waits for stored events then
 * says why, not only that it timed out). Call at the top of the file.
 */
import type { Component } from '@ingest/platform';
import { hashPassword } from '@ingest/domain';
import { useFixture } from '@ingest/testkit';
import { createGatewayFixture, type GatewayFixture, launchChromium } from '@ingest/testkit/gateway';
import { describePipeline, startProcessorFor } from '@ingest/testkit/processor';
import type { Browser } from 'playwright-core';
import { beforeEach } from 'vitest';
import { ensureWebBuilt } from '../../web/bundle.js';

export interface PipelineDashboard {
  gw: GatewayFixture;
  /** The console. */
  baseUrl: string;
  /** The gateway's public API, where the keys the dashboard makes are used. */
  apiUrl: string;
  accountId: string;
  /** A secret key of the account, made with it. */
  apiKey: string;
  browser: Browser;
}

export function usePipelineDashboard(options: { processorName: string; owner: { email: string; password: string } }): PipelineDashboard {
  let gw: GatewayFixture | undefined;
  let processor: Component[] = [];
  let browser: Browser | undefined;
  const close = async () => {
    await browser?.close();
    for (const part of processor) await part.stop();
    await gw?.close();
  };
  beforeEach(({ onTestFailed }) => {
    onTestFailed(async () => {
      if (gw) console.error(await describePipeline(gw, options.processorName));
    });
  });
  return useFixture(async () => {
    try {
      await ensureWebBuilt();
      gw = await createGatewayFixture();
      const baseUrl = await gw.console.listen({ host: '127.0.0.1', port: 0 });
      const apiUrl = await gw.app.listen({ host: '127.0.0.1', port: 0 });
      processor = await startProcessorFor(gw, options.processorName);
      const { account, apiKey } = await gw.newAccount('free');
      await gw.controlPlane.createOwner(account.id, options.owner.email, await hashPassword(options.owner.password));
      browser = await launchChromium();
      return { gw, baseUrl, apiUrl, accountId: account.id, apiKey, browser };
    } catch (err) {
      await close();
      throw err;
    }
  }, close);
}
