// The original API (docs/tasks.md) sends a task's owner as "a JSON string": the id JSON-encoded
// ("\"12\""), or a JSON user object ("{\"id\":\"12\",…}"). A plain id ("12" or 12) is accepted as well.
import { badInput } from '../users/input.js';

const DIGITS = /^[1-9][0-9]{0,14}$/;

function plainId(value: unknown): number | null {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return value;
  if (typeof value === 'string' && DIGITS.test(value.trim())) return Number(value.trim());
  return null;
}

export function ownerId(user: string | number): number {
  const direct = plainId(user);
  if (direct !== null) return direct;
  let parsed: unknown;
  try {
    parsed = JSON.parse(String(user));
  } catch {
    parsed = undefined;
  }
  const object = parsed && typeof parsed === 'object' ? (parsed as { id?: unknown; _id?: unknown }) : null;
  const id = plainId(parsed) ?? (object ? plainId(object.id ?? object._id) : null);
  if (id === null) {
    throw badInput([
      {
        loc: ['body', 'user'],
        msg: 'Expected a user id, or a JSON string holding one ("\\"12\\"" or "{\\"id\\":\\"12\\"}")',
        type: 'value_error',
      },
    ]);
  }
  return id;
}
