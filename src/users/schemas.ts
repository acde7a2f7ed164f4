// TypeBox schemas of the users routes: they validate requests and generate /openapi/tasks.json.
// Bodies refuse unknown fields (no mass assignment); responses list exactly what is returned.
import { type TSchema, Type } from '@sinclair/typebox';
import { PASSWORD_MAX, PASSWORD_MIN } from './passwords.js';

// --- shared pieces (also used by src/tasks) --------------------------------------------------

export const Problem = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.Optional(Type.String({ description: 'Stable machine-readable reason, e.g. invalid_credentials' })),
    errors: Type.Optional(
      Type.Array(
        Type.Object({
          field: Type.String(),
          in: Type.String({ description: 'body, query, header or path' }),
          message: Type.String(),
          type: Type.String(),
        }),
      ),
    ),
  },
  { description: 'RFC 9457 problem details' },
);

const ERROR_TEXT: Record<number, string> = {
  400: 'Invalid input: malformed JSON, wrong types, missing or unknown fields (per-field `errors`)',
  401: 'Missing, invalid or expired credentials',
  403: 'Authenticated, but not allowed to do this',
  404: 'No such object (or not yours)',
  409: 'Conflicts with an existing object',
  413: 'Body or file too large',
  415: 'Unsupported content type or image type',
  429: 'Too many attempts; see Retry-After',
  503: 'Not available in this configuration',
};

/** Error responses in problem+json for the given statuses. */
export function errors(...statuses: number[]): Record<number, unknown> {
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      { description: ERROR_TEXT[status], content: { 'application/problem+json': { schema: Problem } } },
    ]),
  );
}

/** An id as text (query strings, paths). */
export const IdText = Type.String({ pattern: '^[1-9][0-9]{0,14}$', description: 'Numeric id' });

/** An id in a JSON body: text or a number. */
export const Id = Type.Union([IdText, Type.Integer({ minimum: 1, maximum: 999_999_999_999_999 })], {
  description: 'Numeric id, as a string or an integer',
});

export const Email = Type.String({ format: 'email', maxLength: 254, description: 'E-mail address (case-insensitive)' });

export const Pagination = {
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1, description: 'Page number, from 1' })),
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Items per page (at most 100)' }),
  ),
};

export function Page<T extends TSchema>(item: T) {
  return Type.Object({
    results: Type.Array(item),
    page: Type.Integer(),
    limit: Type.Integer(),
    totalPages: Type.Integer(),
    totalResults: Type.Integer(),
  });
}

/** A page in the shape of Page(). */
export function pageOf<T>(results: T[], page: number, limit: number, total: number) {
  return { results, page, limit, totalPages: Math.ceil(total / limit), totalResults: total };
}

export const bearer = [{ bearerAuth: [] }];

/** A 204 answer: documented without content. */
export function noContent(description: string) {
  return Type.Unsafe<void>({ description });
}

/** Documents the optional JSON body that may carry a GET or DELETE route's parameters. */
export function optionalJsonBody(schema: TSchema, description: string) {
  return { required: false, description, content: { 'application/json': { schema } } };
}

// --- users ------------------------------------------------------------------------------------

const Name = Type.String({ minLength: 1, maxLength: 100, pattern: '\\S' });

export const User = Type.Object({
  id: Type.String(),
  first_name: Type.String(),
  last_name: Type.String(),
  email: Type.String(),
  username: Type.String(),
  role: Type.Union([Type.Literal('user'), Type.Literal('admin')]),
  photo: Type.Union([Type.String(), Type.Null()], { description: 'Address of the photo (GET, bearer token), or null' }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});

const NewPassword = Type.String({
  maxLength: 4 * PASSWORD_MAX,
  description: `${PASSWORD_MIN} to ${PASSWORD_MAX} characters, any characters; common passwords are refused`,
});
const AnyPassword = Type.String({ maxLength: 4 * PASSWORD_MAX });

export const RegisterBody = Type.Object(
  {
    first_name: Name,
    last_name: Name,
    email: Email,
    password: NewPassword,
    username: Type.String({
      minLength: 3,
      maxLength: 32,
      pattern: '^[A-Za-z0-9_.-]+$',
      description: '3 to 32 letters, digits, _ . - (unique, case-insensitive)',
    }),
  },
  { additionalProperties: false },
);

export const LoginBody = Type.Object({ email: Email, password: AnyPassword }, { additionalProperties: false });

export const LoginReply = Type.Object({
  token: Type.String({ description: 'Access token for `Authorization: Bearer`' }),
  token_type: Type.Literal('Bearer'),
  expires_at: Type.String({ format: 'date-time' }),
  user: User,
});

export const UserReply = Type.Object({ user: User });

/** `id` in the query string, or (IdFields) in a JSON body. */
export const IdQuery = Type.Object({ id: Type.Optional(IdText) }, { additionalProperties: false });
export const IdFields = Type.Object({ id: Type.Optional(Id) }, { additionalProperties: false });
export const EmailFields = Type.Object({ email: Type.Optional(Email) }, { additionalProperties: false });
export const PageQuery = Type.Object(Pagination, { additionalProperties: false });

export const ResetRequestBody = Type.Object({ email: Email }, { additionalProperties: false });

export const ResetBody = Type.Object(
  {
    email: Email,
    password: Type.String({ ...NewPassword, description: 'The new password' }),
    token: Type.Optional(Type.String({ maxLength: 200, description: 'Reset token from the reset mail' })),
    current_password: Type.Optional(
      Type.String({ maxLength: 4 * PASSWORD_MAX, description: 'With a bearer token instead of a reset token' }),
    ),
  },
  { additionalProperties: false },
);

export const UpdateJsonBody = Type.Object(
  {
    email: Email,
    password: Type.String({ maxLength: 4 * PASSWORD_MAX, description: 'Current password: the proof' }),
    photo: Type.Union([
      Type.String({ description: 'data:image/png;base64,… (PNG, JPEG, WebP or GIF)' }),
      Type.Null({ description: 'removes the photo' }),
    ]),
  },
  { additionalProperties: false },
);

/** The text parts of a multipart update (the file part is checked apart). */
export const MultipartUpdateFields = Type.Object(
  { email: Email, password: Type.String({ maxLength: 4 * PASSWORD_MAX }) },
  { additionalProperties: false },
);

export const UpdateMultipartBody = Type.Object({
  email: Email,
  password: Type.String(),
  photo: Type.String({ format: 'binary', description: 'PNG, JPEG, WebP or GIF file' }),
});

export const ApiKeyCreateBody = Type.Object(
  { name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'A label for the key pair' })) },
  { additionalProperties: false },
);

const ApiKeyInfo = {
  api_key: Type.String({ description: 'Public key id (32 hex digits)' }),
  name: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
};

export const ApiKeyCreated = Type.Object({
  ...ApiKeyInfo,
  api_secret: Type.String({
    description: 'Shown only in this answer; used for dev_hash = md5(timestamp + api_secret)',
  }),
});

export const ApiKeyList = Type.Object({ results: Type.Array(Type.Object(ApiKeyInfo)) });
export const ApiKeyFields = Type.Object(
  { api_key: Type.Optional(Type.String({ maxLength: 64 })) },
  { additionalProperties: false },
);

export const Accepted = Type.Object({ status: Type.Literal('accepted'), detail: Type.String() });
