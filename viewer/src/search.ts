// Full-text search over paths, methods, summaries, descriptions, operationIds and tags.
// The index is one lowercase string per operation, built on first use.
import type { Operation } from './normalize/model.js';

export class SearchIndex {
  private texts?: Map<Operation, string>;
  constructor(private operations: Operation[]) {}

  private build() {
    this.texts = new Map(
      this.operations.map((op) => [
        op,
        [op.method, op.path, op.summary, op.description, op.operationId, op.tag]
          .filter(Boolean)
          .join(' ')
          .toLowerCase(),
      ]),
    );
    return this.texts;
  }

  /** Operations containing every word of the query, or undefined for an empty query. */
  match(query: string): Set<Operation> | undefined {
    const words = query.toLowerCase().split(/\s+/).filter(Boolean);
    if (!words.length) return undefined;
    const found = new Set<Operation>();
    for (const [op, text] of this.texts ?? this.build()) if (words.every((w) => text.includes(w))) found.add(op);
    return found;
  }
}
