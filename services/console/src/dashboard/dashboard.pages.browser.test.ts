/**
 * The CRM mapping and event debugger pages in headless Chromium, against the real gateway,
 * processor (dedupe, storage), Kafka, Redis and ClickHouse: an owner edits a mapping with an
 * error, sees the server's message next to the editor and jumps to it, fixes and saves it,
 * compares versions, dry-runs a sample event; sends events with an API key and watches them
 * arrive in the debugger, filters them and opens one; sends a Segment batch and watches its
 * accepted message and its refused one (reason, route, stored fields) arrive; enrols an authenticator app on the
 * Security page and signs in again with password and code.
 */
import { toDeadLetterMessage } from '@ingest/platform';
import { generate } from 'otplib';
import { uniqueSuffix, waitFor } from '@ingest/testkit';
import type { Browser, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { type GatewayFixture, signedInDashboardPage, screenshot } from '@ingest/testkit/gateway';
import { usePipelineDashboard } from './pipeline-dashboard.fixture.js';

const email = `pages-${uniqueSuffix()}@example.com`;
const password = `pages-${uniqueSuffix()}-password`;
const dash = usePipelineDashboard({ processorName: 'pages-processor', owner: { email, password } });
let gw: GatewayFixture;
let browser: Browser;
let page: Page;
let baseUrl: string;
/** The gateway's public API, where the keys the dashboard makes are used. */
let apiUrl: string;
let accountId: string;
let apiKey: string;

beforeAll(async () => {
  ({ gw, browser, baseUrl, apiUrl, accountId, apiKey } = dash);
  page = await signedInDashboardPage(browser, baseUrl, { email, password });
});

const editor = () => page.getByLabel('Mapping document (JSON)');
// This stack has no connection channel to crm-sink: the owner saves without the CRM check (mapping-form.browser.test.ts has it).
const saveUnchecked = async (button: string) => {
  await page.getByRole('button', { name: button }).click();
  await page.getByRole('button', { name: 'Save without checking' }).click();
};

describe('CRM mapping page', () => {
  it('shows the server error inline and jumps to it; the fixed document saves as version 1', async () => {
    await page.getByRole('link', { name: 'CRM mapping' }).click();
    await page.getByRole('heading', { name: 'CRM mapping' }).waitFor();
    const starter = await editor().inputValue();
    expect(starter).toContain('"signed-up"');

    await editor().fill(starter.replace('"op": "increment"', '"op": "incremnt"'));
    await page.getByRole('button', { name: 'Save version 1' }).click();
    const errorButton = page.getByRole('list', { name: 'Validation errors' }).getByRole('button').first();
    await errorButton.waitFor();
    expect(await errorButton.textContent()).toContain('/rules/0/actions/1');
    expect(await editor().getAttribute('aria-invalid')).toBe('true');
    await screenshot(page, 'mapping-error');

    // Keyboard: the message is a button; Enter selects the broken place in the editor.
    await errorButton.focus();
    await page.keyboard.press('Enter');
    // (Runs in the page; the structural type stands in for HTMLTextAreaElement, this file has no DOM types.)
    type Area = { value: string; selectionStart: number; selectionEnd: number; ownerDocument: { activeElement: unknown } };
    const selected = await editor().evaluate((el) => {
      const area = el as unknown as Area;
      return { focused: area.ownerDocument.activeElement === area, text: area.value.slice(area.selectionStart, area.selectionEnd) };
    });
    expect(selected.focused).toBe(true);
    expect(selected.text).toContain('incremnt');

    await editor().fill(starter);
    await saveUnchecked('Save version 1');
    await page.getByRole('status').filter({ hasText: 'Saved as version 1.' }).waitFor();
    await page.getByRole('row', { name: new RegExp(`owner:${email}`) }).waitFor();
  });

  it('saves version 2 with If-Match, shows a conflict for a stale edit, and diffs versions', async () => {
    await editor().fill((await editor().inputValue()).replace('"first_source"', '"first_channel"'));
    await saveUnchecked('Save as version 2');
    await page.getByRole('status').filter({ hasText: 'Saved as version 2.' }).waitFor();

    // Someone else saves version 3 meanwhile (the admin API's path, as another tab would).
    const current = gw.controlPlane.currentMapping(accountId);
    await gw.controlPlane.putMapping(accountId, current?.mapping, 'admin', { expectedVersion: 2 });
    await editor().fill((await editor().inputValue()).replace('"signups"', '"signup_count"'));
    await page.getByRole('button', { name: 'Save as version 3' }).click();
    const conflict = page.getByRole('alert').filter({ hasText: 'changed since you started editing' });
    await conflict.waitFor();
    expect(await conflict.textContent()).toContain('Version 3 is now current (you edited version 2)');
    // The history already shows the version that won, by its author; the editor keeps the owner's text.
    await page
      .getByRole('row', { name: /^3\s*current/ })
      .getByText('admin')
      .waitFor();
    expect(await editor().inputValue()).toContain('"signup_count"');
    await screenshot(page, 'mapping-conflict');
    await conflict.getByRole('button', { name: 'Load version 3' }).click();
    await conflict.waitFor({ state: 'hidden' });
    expect(await editor().inputValue()).toContain('"signups"');

    await page.getByRole('button', { name: 'Compare version 1 with the current one' }).click();
    const diff = page.getByLabel('Differences from version 1 to version 3');
    await diff.waitFor();
    expect(await diff.locator('.diff-removed').allTextContents()).toEqual([expect.stringContaining('"first_source"')]);
    expect(await diff.locator('.diff-added').allTextContents()).toEqual([expect.stringContaining('"first_channel"')]);
    const history = await page.getByRole('table', { name: /Mapping versions/ }).textContent();
    expect(history).toContain(`owner:${email}`);
    expect(history).toContain('admin');
    await screenshot(page, 'mapping-history-diff');
  });

  it('dry-runs a sample event: the planned operation and every rule with its outcome', async () => {
    await page.getByRole('button', { name: 'Dry-run' }).click();
    const result = page.getByTestId('dry-run-result');
    await result.waitFor();
    expect(await result.getByRole('heading', { level: 3 }).first().textContent()).toContain('1 planned operation (draft)');
    expect(await result.getByLabel('Planned operations').textContent()).toContain('"first_channel": "ads"');
    expect(await result.getByRole('row', { name: /signed-up/ }).textContent()).toContain('matched');

    // An event the rule does not match, against the stored version: no operation, and why.
    await page.getByLabel('Use the document in the editor').uncheck();
    await page.getByLabel(/Sample event/).fill(JSON.stringify({ eventName: 'Logged In', email: 'ada@example.com' }));
    await page.getByRole('button', { name: 'Dry-run' }).click();
    await result.getByText('0 planned operations (version 3)').waitFor();
    expect(await result.getByRole('row', { name: /signed-up/ }).textContent()).toContain('the event name is not listed');

    // A broken event: the server's pointer into the event.
    await page.getByLabel(/Sample event/).fill(JSON.stringify({ email: 'ada@example.com' }));
    await page.getByRole('button', { name: 'Dry-run' }).click();
    await page.getByRole('button', { name: /\/event\/eventName/ }).waitFor();
    await page.getByLabel(/Sample event/).fill(JSON.stringify({ eventName: 'Signed Up', email: 'ada@example.com', properties: { source: 'ads' } }));
    await page.getByRole('button', { name: 'Dry-run' }).click();
    await result.getByText('1 planned operation (version 3)').waitFor();
    await screenshot(page, 'mapping-dry-run');
  });

  it('deletes the mapping after a confirmation (a version that turns sync off) and saves a new one after it', async () => {
    await page.getByRole('button', { name: 'Delete mapping…' }).click();
    const confirm = page.getByRole('alert').filter({ hasText: 'Delete the mapping?' });
    await confirm.waitFor();
    expect(await confirm.textContent()).toContain('Version 4 will turn CRM sync off');
    await confirm.getByRole('button', { name: 'Delete mapping', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Deleted in version 4' }).waitFor();
    // The sink's view: no current mapping, and the deleting version in the history.
    expect(gw.controlPlane.currentMapping(accountId)).toBeUndefined();
    expect(gw.controlPlane.mappingVersions(accountId).at(-1)).toMatchObject({ version: 4, deleted: true, author: `owner:${email}` });
    await page.getByRole('row', { name: /^4\s*deleted/ }).waitFor();
    expect(await page.getByText('The mapping was deleted in version 4').count()).toBe(1);
    await screenshot(page, 'mapping-deleted');

    // Saving again turns sync back on, as version 5.
    await saveUnchecked('Save as version 5');
    await page.getByRole('status').filter({ hasText: 'Saved as version 5.' }).waitFor();
    expect(gw.controlPlane.currentMapping(accountId)?.version).toBe(5);
  });
});

const send = async (events: Record<string, unknown>[]) => {
  const response = await fetch(`${apiUrl}/v1/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ events }),
  });
  expect(response.status).toBe(202);
};

describe('event debugger page', () => {
  it('shows events sent with an API key as they arrive, filters them and opens one', async () => {
    await page.getByRole('link', { name: 'Event debugger' }).click();
    await page.getByRole('heading', { name: 'Event debugger' }).waitFor();
    await page.getByText('No events stored in the last 7 days').waitFor();

    await send([
      { eventName: 'Signed Up', email: 'ada@example.com', eventId: 'pages-evt-1', properties: { plan: 'pro' } },
      { eventName: 'Invited Teammate', email: 'grace@navy.mil', domain: 'navy.mil', eventId: 'pages-evt-2' },
    ]);
    // No reload: the page polls.
    const rows = page.getByRole('table', { name: 'Latest events, newest first' }).getByRole('row');
    await expect.poll(() => rows.count(), { timeout: 30_000 }).toBe(3);
    await send([{ eventName: 'Upgraded', email: 'ada@example.com', eventId: 'pages-evt-3' }]);
    await expect.poll(() => rows.count(), { timeout: 30_000 }).toBe(4);
    // Newest first; a second copy of an event is not listed twice.
    await send([{ eventName: 'Upgraded', email: 'ada@example.com', eventId: 'pages-evt-3' }]);
    expect(await rows.nth(1).textContent()).toContain('Upgraded');
    expect(await rows.nth(1).textContent()).toContain('stored once');
    expect(await rows.nth(1).textContent()).toContain('pending');
    await screenshot(page, 'events-live');

    await page.getByLabel('Email or domain').fill('navy.mil');
    await page.getByLabel('Email or domain').press('Enter');
    await expect.poll(() => rows.count()).toBe(2);
    expect(await rows.nth(1).textContent()).toContain('Invited Teammate');
    await page.getByLabel('Email or domain').fill('');
    await page.getByLabel('Event name').fill('sign');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(async () => (await rows.allTextContents()).slice(1)).toEqual([expect.stringContaining('Signed Up')]);
    await screenshot(page, 'events-filtered');

    await page.getByRole('button', { name: 'Details of Signed Up pages-evt-1' }).click();
    const dialog = page.getByRole('dialog', { name: /Signed Up · pages-evt-1/ });
    await dialog.waitFor();
    const stored = await dialog.getByLabel('The stored event').textContent();
    expect(stored).toContain('"plan": "pro"');
    expect(stored).toContain('"state": "pending"');
    await screenshot(page, 'events-detail');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
  });
});

describe('Segment messages on the event debugger page', () => {
  it('follows a Segment batch live: the accepted message among the events, the refused one with its reason and route, and its stored fields', async () => {
    await page.getByLabel('Event name').fill('');
    await page.getByRole('button', { name: 'Filter' }).click();
    const response = await fetch(`${apiUrl}/v1/batch`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${apiKey}:`).toString('base64')}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        batch: [
          { type: 'track', userId: 'seg-user', event: 'Segment Checkout', messageId: 'pages-seg-ok' },
          { type: 'track', event: 'Nobody Checkout', messageId: 'pages-seg-refused', properties: { cart: 3 } },
        ],
      }),
    });
    expect(await response.json()).toMatchObject({ success: true, accepted: 1, rejected: 1 });

    // No reload: both lists poll.
    await page
      .getByRole('table', { name: 'Latest events, newest first' })
      .getByRole('row', { name: /Segment Checkout/ })
      .waitFor({ timeout: 30_000 });
    const refused = page
      .getByRole('table', { name: 'Refused messages and dead letters of this account, newest first' })
      .getByRole('row', { name: /Nobody Checkout/ });
    await refused.waitFor({ timeout: 45_000 });
    const text = await refused.textContent();
    expect(text).toContain('intake');
    expect(text).toContain('POST /v1/batch');
    expect(text).toContain('required');
    // Refused at the intake: it never was an event, so it is sent again, not replayed.
    expect(await refused.getByRole('button', { name: /^Replay/ }).count()).toBe(0);
    await screenshot(page, 'events-refused');

    await refused.getByRole('button', { name: 'Stored fields of Nobody Checkout pages-seg-refused' }).click();
    const dialog = page.getByRole('dialog', { name: 'Nobody Checkout pages-seg-refused' });
    await dialog.waitFor();
    const stored = await dialog.getByLabel('The stored message').textContent();
    expect(stored).toContain('"messageId": "pages-seg-refused"');
    expect(stored).toContain('"cart": 3');
    await screenshot(page, 'events-refused-detail');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
  });
});

