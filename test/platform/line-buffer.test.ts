// Log lines gathered as bytes (src/logs/line-buffer.ts): what the standard output and the log store
// write is every line, whole, in order, in chunks no larger than the buffer unless one line is.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LineBuffer, linesIn } from '../../src/logs/line-buffer.js';

describe('LineBuffer', () => {
  it('hands on every line, in order, in chunks within its capacity (a larger line alone)', () => {
    const line = fc.string({ unit: 'grapheme', maxLength: 120 }).map((text) => `${text.replace(/\n/g, ' ')}\n`);
    fc.assert(
      fc.property(fc.array(line, { maxLength: 60 }), fc.integer({ min: 16, max: 400 }), (lines, capacity) => {
        const buffer = new LineBuffer(capacity);
        const chunks: Buffer[] = [];
        for (const text of lines) buffer.add(text, (chunk) => chunks.push(chunk));
        if (buffer.bytes > 0) chunks.push(buffer.take());
        expect(Buffer.concat(chunks).toString('utf8')).toBe(lines.join(''));
        for (const chunk of chunks) {
          if (chunk.length > capacity) expect(linesIn(chunk)).toBe(1);
          expect(chunk.length).toBeGreaterThan(0);
        }
        expect(chunks.reduce((sum, chunk) => sum + linesIn(chunk), 0)).toBe(lines.length);
      }),
    );
  });

  it('gives each chunk memory of its own: later lines never write over one handed on', () => {
    for (const lines of [1, 30]) {
      // One short line is taken as a copy, thirty fill more than half the buffer and take it whole.
      const buffer = new LineBuffer(64);
      for (let i = 0; i < lines; i++) buffer.add('x\n', () => {});
      const first = buffer.take();
      for (let i = 0; i < lines; i++) buffer.add('y\n', () => {});
      expect(first.toString()).toBe('x\n'.repeat(lines));
      expect(buffer.take().toString()).toBe('y\n'.repeat(lines));
    }
  });

  it('counts a last line without its newline', () => {
    expect(linesIn(Buffer.from(''))).toBe(0);
    expect(linesIn(Buffer.from('a\nb\n'))).toBe(2);
    expect(linesIn(Buffer.from('a\nb'))).toBe(2);
  });
});
