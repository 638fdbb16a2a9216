// The delivery portal in a real browser (Debian's chromium driven by playwright-core), as an
// integrator opens it from a link the platform got from the operator API: a failing delivery is
// seen with its status and error, a test is sent and seen to succeed, the webhook is paused, its
// secret rotated (shown once), the event log filtered; another integration's webhook is not found,
// a used link and an expired session are refused. Screenshots are left in test/artifacts/.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { launchChromium, needsChromium } from '../support/browser.js';
import { putBooking } from '../support/feed.js';
import { issuePortal } from '../support/portal.js';
import { expectOk } from '../support/tenants.js';
import { createWebhook, deliveriesUntil, webhookHarness, webhookTenant } from '../support/webhooks.js';

const ARTIFACTS = new URL('../artifacts/', import.meta.url);
// A failed attempt waits a minute before the next: the failing delivery stays on screen as failed.
const SLOW_RETRIES = '60,120,240,480,960,1920,3840';

const shot = (page: Page, name: string) =>
  page.screenshot({ path: new URL(name, ARTIFACTS).pathname, fullPage: true });

test('an integrator opens the portal, sees a failing delivery, sends a test, pauses, rotates, filters', {
  ...needsChromium,
  timeout: 180_000,
}, async (t) => {
  const { svc, receiver } = await webhookHarness({ SVC_WEBHOOK_RETRY_SCHEDULE: SLOW_RETRIES });
  const tenant = await webhookTenant(svc);
  const other = await webhookTenant(svc);
  const path = `/erp/${randomUUID()}`;
  let healthy = false;
  receiver.respond((req) => (req.path === path && !healthy ? { status: 503, body: 'maintenance' } : {}));
  const hook = await createWebhook(svc, tenant, receiver.url(path));
  const otherHook = await createWebhook(svc, other, receiver.url(`/other/${randomUUID()}`));
  const booking = randomUUID();
  await putBooking(svc, tenant.organization.id, {}, booking);

  await svc.api.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(svc.api.server.address() as AddressInfo).port}`;
  const link = async () => `${base}/portal#token=${(await issuePortal(svc, tenant.integration.id)).token}`;

  // Playwright gives the browser a new, empty profile of its own.
  const browser = await launchChromium();
  t.after(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const elsewhere: string[] = [];
  page.on('request', (r) => {
    if (!r.url().startsWith(base) && !r.url().startsWith('data:')) elsewhere.push(r.url());
  });
  const failures: string[] = [];
  page.on('pageerror', (error) => failures.push(error.message));
  const refused: string[] = [];
  page.on('response', (r) => {
    if (r.status() >= 400) refused.push(`${r.status()} ${r.request().method()} ${r.url()}`);
  });
  // A bound, not a wait: on a loaded machine (four suites' processes and Chromium on two cores) the
  // first render once took longer than Playwright's default 30 s.
  page.setDefaultTimeout(90_000);
  /** Waits for `locator`; past the bound it says what the page showed, its errors and refused requests. */
  const shown = (locator: Locator) =>
    locator.waitFor().catch(async (error: Error) => {
      const text = (
        await page
          .locator('body')
          .innerText()
          .catch(() => '')
      ).slice(0, 500);
      throw new Error(
        `${error.message}\nthe page showed: ${text}\npage errors: ${failures.join('; ')}\nrefused: ${refused.join('; ')}`,
      );
    });
  mkdirSync(ARTIFACTS, { recursive: true });

  // Open from the link: the token leaves the address bar at once.
  const first = await link();
  await page.goto(first);
  const row = page.locator(`tr[data-webhook="${hook.id}"]`);
  await shown(row);
  assert.equal(new URL(page.url()).hash, '#/');
  assert.match((await page.locator('#who').textContent()) ?? '', /ERP/);
  assert.equal(await page.locator('tr[data-webhook]').count(), 1, 'only this integration’s webhooks');

  // A failing delivery: status, attempts, last HTTP status and error, the next retry.
  // The page is reloaded once the API has the failed attempt, not every 200 ms until it shows (on
  // a loaded machine one of those reloads did not render within 30 s).
  await row.locator('a').click();
  await deliveriesUntil(svc, tenant, hook.id, (d) =>
    d.some((x) => x.event_type === 'booking.created' && x.status === 'failed'),
  );
  await page.reload();
  const failing = page.locator('tr[data-event-type="booking.created"][data-status="failed"]');
  await shown(failing);
  const cells = await failing.locator('td').allTextContents();
  assert.equal(cells[3], '1 / 8');
  assert.equal(cells[4], '503');
  assert.match(cells[8] ?? '', /UTC$/, 'the next retry is shown');
  // consecutive_failures counts deliveries that ended dead; this one is still retrying.
  assert.equal(await page.locator('#failures').textContent(), '0');
  await shot(page, 'portal-failing-delivery.png');

  // The receiver is fixed; a test is sent from the portal and seen to succeed.
  healthy = true;
  await page.getByRole('button', { name: 'Send a test' }).click();
  await shown(page.locator('tr[data-event-type="webhook.test"][data-status="succeeded"]'));
  const tested = await page.locator('tr[data-event-type="webhook.test"] td').allTextContents();
  assert.equal(tested[4], '200');
  await shot(page, 'portal-test-succeeded.png');

  // Paused from the portal: the API says so too.
  await page.locator('#pause').click();
  await shown(page.locator('#resume'));
  assert.equal(await page.locator('#state').textContent(), 'paused');
  const paused = await expectOk(await svc.call('GET', `/webhooks/${hook.id}`, { key: tenant.key }));
  assert.equal(paused.active, false);

  // A rotated secret is shown once, and it is the one deliveries are now signed with.
  await page.getByRole('button', { name: 'Rotate secret…' }).click();
  await page.getByRole('button', { name: 'Rotate now' }).click();
  const secret = (await page.locator('#new-secret code').textContent()) ?? '';
  assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  await shot(page, 'portal-paused-rotated.png');

  // The event log, filtered by type and by booking.
  await page.goto(`${base}/portal#/events`);
  await page.locator('select[name=type]').selectOption('booking.created');
  await page.locator('input[name=booking]').fill(booking);
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.waitForURL(/#\/events\?type=booking.created&booking=/);
  await shown(page.locator('tr[data-event]').first());
  assert.equal(await page.locator('tr[data-event]').count(), 1);
  assert.match((await page.locator('tr[data-event] td').nth(2).textContent()) ?? '', new RegExp(booking));
  await shot(page, 'portal-events.png');

  // Another integration's webhook cannot be reached from this session.
  await page.goto(`${base}/portal#/webhooks/${otherHook.id}`);
  await shown(page.locator('#not-found'));
  const direct = await page.evaluate(
    async (id) => (await fetch(`/portal/api/webhooks/${id}/deliveries`)).status,
    otherHook.id,
  );
  assert.equal(direct, 404);

  // The link was for one open only; an expired session is refused.
  const reuse = await browser.newPage();
  reuse.setDefaultTimeout(90_000);
  await reuse.goto(first);
  await reuse.locator('#denied').waitFor();
  assert.match((await reuse.locator('#denied').textContent()) ?? '', /ya se usó|caducado/);
  await reuse.close();
  svc.clock.advance(60 * 60_000);
  await page.goto(`${base}/portal#/`);
  await shown(page.locator('#denied'));
  assert.match((await page.locator('#denied').textContent()) ?? '', /caducado/);
  await shot(page, 'portal-expired.png');

  assert.deepEqual(elsewhere, [], 'every asset comes from the service');
  assert.deepEqual(failures, []);
});