describe('dead letters on the event debugger page', () => {
  it('lists the account dead letter with its reason and replays it after a confirmation', async () => {
    await gw.producer.send(gw.kafka.topic('deadLetters'), [
      toDeadLetterMessage('storage', {
        message: {
          topic: gw.kafka.topic('eventsRaw'),
          partition: 0,
          offset: '3',
          key: Buffer.from(`${accountId}:pages-dead-1`),
          value: Buffer.from(JSON.stringify({ accountId, eventId: 'pages-dead-1', eventName: 'Broken Event' })),
          headers: {},
          timestamp: Date.now(),
        },
        code: 'schema_mismatch',
        reason: 'properties must be an object',
      }),
    ]);
    await page.getByRole('button', { name: 'Refresh dead letters' }).click();
    const row = page.getByRole('row', { name: /Broken Event/ });
    await row.waitFor();
    expect(await row.textContent()).toContain('schema_mismatch properties must be an object');

    await row.getByRole('button', { name: 'Replay Broken Event pages-dead-1' }).click();
    const dialog = page.getByRole('dialog', { name: /Replay Broken Event/ });
    await dialog.waitFor();
    await screenshot(page, 'events-dead-letter-replay-dialog');
    await dialog.getByRole('button', { name: 'Replay' }).click();
    await page.getByRole('status').filter({ hasText: 'Replayed Broken Event pages-dead-1 to events.raw' }).waitFor();
    await screenshot(page, 'events-dead-letters');
  });

  it("shows the owner's own changes on the Activity page (the audit log)", async () => {
    await page.getByRole('link', { name: 'Activity' }).click();
    await page.getByRole('heading', { name: 'Activity' }).waitFor();
    // The copy into ClickHouse is asynchronous: reload until the replay above is listed.
    const replayed = page.getByRole('row', { name: /dead_letter\.replay/ });
    await waitFor(
      async () => {
        await page.reload();
        await page.getByRole('heading', { name: 'Activity' }).waitFor();
        await page
          .getByText(/^(Nothing changed yet\.|When)$/)
          .first()
          .waitFor();
        return (await replayed.count()) > 0 ? true : undefined;
      },
      { description: 'the replay on the Activity page', timeoutMs: 30_000 },
    );
    expect(await replayed.first().textContent()).toContain(email);
    await page
      .getByRole('row', { name: /mapping\.put/ })
      .first()
      .waitFor();
    await screenshot(page, 'activity');
  });
});

