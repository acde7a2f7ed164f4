// The row types the quotation service's stores share, and the batching of long id lists.
import type { QuoteFileRow, QuoteImportRow, QuoteOrderRow, QuoteProjectGroupRow, QuoteProjectRow } from '../tables.js';

export type Project = Omit<QuoteProjectRow, 'id'> & { id: number };
export type ProjectGroup = Omit<QuoteProjectGroupRow, 'id'> & { id: number };
export type FileRow = Omit<QuoteFileRow, 'id'> & { id: number };
export type ImportRow = Omit<QuoteImportRow, 'id' | 'lease_until'> & { id: number };
export type OrderRow = Omit<QuoteOrderRow, 'id'> & { id: number };

/** The format of the files that hold OneSky's phrase collections (formats/phrase-collection.ts). */
export const COLLECTION_FORMAT = 'PHRASE_COLLECTION';

export interface StringTotals {
  strings: number;
  words: number;
}

// Rows per INSERT: 3000 rows of up to 9 columns stay under SQLite's (32766) and PostgreSQL's
// (65535) bound-parameter limits, and few statements keep a 100k-string import fast.
const BATCH = 3000;

export function chunks<T>(items: T[], size = BATCH): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
