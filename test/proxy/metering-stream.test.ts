// The stream meter reads most content chunks by their shape (chunk-shape.ts) instead of parsing
// them. Random streams (fast-check) of chunks that repeat a shape with random text, valid or not,
// cut at random points or at every event (where takeUsual takes whole events): a meter that has
// seen the earlier chunks must report what a fresh meter reading each event alone reports (a fresh
// meter has no shape: it parses every chunk).
import { isUtf8 } from 'node:buffer';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonStringBytes } from '../../src/proxy/billing/chunk-shape.js';
import type { BilledKind } from '../../src/proxy/billing/metering.js';
import { SseMeter, type SseEvent } from '../../src/proxy/billing/metering-stream.js';

/** Chunk data with TEXT where the random string body goes. */
const SHAPES = [
  '{"id":"c1","object":"chat.completion.chunk",' +
    '"choices":[{"index":0,"delta":{"content":"TEXT"},"finish_reason":null}],"usage":null}',
  '{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":"TEXT"}}],"usage":null}',
  '{"choices":[{"index":0,"delta":{"reasoning":"TEXT"}}]}',
  '{"choices":[{"text":"TEXT","index":0}]}',
  '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"TEXT"}}]}}]}',
  '{"choices":[{"delta":{"content":"TEXT","reasoning":"two"}}]}',
  '{"message":{"content":"TEXT"},"choices":[]}',
  '{"message":{"content":"TEXT"},"choices":[{"text":"x"}]}',
  '{"choices":[{"delta":{"cont\\u0065nt":"TEXT"}}]}',
  '{"choices":[{"delta":{"content":"TEXT"}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}',
  '{"type":"response.output_text.delta","delta":"TEXT"}',
  '{"choices":[{"delta":{"content":"TEXT"}}],"choices":[]}',
  '{"choices":[{"delta":{"content":"TEXT"},"x":"TEXT"}]}',
  '{"choices":[{"delta":{"content":"TEXT"}}]',
  '["TEXT"]',
];
/** Whole events that are not a shape's. */
const OTHERS = [
  'data: [DONE]\n\n',
  'data: not json\n\n',
  'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7}}\n\n',
  'event: delta\ndata: {"choices":[{"delta":{"content":"hi"}}]}\n\n',
  'data: {"choices":\ndata: [{"delta":{"content":"split"}}]}\n\n',
  'data: {"choices":[{"delta":{"content":"crlf"}}]}\r\n\r\n',
  ': comment\n\n',
];

/** A string body: JSON's own escaping of random text, some of it re-escaped, some of it broken. */
const body = fc
  .tuple(
    fc.string({ unit: fc.oneof(fc.constant('a'), fc.integer({ min: 0, max: 0x10ffff }).map(codePointOrUnit)) }),
    fc.array(
      fc.constantFrom('\\u00e9', '\\uD83D\\uDE00', '\\uD800', '\\uDC00x', '\\/', '\\n', '\\u0041', '\\uDBFF\\u0041'),
      {
        maxLength: 3,
      },
    ),
    fc.constantFrom('', '', '', '"', '\\', '\\x', '\\u12', '\\u00G0', '\\u0g00', '\u0001', '\n', '\xff'),
  )
  .map(([text, escapes, broken]) => JSON.stringify(text).slice(1, -1) + escapes.join('') + broken);

function codePointOrUnit(n: number): string {
  // Lone surrogates too: JSON.stringify escapes them as \udXXX.
  return n >= 0xd800 && n < 0xe000 ? String.fromCharCode(n) : String.fromCodePoint(n);
}

const event = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(fc.constantFrom(...SHAPES), fc.array(body, { minLength: 1, maxLength: 12 })) },
  { weight: 1, arbitrary: fc.constantFrom(...OTHERS).map((raw) => [raw, []] as [string, string[]]) },
);

/** Runs of events: a shape repeated with its bodies, or another event. */
const stream = fc
  .array(event, { minLength: 1, maxLength: 8 })
  .map((runs) =>
    runs.flatMap(([shape, bodies]) =>
      bodies.length === 0 ? [shape] : bodies.map((text) => `data: ${shape.replaceAll('TEXT', text)}\n\n`),
    ),
  );

