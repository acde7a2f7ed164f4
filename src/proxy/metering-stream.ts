// Reads an upstream SSE stream event by event: finds the usage (OpenAI's usage chunk, the
// responses API's `response.completed`, Anthropic's `message_delta` with the input of its
// `message_start`), counts the content delivered (for billing a stream that ends without usage),
// and notices the end (`data: [DONE]`, Anthropic's `message_stop`), after which nothing more may be sent.
import { StringDecoder } from 'node:string_decoder';
import { nestedDeeperThan } from '../http/json-depth.js';
import { field, fieldAt } from './json-fields.js';
import { readUsage, type BilledKind, type ReportedUsage } from './metering.js';

export interface SseEvent {
  /** The event's text as received, including its terminating blank line. */
  text: string;
  /** The parsed JSON of its data, when it has JSON data (not nested too deep to re-serialize). */
  json?: Record<string, unknown>;
  done: boolean;
  /** The usage it reports (see readUsage), null when it reports none. */
  usage: ReportedUsage | null;
}

const BOUNDARY = /\r\n\r\n|\n\n|\r\r/;

export class SseMeter {
  private buffer = '';
  private decoder = new StringDecoder('utf8');
  /** UTF-8 bytes of the generated text seen so far. */
  contentBytes = 0;
  done = false;
  /** Anthropic: the input (and cached input) its message_start reported, for its message_delta's usage. */
  private anthropicStart: ReportedUsage | null = null;

  constructor(private readonly kind: BilledKind) {}

  /** The complete events in this chunk of bytes (an incomplete tail waits for the next chunk). */
  push(chunk: Buffer): SseEvent[] {
    this.buffer += this.decoder.write(chunk);
    return this.drain(false);
  }

  /** The rest at the end of the stream (an unterminated last event counts too). */
  end(): SseEvent[] {
    this.buffer += this.decoder.end();
    return this.drain(true);
  }

  private drain(final: boolean): SseEvent[] {
    const events: SseEvent[] = [];
    for (;;) {
      const match = BOUNDARY.exec(this.buffer);
      if (!match) break;
      const end = match.index + match[0].length;
      events.push(this.parse(this.buffer.slice(0, end)));
      this.buffer = this.buffer.slice(end);
    }
    if (final && this.buffer.trim()) {
      events.push(this.parse(this.buffer));
      this.buffer = '';
    }
    return events;
  }

  /**
   * Anthropic reports usage twice: the input in message_start (not billed yet), the final output
   * count in message_delta, which is the event billed.
   */
  private anthropicUsage(json: Record<string, unknown>, event: SseEvent): ReportedUsage | null {
    const type = field(json, 'type');
    if (type === 'message_stop') {
      event.done = true;
      this.done = true;
    }
    if (type === 'message_start') {
      this.anthropicStart = readUsage(field(json, 'message'), 'messages');
      return null;
    }
    if (type !== 'message_delta') return null;
    const usage = readUsage(json, 'messages');
    if (!usage) return null;
    // A delta that repeats the input counts has the final ones; otherwise message_start's stand.
    if (usage.promptTokens !== null || !this.anthropicStart) return usage;
    const { promptTokens, cacheReadTokens, cacheWriteTokens } = this.anthropicStart;
    return { ...usage, promptTokens, cacheReadTokens, cacheWriteTokens };
  }

  private parse(text: string): SseEvent {
    const data = text
      .split(/\r\n|\n|\r/)
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(line.startsWith('data: ') ? 6 : 5))
      .join('\n');
    const event: SseEvent = { text, done: false, usage: null };
    if (data.trim() === '[DONE]') {
      event.done = true;
      this.done = true;
      return event;
    }
    if (!data) return event;
    try {
      const json = JSON.parse(data);
      if (json && typeof json === 'object' && !Array.isArray(json)) {
        // Too deep to re-serialize: billed from, but passed on as it came.
        if (!nestedDeeperThan(json)) event.json = json;
        event.usage = this.kind === 'messages' ? this.anthropicUsage(json, event) : readUsage(json, this.kind);
        this.contentBytes += deliveredBytes(json);
      }
    } catch {
      // Not JSON: passed on as it is.
    }
    return event;
  }
}

/** Bytes of generated text in one chunk (chat deltas, completion text, responses API and Anthropic deltas). */
function deliveredBytes(json: unknown): number {
  let text = '';
  const choices = field(json, 'choices');
  if (Array.isArray(choices)) {
    for (const choice of choices) {
      text += String(fieldAt(choice, ['delta', 'content']) ?? '');
      text += String(fieldAt(choice, ['delta', 'reasoning']) ?? '');
      text += String(field(choice, 'text') ?? '');
      // A value that is not iterable throws: the chunk counts nothing, like any unreadable chunk.
      const calls = (fieldAt(choice, ['delta', 'tool_calls']) ?? []) as Iterable<unknown>;
      for (const call of calls) text += String(fieldAt(call, ['function', 'arguments']) ?? '');
    }
  }
  const delta = field(json, 'delta');
  if (typeof delta === 'string') text += delta;
  for (const name of ['text', 'partial_json', 'thinking']) text += String(fieldAt(json, ['delta', name]) ?? '');
  return Buffer.byteLength(text, 'utf8');
}

/** The event re-written with the node's fields added to its JSON data (for the usage chunk). */
export function withFields(event: SseEvent, fields: Record<string, unknown>): string {
  const json = { ...event.json, ...fields };
  const prefix = event.text
    .split(/\r\n|\n|\r/)
    .filter((line) => line && !line.startsWith('data:'))
    .map((line) => `${line}\n`)
    .join('');
  return `${prefix}data: ${JSON.stringify(json)}\n\n`;
}
