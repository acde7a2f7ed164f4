// With WORKERS > 1 the node is announced once, by the primary process, while every worker shows
// the npub (docs/proxy-nostr.md).
import { npubEncode, nsecEncode } from 'nostr-tools/nip19';
import { generateSecretKey, getPublicKey, verifyEvent } from 'nostr-tools/pure';
import { describe, expect, it } from 'vitest';
import { logLines, serveInTempDir, waitForHttp } from '../support/process.js';
import { startRelayDouble } from './nostr-relay.js';

async function until(probe: () => boolean, explain: () => string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out; the output so far:\n${explain()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('the announcement with WORKERS=2', () => {
  it('is made by the primary alone; each worker shows the npub', async () => {
    const relay = await startRelayDouble();
    const secret = generateSecretKey();
    const nsec = nsecEncode(secret);
    const { run, port, stop } = await serveInTempDir({
      SERVICES: 'proxy',
      WORKERS: '2',
      LOG_LEVEL: 'info',
      LOG_SYNC: '1',
      PROXY_MINTS: 'https://mint.example.com',
      PROXY_HTTP_URL: 'https://node.example.com',
      NOSTR_NSEC: nsec,
      NOSTR_RELAYS: relay.url,
    });
    try {
      await waitForHttp(`http://127.0.0.1:${port}/healthz`);
      await until(() => run.output().split('Server listening').length - 1 >= 2, run.output);
      await until(() => relay.accepted.length === 1, run.output);
      expect(verifyEvent(relay.accepted[0])).toBe(true);

      // Both workers answer (each new connection goes to the next free worker), with the same npub.
      const npubs = new Set<string>();
      const served = () =>
        new Set(
          logLines(run)
            .filter((line) => (line.req as { url?: string } | undefined)?.url === '/v1/info')
            .map((line) => line.pid),
        );
      for (let i = 0; i < 50 && served().size < 2; i++) {
        const info = await fetch(`http://127.0.0.1:${port}/v1/info`, { headers: { connection: 'close' } });
        npubs.add((await info.json()).npub);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(served().size).toBe(2);
      expect([...npubs]).toEqual([npubEncode(getPublicKey(secret))]);

      // Each process logs this line when it starts announcing: only the primary does.
      const announcing = run
        .output()
        .split('\n')
        .filter((line) => line.includes('Nostr: announcing the node'));
      expect(announcing).toHaveLength(1);
      expect(JSON.parse(announcing[0]).role).toBe('primary');
      expect(relay.connections).toBe(1);
      expect(run.output()).not.toContain(nsec);

      run.child.kill('SIGTERM');
      expect(await run.exited).toBe(0);
    } finally {
      stop();
      await relay.close();
    }
  }, 120_000);
});
