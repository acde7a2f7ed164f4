// `quartet fake-upstream [--port 8001] [--host 127.0.0.1] [--api-key KEY]`: the OpenAI-compatible
// fake upstream as a process, for local runs of the proxy node. It holds no model.
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
    const upstream = await startFakeUpstream({ port, host: option('host') ?? '127.0.0.1', apiKey: option('api-key') });
    console.log(`fake upstream (development tool, no real model) listening on ${upstream.url}`);
    const stop = () => void upstream.close().then(() => process.exit(0));
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    return undefined;
  },
};
