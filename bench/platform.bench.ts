// A trivial route mounted in quartet (all services, all plumbing: request ids, CORS, metrics,
// logging at info level (BENCH_LOG_LEVEL to change) to a discarded stream) against a bare Fastify
// route, same machine, same run.
import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { loadFullConfig } from '../src/services.js';
import { loggerOptions } from '../src/http/logging.js';
import { buildServer } from '../src/server.js';
import { benchDuration, httpLoad, type BenchResult, type LoadResult } from './harness.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default async function platformBench(): Promise<BenchResult[]> {
  const bare = Fastify();
  bare.get('/healthz', async () => ({ status: 'ok' }));
  await bare.listen({ port: 0, host: '127.0.0.1' });

  const dir = mkdtempSync(join(tmpdir(), 'quartet-bench-'));
  const level = process.env.BENCH_LOG_LEVEL ?? 'info';
  const config = loadFullConfig({ DATABASE_URL: `sqlite:${join(dir, 'bench.db')}`, LOG_LEVEL: level });
  const sink = new Writable({ write: (_chunk, _encoding, done) => done() });
  const logger = { ...(loggerOptions(level) as object), stream: sink };
  const { app } = await buildServer(config, { logger });
  await app.listen({ port: 0, host: '127.0.0.1' });

  const port = (server: { server: { address(): unknown } }) => (server.server.address() as { port: number }).port;
  const run = (p: number) =>
    httpLoad({ url: `http://127.0.0.1:${p}/healthz`, connections: 50, durationMs: benchDuration(3000) });
  try {
    // Alternate anchor and subject in several pairs and report the median pair's ratio, so the
    // drift of a shared machine hits both alike and one noisy pair does not decide the result.
    const pairs: { anchor: LoadResult; subject: LoadResult; ratio: number }[] = [];
    for (let i = 0; i < 5; i++) {
      const anchor = await run(port(bare));
      const subject = await run(port(app));
      pairs.push({ anchor, subject, ratio: subject.requestsPerSec / anchor.requestsPerSec });
    }
    pairs.sort((x, y) => x.ratio - y.ratio);
    const { anchor: a, subject: s } = pairs[Math.floor(pairs.length / 2)];
    return [
      {
        name: `platform: GET /healthz throughput (50 connections, LOG_LEVEL=${level})`,
        value: Math.round(s.requestsPerSec),
        unit: 'req/s',
        anchor: 'bare Fastify route',
        anchorValue: Math.round(a.requestsPerSec),
        ratio: round(s.requestsPerSec / a.requestsPerSec),
        notes:
          `median of ${pairs.length} alternating pairs (ratios ${pairs.map((p) => round(p.ratio)).join(', ')}); ` +
          `p99 ${s.p99Ms.toFixed(2)} ms vs ${a.p99Ms.toFixed(2)} ms; errors ${s.errors}/${a.errors}`,
      },
    ];
  } finally {
    await app.close();
    await bare.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}
