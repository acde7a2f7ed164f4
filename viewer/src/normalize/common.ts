// Pieces every normalizer shares: grouping operations by tag, server addresses, text fields.
import type { Operation, SecurityRequirement, Tag } from './model.js';
import { operationKey } from './model.js';

export function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : value == null ? undefined : String(value);
}

export function groupByTag(operations: Operation[], declared: { name: string; description?: string }[]): Tag[] {
  const tags = new Map<string, Tag>();
  for (const tag of declared) {
    if (tag && typeof tag.name === 'string') {
      tags.set(tag.name, { name: tag.name, description: text(tag.description), operations: [] });
    }
  }
  for (const op of operations) {
    if (!tags.has(op.tag)) tags.set(op.tag, { name: op.tag, operations: [] });
    tags.get(op.tag)!.operations.push(op);
  }
  return [...tags.values()].filter((tag) => tag.operations.length);
}

/** Gives each operation one tag per listed tag (2.x and 3.x list operations under each tag). */
export function perTag(
  op: Omit<Operation, 'tag' | 'id'>,
  tags: unknown,
  operationId: unknown,
  used: Set<string>,
): Operation[] {
  const names = Array.isArray(tags) && tags.length ? tags.filter((t) => typeof t === 'string') : ['default'];
  const baseId = typeof operationId === 'string' && operationId ? operationId : operationKey(op.method, op.path);
  let id = baseId;
  for (let n = 2; used.has(id); n++) id = `${baseId}_${n}`;
  used.add(id);
  return (names.length ? names : ['default']).map((tag) => ({ ...op, tag, id, operationId: text(operationId) }));
}

export function security(value: unknown): SecurityRequirement[] | undefined {
  return Array.isArray(value) ? (value.filter((v) => v && typeof v === 'object') as SecurityRequirement[]) : undefined;
}

/** Absolute address of a server relative to the description (or page) address. */
export function absolute(url: string, base: string): string {
  try {
    return new URL(url, base).href.replace(/\/$/, '');
  } catch {
    return url.replace(/\/$/, '');
  }
}
