// Picks the normalizer for a description's version; 1.x declarations are fetched first.
import { isRecord } from '../data.js';
import type { FetchOptions } from '../load.js';
import { fetchText, LoadError, parseDocument } from '../load.js';
import { Resolver } from '../refs.js';
import type { ApiModel } from './model.js';
import { t } from '../i18n.js';
import { normalizeOpenApi3 } from './openapi3.js';
import { convertSwagger1, declarationUrls, isDeclaration, isSwagger1 } from './swagger1.js';
import { normalizeSwagger2 } from './swagger2.js';

export async function normalize(resolver: Resolver, options: FetchOptions): Promise<ApiModel> {
  const doc = resolver.root;
  if (!isRecord(doc)) {
    throw new LoadError(t('The description is not an object.'));
  }
  if (typeof doc.openapi === 'string' && /^3\./.test(doc.openapi)) return normalizeOpenApi3(doc, resolver);
  if (String(doc.swagger) === '2.0') return normalizeSwagger2(doc, resolver);
  if (isSwagger1(doc)) {
    const declarations = isDeclaration(doc)
      ? [doc]
      : await Promise.all(
          declarationUrls(doc, resolver.baseUrl).map(async (url) => parseDocument(await fetchText(url, options), url)),
        );
    const converted = convertSwagger1(doc, declarations, resolver.baseUrl);
    const model = normalizeSwagger2(converted, new Resolver(resolver.baseUrl, converted));
    return { ...model, specVersion: String(converted['x-converted-from']) };
  }
  throw new LoadError(
    `${t('Unsupported description version:')} ${String(doc.openapi ?? doc.swagger ?? doc.swaggerVersion ?? 'unknown')}`,
  );
}
