// `quartet fake-upstream` as a process: the trickle options (--chunk-delay-ms, --completion-tokens)
// the streams benchmark relies on, and a clear refusal of a bad value.
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, spawnQuartet, waitForHttp, type QuartetProcess } from '../support/process.js';

describe('quartet fake-upstream', () => {
  const started: QuartetProcess[] = [];
  afterAll(async () => {
    for (const process of started) process.child.kill('SIGTERM');
    await Promise.all(started.map((p) => p.exited));
  });

  it('trickles a stream of the length asked for, one event every --chunk-delay-ms', async () => {
    const port = await freePort();
    const upstream = spawnQuartet([
      'fake-upstream',
      '--port',
      String(port),
      ...['--chunk-delay-ms', '40'],
      ...['--completion-tokens', '30'],
    ]);
    started.push(upstream);
    await waitForHttp(`http://127.0.0.1:${port}/v1/models`);
    const stream = async (maxTokens?: number) => {
      const started = performance.now();
      const response = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'openai/gpt-4o-mini',
          messages: [{ role: 'user', content: 'hi' }],
          stream: true,
          stream_options: { include_usage: true },
          ...(maxTokens === undefined ? {} : { max_tokens: maxTokens }),
        }),
      });
      // Arrival times of the chunks as read: the events come apart, not in one piece.
      const arrivals: number[] = [];
      let text = '';
      const decoder = new TextDecoder();
      const reader = response.body!.getReader();
      for (let read = await reader.read(); !read.done; read = await reader.read()) {
        arrivals.push(performance.now());
        text += decoder.decode(read.value, { stream: true });
      }
      const events = text.split('\n\n').filter(Boolean);
      return { events, arrivals, started, usage: JSON.parse(events.at(-2)!.slice(6)).usage };
    };
    const full = await stream();
    expect(full.usage.completion_tokens).toBe(30);
    // role chunk, 30 tokens, finish chunk, usage chunk, [DONE]
    expect(full.events).toHaveLength(34);
    // Paced, not in one piece: the last event comes at least 30 delays after the request, and in more
    // than one read. How many reads is not checked: a reader held up on a busy machine joins many.
    expect(full.arrivals.at(-1)! - full.started).toBeGreaterThanOrEqual(30 * 40);
    expect(full.arrivals.length).toBeGreaterThan(1);
    expect((await stream(12)).usage.completion_tokens).toBe(12);
  });

  it('refuses a value that is not a whole number', async () => {
    const upstream = spawnQuartet(['fake-upstream', '--port', '0', '--chunk-delay-ms', 'soon']);
    expect(await upstream.exited).toBe(2);
    expect(upstream.output()).toContain('--chunk-delay-ms must be a whole number');
  });
});
