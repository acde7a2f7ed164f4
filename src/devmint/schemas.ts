// JSON schemas of the NUT request bodies (NUT-00 models), shared by the NUT and dev routes.
export const proof = {
  type: 'object',
  required: ['amount', 'id', 'secret', 'C'],
  properties: {
    amount: { type: 'integer', minimum: 0 },
    id: { type: 'string', maxLength: 200 },
    secret: { type: 'string', maxLength: 10_000 },
    C: { type: 'string', maxLength: 200 },
    witness: {},
    dleq: {},
  },
} as const;
export const blindedMessage = {
  type: 'object',
  required: ['amount', 'id', 'B_'],
  properties: {
    amount: { type: 'integer', minimum: 0 },
    id: { type: 'string', maxLength: 200 },
    B_: { type: 'string', maxLength: 200 },
  },
} as const;
export const proofs = { type: 'array', items: proof } as const;
export const outputs = { type: 'array', items: blindedMessage } as const;
export const idParam = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', maxLength: 200 } },
} as const;
export const body = (properties: Record<string, unknown>, required: string[]) => ({
  body: { type: 'object', required, properties },
});
