import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { chatPromptTokens, startFakeUpstream, type FakeUpstream } from '../../src/fakeupstream/index.js';

describe('fake upstream', () => {
  let upstream: FakeUpstream;
  let client: OpenAI;
  beforeAll(async () => {
    upstream = await startFakeUpstream({ apiKey: 'up-key' });
    client = new OpenAI({ baseURL: `${upstream.url}/v1`, apiKey: 'up-key', maxRetries: 0 });
  });
  afterAll(async () => {
    await upstream.close();
  });
  beforeEach(() => upstream.resetFaults());

  const messages = [{ role: 'user' as const, content: 'Say hello to the test suite' }];

  it('answers chat completions with usage derived from the prompt and max_tokens', async () => {
    const a = await client.chat.completions.create({ model: 'm', messages });
    const b = await client.chat.completions.create({ model: 'm', messages });
    expect(a.usage).toEqual(b.usage);
    expect(a.usage!.prompt_tokens).toBe(chatPromptTokens(messages));
    expect(a.choices[0].message.content!.split(' ').length).toBe(a.usage!.completion_tokens);
    const capped = await client.chat.completions.create({ model: 'm', messages, max_tokens: 2 });
    expect(capped.usage!.completion_tokens).toBe(2);
    expect(capped.choices[0].finish_reason).toBe('length');
    expect(upstream.requests.at(-1)!.body).toMatchObject({ model: 'm', max_tokens: 2 });
  });

  it('streams like OpenAI: usage null on chunks, a usage chunk with no choices, then [DONE]', async () => {
    const res = await fetch(`${upstream.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer up-key' },
      body: JSON.stringify({ model: 'm', messages, stream: true, stream_options: { include_usage: true } }),
    });
    const text = await res.text();
    const events = text.split('\n\n').filter(Boolean);
    expect(events.at(-1)).toBe('data: [DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice('data: '.length)));
    const last = chunks.at(-1);
    expect(last.choices).toEqual([]);
    expect(last.usage.prompt_tokens).toBe(chatPromptTokens(messages));
    for (const chunk of chunks.slice(0, -1)) expect(chunk.usage).toBeNull();

    const plain = await (
      await fetch(`${upstream.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer up-key' },
        body: JSON.stringify({ model: 'm', messages, stream: true }),
      })
    ).text();
    expect(plain).not.toContain('"usage"');
  });

  it('works with the openai SDK for streams, completions, embeddings and the model list', async () => {
    const stream = await client.chat.completions.create({
      model: 'm',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    let content = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      content += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(content.split(' ').length).toBe(usage!.completion_tokens);
    const completion = await client.completions.create({ model: 'm', prompt: 'once upon a time', max_tokens: 3 });
    expect(completion.usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 3 });
    const embedding = await client.embeddings.create({ model: 'e', input: ['a', 'bb'] });
    expect(embedding.data).toHaveLength(2);
    expect(embedding.data[0].embedding).toHaveLength(8);
    expect(embedding.usage.prompt_tokens).toBe(2);
    const models = await client.models.list();
    expect(models.data.length).toBeGreaterThan(0);
  });

  it('refuses a wrong key and unknown paths', async () => {
    const bad = new OpenAI({ baseURL: `${upstream.url}/v1`, apiKey: 'nope', maxRetries: 0 });
    await expect(bad.models.list()).rejects.toMatchObject({ status: 401 });
    const res = await fetch(`${upstream.url}/v1/nothing`, { headers: { authorization: 'Bearer up-key' } });
    expect(res.status).toBe(404);
  });

  it('fails on demand: error statuses, streams without usage, resets, slow and hanging answers', async () => {
    upstream.faults.status = 429;
    await expect(client.chat.completions.create({ model: 'm', messages })).rejects.toMatchObject({ status: 429 });
    upstream.faults.status = 500;
    await expect(client.chat.completions.create({ model: 'm', messages })).rejects.toMatchObject({ status: 500 });
    upstream.resetFaults();

    upstream.faults.omitUsage = true;
    const noUsage = await client.chat.completions.create({
      model: 'm',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const chunk of noUsage) expect(chunk.usage ?? null).toBeNull();
    upstream.resetFaults();

    upstream.faults.resetAfterChunks = 2;
    const cut = await client.chat.completions.create({ model: 'm', messages, stream: true });
    await expect(
      (async () => {
        for await (const _ of cut) {
          // read until the connection breaks
        }
      })(),
    ).rejects.toThrow();
    upstream.resetFaults();

    upstream.faults.delayMs = 150;
    const started = Date.now();
    await client.models.list();
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    upstream.resetFaults();

    upstream.faults.hang = true;
    const hung = await fetch(`${upstream.url}/v1/models`, {
      headers: { authorization: 'Bearer up-key' },
      signal: AbortSignal.timeout(200),
    }).catch((e) => e);
    expect(hung).toBeInstanceOf(Error);
  });

  it('echoes request bodies as a stream', async () => {
    const res = await fetch(`${upstream.url}/debug/echo?x=1`, {
      method: 'PUT',
      body: 'hello body',
      headers: { 'content-type': 'text/plain' },
    });
    expect(await res.text()).toBe('hello body');
    expect(res.headers.get('x-echo-url')).toBe('/debug/echo?x=1');
  });
});
