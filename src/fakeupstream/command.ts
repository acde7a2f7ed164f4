// `quartet fake-upstream [--port 8001] [--host 127.0.0.1] [--api-key KEY] [--chunk-delay-ms 50]
// [--completion-tokens 300]`: the OpenAI-compatible fake upstream as a process, for local runs of
// the proxy node and the streams benchmark (a stream trickled at one event every
// --chunk-delay-ms, --completion-tokens long, still capped by the request's max_tokens). It holds
// no model.
import type { Command } from '../cli.js';
import { startFakeUpstream } from './index.js';

export const command: Command = {
  summary: 'run the OpenAI-compatible fake upstream (development tool, no real model)',
  async run(args) {
    const option = (name: string) => {
      const i = args.indexOf(`--${name}`);
      return i >= 0 ? args[i + 1] : undefined;
    };
    const port = Number(option('port') ?? 8001);
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      console.error(`quartet fake-upstream: --port must be a port number, got "${option('port')}"`);
      return 2;
    }
    const counts: Record<'chunk-delay-ms' | 'completion-tokens', number | null> = {
      'chunk-delay-ms': null,
      'completion-tokens': null,
    };
    for (const name of ['chunk-delay-ms', 'completion-tokens'] as const) {
      const text = option(name);
      if (text === undefined) continue;
      const value = Number(text);
      if (!Number.isInteger(value) || value < 0 || value > 1_000_000) {
        console.error(`quartet fake-upstream: --${name} must be a whole number from 0 to 1000000, got "${text}"`);
        return 2;
      }
      counts[name] = value;
    }
    const upstream = await startFakeUpstream({ port, host: option('host') ?? '127.0.0.1', apiKey: option('api-key') });
    upstream.faults.chunkDelayMs = counts['chunk-delay-ms'] ?? 0;
    upstream.faults.completionTokens = counts['completion-tokens'];
    console.log(`fake upstream (development tool, no real model) listening on ${upstream.url}`);
    const stop = () => void upstream.close().then(() => process.exit(0));
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    return undefined;
  },
};