function utf8WithInvalidBytes(text: string): Buffer {
  // \xff stands for an invalid UTF-8 byte: written as that byte, the rest as UTF-8.
  return Buffer.concat(
    text.split('\xff').flatMap((part, i) => (i ? [Buffer.from([0xff]), Buffer.from(part)] : [Buffer.from(part)])),
  );
}

function summary(events: SseEvent[]) {
  return events.map((e) => ({ bytes: e.bytes.toString('latin1'), done: e.done, usage: e.usage, json: e.json }));
}

describe('stream meter', () => {
  for (const kind of ['chat', 'completions', 'responses'] as BilledKind[]) {
    it(`reads repeated chunks as parsing each would (${kind})`, () => {
      fc.assert(
        fc.property(stream, fc.array(fc.nat(), { maxLength: 12 }), fc.boolean(), (events, cuts, atEvents) => {
          const raws = events.map(utf8WithInvalidBytes);
          const bytes = Buffer.concat(raws);
          // Cut at random points, or at every event's end (as upstreams send them: takeUsual's case).
          const ends = raws.map((_, i) => Buffer.concat(raws.slice(0, i + 1)).length);
          const points = [...new Set(atEvents ? ends : cuts.map((cut) => cut % (bytes.length + 1)))].sort(
            (a, b) => a - b,
          );
          const meter = new SseMeter(kind);
          const seen: SseEvent[] = [];
          let from = 0;
          for (const point of [...points, bytes.length]) {
            const chunk = bytes.subarray(from, point);
            if (meter.takeUsual(chunk)) seen.push({ bytes: chunk, done: false, usage: null });
            else seen.push(...meter.push(chunk));
            from = point;
          }
          seen.push(...meter.end());

          let alone = 0;
          const expected: SseEvent[] = [];
          for (const raw of seen) {
            const fresh = new SseMeter(kind);
            expected.push(...fresh.push(Buffer.from(raw.bytes)), ...fresh.end());
            alone += fresh.contentBytes;
          }
          expect(Buffer.concat(seen.map((e) => e.bytes)).equals(bytes)).toBe(true);
          expect(summary(seen)).toEqual(summary(expected));
          expect(meter.contentBytes).toBe(alone);
        }),
        { numRuns: 3000 },
      );
    });
  }

  it('counts a JSON string body as the bytes of the text it stands for', () => {
    fc.assert(
      fc.property(body, (text) => {
        const raw = utf8WithInvalidBytes(text);
        let parsed: unknown;
        try {
          parsed = JSON.parse(`"${raw.toString('utf8')}"`);
        } catch {
          parsed = undefined;
        }
        const valid = typeof parsed === 'string' && isUtf8(raw);
        expect(jsonStringBytes(raw, 0, raw.length)).toBe(valid ? Buffer.byteLength(parsed as string) : -1);
      }),
      { numRuns: 5000 },
    );
  });

  it('takes no chunk as a whole event while part of an event waits', () => {
    const meter = new SseMeter('chat');
    const chunk = (word: string) => Buffer.from(`data: {"choices":[{"delta":{"content":"${word}"}}]}\n\n`);
    expect(meter.push(chunk('one'))).toHaveLength(1);
    expect(meter.takeUsual(chunk('two'))).toBe(true);
    expect(meter.push(Buffer.from('event: delta\n'))).toEqual([]);
    // The shape's bytes, but the rest of the waiting event: one event of two lines.
    expect(meter.takeUsual(chunk('three'))).toBe(false);
    const [event] = meter.push(chunk('three'));
    expect(event.bytes.toString()).toBe(`event: delta\n${chunk('three').toString()}`);
    expect(meter.contentBytes).toBe(11);
  });

  it('meters a long run of one shape by its shape: the text of every chunk counted', () => {
    const meter = new SseMeter('chat');
    const words = ['lorem', ' ipsum', ' dolor', ' \\u00e9t\\u00e9', ' \\"quoted\\"', ' \\uD83D\\uDE00'];
    const chunks = words.map(
      (word) =>
        `data: {"id":"c1","choices":[{"index":0,"delta":{"content":"${word}"},"finish_reason":null}],"usage":null}\n\n`,
    );
    const events = meter.push(Buffer.from(chunks.join('')));
    expect(events).toHaveLength(6);
    expect(events.every((e) => e.usage === null && !e.done)).toBe(true);
    const text = words.map((word) => JSON.parse(`"${word}"`) as string).join('');
    expect(meter.contentBytes).toBe(Buffer.byteLength(text));
  });
});