describe('two-step sign-in', () => {
  it('enrols an authenticator app on the Security page, then signs in with password and code', async () => {
    await page.getByRole('link', { name: 'Security' }).click();
    await page.getByRole('heading', { name: 'Security' }).waitFor();
    await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
    const secret = (await page.getByTestId('totp-secret').textContent()) ?? '';
    expect(secret).toMatch(/^[A-Z2-7]{16,}$/);
    expect(await page.getByRole('img', { name: 'QR code for your authenticator app' }).getAttribute('src')).toMatch(/^data:image\/png;base64,/);
    // The app's code, computed here with the same library the server verifies with.
    await page.getByLabel('Code shown by the app').fill(await generate({ secret }));
    await page.getByRole('button', { name: 'Turn on' }).click();
    await expect.poll(() => page.getByTestId('recovery-codes').getByRole('listitem').count()).toBe(10);
    await expect.poll(() => page.getByTestId('totp-status').textContent()).toContain('Recovery codes left: 10');
    await screenshot(page, 'security-totp-on');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // The enrolment spent the current step's code; the next step's is within the tolerance.
    await page.getByLabel('Authentication code').fill(await generate({ secret, epoch: Date.now() / 1000 + 30 }));
    await page.getByRole('button', { name: 'Verify' }).click();
    // Signed in again: the shell is back, on the page the owner was on.
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    expect(await page.getByTestId('totp-status').textContent()).toContain('On:');
  });
});
