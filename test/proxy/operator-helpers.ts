// Helpers of the operator API's tests: a node with an operator password, signed in, and calls to
// /admin/api/… with its bearer token.
import { request, type Answer } from '../support/http.js';
import { startNode, type Node, type NodeOptions } from './forward-helpers.js';
import type { DatabaseKind } from '../support/databases.js';

export const OPERATOR_PASSWORD = 'operator password 1234';

export interface OperatorNode extends Node {
  token: string;
  /** Calls the operator API with the token. */
  api(method: string, path: string, json?: unknown): Promise<Answer>;
}

export async function startOperatorNode(kind: DatabaseKind, options: NodeOptions = {}): Promise<OperatorNode> {
  const node = await startNode(kind, {
    ...options,
    env: { PROXY_ADMIN_PASSWORD: OPERATOR_PASSWORD, ...options.env },
  });
  return withOperator(node);
}

/** Signs in to a running node. */
export async function withOperator(node: Node): Promise<OperatorNode> {
  const login = await request(`${node.url}/admin/api/login`, 'POST', { json: { password: OPERATOR_PASSWORD } });
  if (login.status !== 200) throw new Error(`login failed: ${login.status} ${login.text}`);
  const token = login.json.token as string;
  return {
    ...node,
    token,
    api: (method, path, json) =>
      request(`${node.url}${path}`, method, {
        headers: { authorization: `Bearer ${token}` },
        ...(json === undefined ? {} : { json }),
      }),
  };
}

/** A model body in Routstr's ModelCreate shape, USD per token. */
export function modelBody(id: string, prompt: number | string, completion: number | string, extra = {}) {
  return {
    id,
    name: id,
    description: '',
    created: 1_700_000_000,
    context_length: 32_000,
    architecture: { modality: 'text->text', input_modalities: ['text'], output_modalities: ['text'] },
    pricing: { prompt, completion, request: 0 },
    enabled: true,
    ...extra,
  };
}
