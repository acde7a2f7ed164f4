// Reads an upstream SSE stream event by event: finds the usage (OpenAI's usage chunk, or the
// responses API's `response.completed`), counts the content delivered (for billing a stream that
// ends without usage), and notices `data: [DONE]`, after which nothing more may be sent.
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
        event.usage = readUsage(json, this.kind);
        this.contentBytes += deliveredBytes(json);
      }
    } catch {
      // Not JSON: passed on as it is.
    }
    return event;
  }
}

/** Bytes of generated text in one chunk (chat deltas, completion text, responses API deltas). */
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
