import { describe, expect, it } from 'vitest';
import { fieldErrorsFromValidation } from '../../src/http/errors.js';
import { validatorCompiler } from '../../src/http/validation.js';

function validate(schema: object, value: unknown, httpPart = 'body') {
  const check = validatorCompiler({ schema, httpPart, method: 'POST', url: '/' } as any) as any;
  return check(value) ? [] : fieldErrorsFromValidation(check.errors, httpPart);
}

describe('validation errors', () => {
  it('names every faulty field with FastAPI-style loc, msg and type', () => {
    const schema = {
      type: 'object',
      additionalProperties: false,
      required: ['email', 'age'],
      properties: { email: { type: 'string', maxLength: 5 }, age: { type: 'integer' } },
    };
    expect(validate(schema, { email: 'too long', age: '3', admin: true })).toEqual([
      { loc: ['body', 'admin'], msg: 'Unknown field', type: 'extra_forbidden' },
      { loc: ['body', 'email'], msg: 'String should have at most 5 characters', type: 'string_too_long' },
      { loc: ['body', 'age'], msg: 'Input should be a valid integer', type: 'integer_type' },
    ]);
    expect(validate(schema, {})).toEqual([
      { loc: ['body', 'email'], msg: 'Field required', type: 'missing' },
      { loc: ['body', 'age'], msg: 'Field required', type: 'missing' },
    ]);
  });

  it('coerces query strings but never JSON bodies', () => {
    const schema = { type: 'object', properties: { page: { type: 'integer' } } };
    expect(validate(schema, { page: '2' }, 'querystring')).toEqual([]);
    expect(validate(schema, { page: '2' }, 'body')).toHaveLength(1);
  });

  it('reports a value that matches no branch of a union once', () => {
    const schema = { type: 'object', properties: { id: { anyOf: [{ type: 'integer' }, { type: 'string', pattern: '^[a-z]+$' }] } } };
    expect(validate(schema, { id: '12ab' })).toEqual([
      { loc: ['body', 'id'], msg: 'Input does not match any of the allowed forms', type: 'union' },
    ]);
  });
});
