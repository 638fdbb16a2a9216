// GET /docs in a real browser (Debian's chromium driven by playwright-core) at 1280×800: the page
// renders from assets this service serves (its Content-Security-Policy allows no other origin),
// its search finds an operation, GET /bookings shows its samples (curl, the TypeScript client,
// Python) and its error answers collapsed, and "try it" on GET /integrations/me, with the key
// entered once on the page, reaches the running server and shows its 200. Screenshots are left in
// test/artifacts/ (kept in git) to look at.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { launchChromium, needsChromium } from '../support/browser.js';
import { serviceForFile } from '../support/context.js';
import { createTenant } from '../support/tenants.js';

const ARTIFACTS = new URL('../artifacts/', import.meta.url);
const screenshot = (name: string) => new URL(name, ARTIFACTS).pathname;
const VIEWPORT = { width: 1280, height: 800 };

test('the reference page searches, shows GET /bookings in little room and its "try it" calls the server', {
  ...needsChromium,
  timeout: 180_000,
}, async (t) => {
  const svc = await serviceForFile();
  const tenant = await createTenant(svc);
  await svc.api.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(svc.api.server.address() as AddressInfo).port}`;

  const browser = await launchChromium();
  t.after(() => browser.close());
  const page = await browser.newPage({ viewport: VIEWPORT });
  const elsewhere: string[] = [];
  page.on('request', (request) => {
    if (!/^(data|blob):/.test(request.url()) && !request.url().startsWith(base))
      elsewhere.push(request.url());
  });
  const failures: string[] = [];
  page.on('pageerror', (error) => failures.push(error.message));
  mkdirSync(ARTIFACTS, { recursive: true });

  await page.goto(`${base}/docs`);
  await page.getByRole('search').waitFor({ timeout: 60_000 });
  await page.screenshot({ path: screenshot('reference.png'), animations: 'disabled' });

  // Search: an operation by its words, then open it from the results.
  await page.getByRole('search').click();
  await page.keyboard.type('list bookings');
  const result = page.locator('[id="search-result-api-1/tag/bookings/GET/bookings"]');
  await result.waitFor({ timeout: 30_000 });
  await page.screenshot({ path: screenshot('reference-search.png'), animations: 'disabled' });
  await result.click();
  const operation = page.locator('[id="api-1/tag/bookings/GET/bookings"]');
  await operation.getByRole('heading', { name: 'List bookings' }).waitFor();
  assert.match(page.url(), /#tag\/bookings\/GET\/bookings$/);

  // Every answer of the operation is one collapsed line; the example beside it shows one status.
  const answers = operation.getByRole('list', { name: 'Responses' });
  const statuses = (await answers.getByRole('listitem').allTextContents()).map((text) =>
    text.trim().slice(0, 3),
  );
  assert.deepEqual(statuses, ['200', '400', '401', '403', '408', '429', '431', '500', '503']);
  const listHeight = await heightOf(answers);
  const height = await heightOf(operation);
  t.diagnostic(`GET /bookings: ${Math.round(height)} px, its nine answers ${Math.round(listHeight)} px`);
  assert.ok(listHeight < VIEWPORT.height / 2, `the answers fit in half a screen: ${listHeight} px`);
  // Swagger UI showed it 6,362 px high, the error examples expanded; the nine query parameters
  // are most of what remains.
  assert.ok(height < 2 * VIEWPORT.height + 400, `GET /bookings is ${height} px high`);

  // The document's own samples, and no generated ones.
  await operation.getByTestId('client-picker').click();
  await page.screenshot({ path: screenshot('reference-samples.png'), animations: 'disabled' });
  const samples = (await page.getByRole('option').allTextContents()).map((text) => text.trim());
  assert.deepEqual(samples, ['curl', 'TypeScript client', 'Python']);
  await page.getByRole('option', { name: 'TypeScript client' }).click();
  await operation.locator('code', { hasText: 'svc.listBookings()' }).first().waitFor();
  await operation.scrollIntoViewIfNeeded();
  await page.screenshot({ path: screenshot('reference-bookings.png'), animations: 'disabled' });
  await operation.screenshot({ path: screenshot('reference-bookings-whole.png'), animations: 'disabled' });

  // "Try it": the key entered once on the page, then GET /integrations/me sent from its client.
  await page.locator('input[placeholder=Token]:visible').first().fill(tenant.key);
  const me = page.locator('[id="api-1/tag/integration/GET/integrations/me"]');
  await me.scrollIntoViewIfNeeded();
  await me.getByRole('button', { name: 'Test Request' }).click();
  const sent = page.waitForResponse((response) => response.url() === `${base}/api/v1/integrations/me`);
  await page.getByRole('button', { name: /^Send get request/ }).click();
  const answer = await sent;
  assert.equal(answer.request().headers().authorization, `Bearer ${tenant.key}`);
  assert.equal(answer.status(), 200);
  await page.getByText('200 OK').first().waitFor();
  await page.getByText(tenant.organization.id).first().waitFor();
  await page.screenshot({ path: screenshot('reference-try-it.png'), animations: 'disabled' });

  assert.deepEqual(elsewhere, [], 'every request stays on the service');
  assert.deepEqual(failures, []);
});

async function heightOf(locator: import('playwright-core').Locator): Promise<number> {
  const box = await locator.boundingBox();
  assert.ok(box, 'the element is rendered');
  return box.height;
}
