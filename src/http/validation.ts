// Request validation: JSON bodies are checked strictly (a string is not a number, unknown
// fields are refused where a schema says additionalProperties: false), while query strings,
// path parameters and headers, which are text by nature, are coerced to their declared types.
import AjvModule from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

const Ajv = AjvModule.default ?? AjvModule;
const addFormats = (addFormatsModule as any).default ?? addFormatsModule;

function makeAjv(coerce: boolean) {
  const ajv = new (Ajv as any)({
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

export const validatorCompiler: FastifySchemaCompiler<any> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? strict : coercing;
  return ajv.compile(schema);
};
