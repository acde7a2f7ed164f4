// The offline validation panel: structural checks of the description that need no service
// (the online validator badge is separate and optional).
import type { ApiModel } from './normalize/model.js';
import { t } from './i18n.js';

export interface Finding {
  level: 'error' | 'warning';
  where: string;
  message: string;
}

export function validate(model: ApiModel, raw: unknown): Finding[] {
  const out: Finding[] = [];
  const error = (where: string, message: string) => out.push({ level: 'error', where, message });
  const warn = (where: string, message: string) => out.push({ level: 'warning', where, message });
  if (!model.info.title) error('info.title', t('is missing'));
  if (!model.info.version) error('info.version', t('is missing'));
  const ids = new Map<string, string>();
  const seen = new Set<string>();
  for (const tag of model.tags) {
    for (const op of tag.operations) {
      const where = `${op.method.toUpperCase()} ${op.path}`;
      if (seen.has(where)) continue;
      seen.add(where);
      if (!op.path.startsWith('/')) error(where, t('path must start with /'));
      if (op.operationId) {
        if (ids.has(op.operationId) && ids.get(op.operationId) !== where) {
          error(where, `${t('duplicate operationId')} ${op.operationId}`);
        }
        ids.set(op.operationId, where);
      }
      const templated = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      const declared = new Set(op.parameters.filter((p) => p.in === 'path').map((p) => p.name));
      for (const name of templated) {
        if (!declared.has(name)) error(where, `${t('path parameter not declared:')} ${name}`);
      }
      for (const name of declared) {
        if (!templated.includes(name)) error(where, `${t('declared path parameter not in path:')} ${name}`);
      }
      if (!op.responses.length) warn(where, t('no responses'));
    }
  }
  // Unresolved references anywhere in the description.
  const stack: unknown[] = [raw];
  let checked = 0;
  while (stack.length && checked < 200_000) {
    const node = stack.pop();
    checked++;
    if (!node || typeof node !== 'object') continue;
    const ref = (node as Record<string, unknown>).$ref;
    if (
      typeof ref === 'string' &&
      model.resolver.lookup(ref) === undefined &&
      (ref.startsWith('#') || model.resolver.hasDocument(ref.split('#')[0]))
    ) {
      error(ref, t('unresolved $ref'));
    }
    for (const value of Object.values(node)) if (value && typeof value === 'object') stack.push(value);
  }
  return out;
}
