// TypeBox schemas of the /api/tasks routes (validation and OpenAPI in one place).
import { Type } from '@sinclair/typebox';
import { IdText, Pagination } from '../users/schemas.js';

const Title = Type.String({ minLength: 1, maxLength: 200, pattern: '\\S', description: '1 to 200 characters' });
const Description = Type.String({ maxLength: 10_000, description: 'Up to 10,000 characters' });

export const Task = Type.Object({
  id: Type.String(),
  title: Type.String(),
  description: Type.String(),
  done: Type.Boolean(),
  user: Type.String({ description: "Owner's user id" }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});

export const TaskReply = Type.Object({ task: Task });

export const CreateBody = Type.Object(
  {
    title: Title,
    description: Type.Optional(Description),
    user: Type.Optional(
      Type.Union([Type.String({ maxLength: 1000 }), Type.Integer({ minimum: 1 })], {
        description:
          'Owner: a JSON string such as "{\\"id\\":\\"12\\"}" or "\\"12\\"", or a plain id ("12" or 12). ' +
          'Defaults to the caller; only an admin may name another user.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const UpdateBody = Type.Object(
  { title: Type.Optional(Title), description: Type.Optional(Description), done: Type.Optional(Type.Boolean()) },
  { additionalProperties: false, minProperties: 1 },
);

export const TaskParams = Type.Object({ id: Type.String({ pattern: IdText.pattern, description: 'Task id' }) });

export const ListQuery = Type.Object(
  {
    ...Pagination,
    done: Type.Optional(Type.Boolean({ description: 'Only done (true) or open (false) tasks' })),
    user: Type.Optional(
      Type.String({ pattern: IdText.pattern, description: "Admins: list this user's tasks (default: your own)" }),
    ),
  },
  { additionalProperties: false },
);
