// GET /docs in a real browser (Debian's chromium driven by playwright-core): the page renders every
// operation from assets this service serves (its Content-Security-Policy allows no other origin),
// and "Try it out" on GET /integrations/me, with a key entered in "Authorize", reaches the running
// server and shows its 200. A screenshot is left in test/artifacts/ to look at.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { chromium } from 'playwright-core';
import { serviceForFile } from '../support/context.js';
import { createTenant } from '../support/tenants.js';

const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find(
  (path): path is string => Boolean(path && existsSync(path)),
);
const ARTIFACTS = new URL('../artifacts/', import.meta.url);

test('the reference page lists the operations and its "Try it out" calls the server', {
  skip: CHROMIUM ? false : 'no chromium here (.ci/run installs it)',
  timeout: 120_000,
}, async (t) => {
  const svc = await serviceForFile();
  const tenant = await createTenant(svc);
  await svc.api.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(svc.api.server.address() as AddressInfo).port}`;

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  t.after(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
  const elsewhere: string[] = [];
  page.on('request', (request) => {
    if (!request.url().startsWith(base) && !request.url().startsWith('data:')) elsewhere.push(request.url());
  });
  const failures: string[] = [];
  page.on('pageerror', (error) => failures.push(error.message));

  await page.goto(`${base}/docs`);
  await page.locator('.opblock').first().waitFor({ timeout: 30_000 });
  const operations = await page.locator('.opblock-summary-path').allTextContents();
  const texts = operations.map((s) => s.replace(/\u200b/g, '').trim());
  for (const path of ['/bookings', '/bookings/{id}/external-id', '/webhooks/{id}/rotate-secret', '/events']) {
    assert.ok(texts.includes(path), `${path} is listed: ${texts.join(' ')}`);
  }
  // 22 operations, then the 9 webhook deliveries.
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: new URL('reference.png', ARTIFACTS).pathname });
  assert.equal(texts.filter((s) => s.startsWith('/')).length, 22, texts.join(' '));
  assert.ok(texts.includes('booking.cancelled') && texts.includes('webhook.test'), texts.join(' '));

  // Authorize with the key, then Try it out on GET /integrations/me.
  await page.locator('button.authorize').first().click();
  await page.locator('.modal-ux input[type=text], .modal-ux input[type=password]').first().fill(tenant.key);
  await page.locator('.modal-ux button.authorize').first().click();
  await page.locator('.modal-ux button.btn-done').first().click();

  const operation = page.locator('#operations-Integration-getIntegration');
  await operation.locator('.opblock-summary').click();
  await operation.locator('button.try-out__btn').click();
  await operation.locator('button.execute').click();
  const status = operation.locator('.live-responses-table tbody .response-col_status').first();
  await status.waitFor({ timeout: 30_000 });
  await operation.scrollIntoViewIfNeeded();
  await page.screenshot({ path: new URL('reference-try-it.png', ARTIFACTS).pathname });
  assert.equal((await status.textContent())?.trim(), '200');
  const body = await operation.locator('.live-responses-table .microlight').first().textContent();
  assert.match(body ?? '', new RegExp(tenant.organization.id));

  assert.deepEqual(elsewhere, [], 'every asset comes from the service');
  assert.deepEqual(failures, []);
});
