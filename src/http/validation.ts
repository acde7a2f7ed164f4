// Request validation: JSON bodies are checked strictly (a string is not a number, unknown
// fields are refused where a schema says additionalProperties: false), while query strings,
// path parameters and headers, which are text by nature, are coerced to their declared types.
import AjvModule from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

const Ajv = AjvModule.default ?? AjvModule;
const addFormats = addFormatsModule.default ?? addFormatsModule;

function makeAjv(coerce: boolean) {
  const ajv = new Ajv({
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    removeAdditional: false,
    allErrors: true,
    strict: false,
  });
  addFormats(ajv);
  // TypeBox and fastify's own keywords that are annotations, not constraints.
  ajv.addKeyword({ keyword: 'x-examples' });
  return ajv;
}

const strict = makeAjv(false);
const coercing = makeAjv(true);

/**
 * The largest id a request may name (15 digits): ids count up from 1 and stay far below it, and
 * it fits every id column (64-bit) and a JSON number exactly. A larger one is a 400, as any
 * malformed id is; never a database error.
 */
export const MAX_ID = 999_999_999_999_999;
/** The largest page number of a paged list: its offset stays a small, safe integer. */
export const MAX_PAGE = 1_000_000;

/**
 * A copy of a route schema where every integer without bounds of its own is bounded to the
 * safe integers, so "99999999999999999999999" or "1e400" (coerced to Infinity) is refused with
 * a 400 naming the field in any service. Walks our own schemas, once per route.
 */
function boundIntegers(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(boundIntegers);
  if (!schema || typeof schema !== 'object') return schema;
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) copy[key] = boundIntegers(value);
  if (copy.type === 'integer' || (Array.isArray(copy.type) && copy.type.includes('integer'))) {
    copy.maximum ??= Number.MAX_SAFE_INTEGER;
    copy.minimum ??= Number.MIN_SAFE_INTEGER;
  }
  return copy;
}

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? strict : coercing;
  return ajv.compile(boundIntegers(schema) as object);
};
