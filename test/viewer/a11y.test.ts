// Keyboard use, screen-reader labels (axe-core scan without serious or critical violations),
// search, deep links and themes.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { expandOperation, openBrowserPage, openViewer, ROOT, sendText, type StaticServer } from './support.js';

const AXE = readFileSync(join(ROOT, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');
let site: StaticServer;
let page: Page;

openBrowserPage(
  [
    (req, res) =>
      req.url?.startsWith('/v2/') ? (sendText(res, 200, '{"id":7,"name":"doggie"}', 'application/json'), true) : false,
  ],
  (opened) => ({ site, page } = opened),
);

async function seriousViolations(p: Page) {
  await p.addScriptTag({ content: AXE });
  const result: any = await p.evaluate(`axe.run(document, { resultTypes: ['violations'] })`);
  return result.violations
    .filter((v: any) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v: any) =>
        `${v.id}: ${v.nodes
          .slice(0, 3)
          .map((n: any) => n.target.join(' '))
          .join(' | ')}`,
    );
}

describe('accessibility', () => {
  it('axe finds no serious or critical violations, light and dark, with an operation open and tried', async () => {
    await openViewer(page, site.url, `{ url: '/fixtures/petstore-2.0.json', showRequestHeaders: true }`);
    const op = await expandOperation(page, 'pet', 'get', '/pet/{petId}');
    await op.locator('input[name=petId]').fill('7');
    await op.locator('.qv-submit').click();
    await op.locator('.qv-response-code').waitFor();
    await expandOperation(page, 'pet', 'post', '/pet');
    await expandOperation(page, 'pet', 'get', '/pet/findByStatus');
    await page.locator('.qv-authorize').click();
    expect(await seriousViolations(page)).toEqual([]);
    await page.locator('.qv-theme').click();
    await expect(page.locator('.qv').getAttribute('data-theme')).resolves.toBe('dark');
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('is usable from the keyboard: tags, operations, arrows, try-it and "/" for search', async () => {
    await openViewer(page, site.url, `{ url: '/fixtures/petstore-2.0.json' }`);
    await page.locator('.qv-tag-toggle').first().focus();
    await page.keyboard.press('Enter');
    await expect(page.locator('.qv-tag-toggle').first().getAttribute('aria-expanded')).resolves.toBe('true');
    await page.keyboard.press('ArrowDown'); // first operation of "pet"
    await expect(page.evaluate(() => document.activeElement?.querySelector('.qv-path')?.textContent)).resolves.toBe(
      '/pet',
    );
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowUp');
    await expect(page.evaluate(() => document.activeElement?.querySelector('.qv-path')?.textContent)).resolves.toBe(
      '/pet/findByStatus',
    );
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown'); // DELETE /pet/{petId} (2.0: methods alphabetical, as 2.2.10)
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Enter'); // opens GET /pet/{petId}
    const op = page.locator('#operation-pet-getPetById');
    await expect(op.locator('.qv-op-head').getAttribute('aria-expanded')).resolves.toBe('true');
    expect(page.url()).toContain('#!/pet/getPetById');
    await op.locator('input[name=petId]').focus();
    await page.keyboard.type('7');
    await page.keyboard.press('Tab');
    // Tab reaches the Try it out! button, Enter presses it.
    for (
      let i = 0;
      i < 10 && !(await page.evaluate(() => document.activeElement?.classList.contains('qv-submit')));
      i++
    ) {
      await page.keyboard.press('Tab');
    }
    await page.keyboard.press('Enter');
    await expect(op.locator('.qv-response-code').textContent()).resolves.toBe('200');
    // "/" jumps to search; typing filters operations.
    await page.locator('.qv-title').click();
    await page.keyboard.press('/');
    await expect(page.evaluate(() => document.activeElement?.classList.contains('qv-search'))).resolves.toBe(true);
    await page.keyboard.type('inventories');
    await expect
      .poll(() => page.locator('.qv-op:visible .qv-path').allTextContents(), { timeout: 60_000 })
      .toEqual(['/store/inventory']);
    await expect(page.locator('.qv-message').textContent()).resolves.toContain('1 operations match');
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => document.querySelectorAll('.qv-op[hidden]').length === 0);
  });

  it('labels controls for screen readers and tabs with arrow keys', async () => {
    await openViewer(page, site.url, `{ url: '/fixtures/petstore-2.0.json' }`);
    const op = await expandOperation(page, 'user', 'get', '/user/login');
    await expect(op.getByLabel('username (required)').count()).resolves.toBe(1);
    await expect(op.locator('.qv-op-head').getAttribute('aria-controls')).resolves.toBe(
      await op.locator('.qv-op-body').getAttribute('id'),
    );
    const tab = op.locator('[role=tab][aria-selected=true]').first();
    await tab.focus();
    await page.keyboard.press('ArrowLeft');
    await expect(op.locator('[role=tab][aria-selected=true]').first().textContent()).resolves.toBe('Model');
  });

  it('opens deep links #!/Tag/operationId', async () => {
    await openViewer(page, site.url, `{ url: '/fixtures/petstore-2.0.json' }`, '#!/store/placeOrder');
    await expect(page.locator('#operation-store-placeOrder .qv-op-head').getAttribute('aria-expanded')).resolves.toBe(
      'true',
    );
    await expect(page.locator('.qv-tag-toggle', { hasText: 'store' }).getAttribute('aria-expanded')).resolves.toBe(
      'true',
    );
    await expect(page.locator('.qv-tag-toggle', { hasText: 'pet' }).getAttribute('aria-expanded')).resolves.toBe(
      'false',
    );
  });
});
