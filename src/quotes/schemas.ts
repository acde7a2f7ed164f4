// TypeBox schemas of the /1 routes: they validate requests and produce /openapi/quotes.json.
import { Type, type TSchema } from '@sinclair/typebox';
import { MAX_ID, MAX_PAGE } from '../http/validation.js';
import { FILE_FORMATS } from './formats/index.js';
import { SPECIALIZATIONS } from './quotation/rates.js';

const Str = (description: string, extra: object = {}) => Type.String({ description, ...extra });
const Bool = (description: string) => Type.Boolean({ description: `${description} (true/false or 1/0)` });

/** The OneSky credentials, accepted in the query string or the body. */
export const AuthQuery = {
  api_key: Type.Optional(Str('Public API key (users and tasks API: POST /api/users/apikeys)', { maxLength: 256 })),
  timestamp: Type.Optional(Str('Unix seconds, UTC', { maxLength: 32 })),
  dev_hash: Type.Optional(Str('md5(timestamp + api_secret), hex', { maxLength: 256 })),
};

/** The query string of a route that takes nothing but the credentials. */
export const AuthOnlyQuery = Type.Object(AuthQuery);

export const Language = Type.Object({
  code: Str('language-region, e.g. ja-JP'),
  english_name: Type.String(),
  local_name: Type.String(),
  locale: Str('language, e.g. ja'),
  region: Str('region, e.g. JP'),
});

const Meta = Type.Object({
  status: Type.Integer(),
  message: Type.Optional(Type.String()),
  record_count: Type.Optional(Type.Integer()),
  page_count: Type.Optional(Type.Integer()),
  next_page: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  prev_page: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  first_page: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  last_page: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  language: Type.Optional(Language),
});

const ErrorBody = Type.Object(
  { meta: Type.Object({ status: Type.Integer(), message: Type.String() }), data: Type.Object({}) },
  { description: 'OneSky error shape' },
);

/** A `{meta, data}` success body plus the error answers every authenticated route can give. */
export function envelope(status: number, data: TSchema, extra: Record<number, string> = {}) {
  const responses: Record<number, TSchema> = { [status]: Type.Object({ meta: Meta, data }) };
  for (const [code, description] of Object.entries({
    400: 'Invalid input',
    401: 'Authentication failed',
    404: 'Not found',
    ...extra,
  })) {
    responses[Number(code)] = { ...ErrorBody, description } as TSchema;
  }
  return responses;
}

const Time = (name: string) => ({
  [`${name}_at`]: Type.Union([Type.String({ description: 'YYYY-MM-DDTHH:MM:SS+0000 (UTC)' }), Type.Null()]),
  [`${name}_at_timestamp`]: Type.Union([Type.Integer({ description: 'Unix seconds' }), Type.Null()]),
});

/** An id in the path: past MAX_ID it names nothing that can exist, and is refused as malformed (400). */
const Id = (description: string) => Type.Integer({ minimum: 1, maximum: MAX_ID, description });

export const ProjectParams = Type.Object({ project_id: Id('project id') });
export const GroupParams = Type.Object({ project_group_id: Id('project group id') });
export const ScreenshotParams = Type.Object({ project_id: Id('project id'), screenshot_id: Id('screenshot id') });
export const ImportParams = Type.Object({ project_id: Id('project id'), import_id: Id('import id') });
export const OrderParams = Type.Object({ project_id: Id('project id'), order_id: Id('order id') });

export const ProjectType = Type.Object({ code: Str('e.g. website, ios, game-unity'), name: Type.String() });

export const Project = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  description: Type.String(),
  project_type: Type.Union([ProjectType, Type.Null()], { description: 'null for a project made without a type' }),
  project_group_id: Type.Union([Type.Integer(), Type.Null()], { description: 'null outside any group' }),
  base_language: Language,
  target_languages: Type.Array(Language),
  string_count: Type.Integer(),
  word_count: Type.Integer(),
  ...Time('created'),
});

const ProjectTypeCode = Str('a code of GET /1/project-types', { maxLength: 60 });

export const CreateProjectBody = Type.Object({
  ...AuthQuery,
  name: Type.String({ minLength: 1, maxLength: 200 }),
  description: Type.Optional(Type.String({ maxLength: 2000 })),
  project_type: Type.Optional(ProjectTypeCode),
  base_locale: Type.Optional(Str('base language, e.g. en-US (default en-US)', { maxLength: 40 })),
  target_locales: Type.Optional(
    Type.Array(Type.String({ maxLength: 40 }), {
      maxItems: 300,
      description: 'target languages, e.g. ["ja-JP","zh-TW"]',
    }),
  ),
});

export const UpdateProjectBody = Type.Object({
  ...AuthQuery,
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  description: Type.Optional(Type.String({ maxLength: 2000 })),
  base_locale: Type.Optional(Str('only while the project has no files', { maxLength: 40 })),
  target_locales: Type.Optional(Type.Array(Type.String({ maxLength: 40 }), { maxItems: 300 })),
  project_type: Type.Optional(ProjectTypeCode),
});

export const CreateGroupProjectBody = Type.Object({
  ...AuthQuery,
  project_type: ProjectTypeCode,
  name: Type.Optional(Type.String({ maxLength: 200, description: "default: the project type's name" })),
  description: Type.Optional(Type.String({ maxLength: 2000 })),
});

export const NamedItem = Type.Object({ id: Type.Integer(), name: Type.String() });

export const CreateGroupBody = Type.Object({
  ...AuthQuery,
  name: Type.String({ minLength: 1, maxLength: 200 }),
  locale: Type.Optional(Str('base language (default en, i.e. en-US)', { maxLength: 40 })),
});

export const GroupCreated = Type.Object({ id: Type.Integer(), name: Type.String(), base_language: Language });

export const GroupDetails = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  base_language: Language,
  enabled_language_count: Type.Integer({ description: 'the base language and every language of its projects' }),
  project_count: Type.Integer(),
});

export const GroupLanguage = Type.Object({ ...Language.properties, is_base_language: Type.Boolean() });

export const GroupsQuery = Type.Object({ ...AuthQuery, ...PageQueryFields() });

export const ProjectLanguage = Type.Object({
  ...Language.properties,
  is_base_language: Type.Boolean(),
  is_ready_to_publish: Type.Boolean(),
  translation_progress: Str('approved and current strings, e.g. "92%"'),
  ...Time('last_updated'),
});

function PageQueryFields() {
  return {
    page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: 1 })),
    per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
  };
}

export const PageQuery = PageQueryFields();

export const FilesQuery = Type.Object({ ...AuthQuery, ...PageQuery });

export const DeleteFileQuery = Type.Object({ ...AuthQuery, file_name: Type.String({ minLength: 1, maxLength: 255 }) });

export const TranslationsQuery = Type.Object({
  ...AuthQuery,
  locale: Type.String({ maxLength: 40 }),
  source_file_name: Type.String({ minLength: 1, maxLength: 255 }),
  export_file_name: Type.Optional(Type.String({ maxLength: 255 })),
});

export const TranslationStatusQuery = Type.Object({
  ...AuthQuery,
  file_name: Type.String({ minLength: 1, maxLength: 255 }),
  locale: Type.String({ maxLength: 40 }),
});

export const TranslationStatus = Type.Object({
  file_name: Type.String(),
  locale: Language,
  progress: Str('approved and current strings of the file in the language, floored, e.g. "92%"'),
  string_count: Type.Integer({ description: 'strings of the file' }),
  word_count: Type.Integer({ description: 'words of the file' }),
});

export const MULTILINGUAL_FORMATS = ['I18NEXT_MULTILINGUAL_JSON'] as const;

export const MultilingualQuery = Type.Object({
  ...AuthQuery,
  source_file_name: Type.String({ minLength: 1, maxLength: 255 }),
  export_file_name: Type.Optional(Type.String({ maxLength: 255 })),
  file_format: Type.Optional(
    Type.Union(
      MULTILINGUAL_FORMATS.map((s) => Type.Literal(s)),
      { default: 'I18NEXT_MULTILINGUAL_JSON' },
    ),
  ),
});

export const MultilingualFile = {
  200: {
    description: 'JSON: {"<language code>": {"translation": {…the file\'s strings in that language…}}, …}',
    content: {
      'application/json': { schema: Type.Record(Type.String(), Type.Object({ translation: Type.Object({}) })) },
    },
  },
};

export const AppDescriptionQuery = Type.Object({ ...AuthQuery, locale: Type.String({ maxLength: 40 }) });

export const ExportedFile = {
  200: {
    description: 'The file, in its format',
    content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
  },
};

export const FileItem = Type.Object({
  name: Type.String(),
  file_format: Type.String(),
  string_count: Type.Integer(),
  word_count: Type.Integer(),
  last_import: Type.Union([Type.Object({ id: Type.Integer(), status: Type.String() }), Type.Null()]),
  ...Time('uploaded'),
});

export const UploadResult = Type.Object({
  name: Type.String(),
  format: Type.String(),
  language: Language,
  import: Type.Object({ id: Type.Integer(), ...Time('created') }),
});

export const UploadRequestBody = {
  required: true,
  content: {
    'multipart/form-data': {
      schema: {
        type: 'object',
        required: ['file', 'file_format'],
        properties: {
          file: { type: 'string', format: 'binary' },
          file_format: { type: 'string', enum: [...FILE_FORMATS] },
          locale: { type: 'string', description: 'default: the base language; another locale adds translations' },
          is_keeping_all_strings: {
            type: 'boolean',
            default: true,
            description: 'false removes strings of this file missing from the upload',
          },
          is_allow_translation_same_as_original: { type: 'boolean', default: false },
          api_key: { type: 'string' },
          timestamp: { type: 'string' },
          dev_hash: { type: 'string' },
        },
      },
    },
  },
};

export const IMPORT_STATUSES = ['all', 'completed', 'in-progress', 'failed'] as const;

export const ImportTasksQuery = Type.Object({
  ...AuthQuery,
  ...PageQuery,
  status: Type.Optional(
    Type.Union(
      IMPORT_STATUSES.map((s) => Type.Literal(s)),
      { default: 'all' },
    ),
  ),
});

const ImportStatus = Type.Union([Type.Literal('completed'), Type.Literal('in-progress'), Type.Literal('failed')]);

export const ImportTaskItem = Type.Object({
  id: Type.Integer(),
  file: Type.Object({ name: Type.String() }),
  status: ImportStatus,
  ...Time('created'),
});

export const ImportTask = Type.Object({
  id: Type.Integer(),
  file: Type.Object({ name: Type.String(), format: Type.String(), locale: Language }),
  string_count: Type.Union([Type.Integer(), Type.Null()]),
  word_count: Type.Union([Type.Integer(), Type.Null()]),
  status: ImportStatus,
  message: Type.Union([Type.String(), Type.Null()]),
  ...Time('created'),
  ...Time('completed'),
});

const Completion = {
  will_complete_at: Str('YYYY-MM-DDTHH:MM:SS+0000 (UTC)'),
  will_complete_at_timestamp: Type.Integer({ description: 'Unix seconds' }),
  seconds_to_complete: Type.Integer(),
};

export const Estimate = Type.Object({
  string_count: Type.Integer(),
  word_count: Type.Integer(),
  per_word_cost: Str('decimal, e.g. "0.08"'),
  total_cost: Str('decimal rounded half-up to cents, e.g. "10.07"'),
  ...Completion,
  preferred_translator: Type.Object(Completion),
});

export const Quotation = Type.Object({
  files: Type.Array(Type.Object({ name: Type.String() })),
  from_language: Language,
  to_language: Language,
  is_including_not_translated: Type.Boolean(),
  is_including_not_approved: Type.Boolean(),
  is_including_outdated: Type.Boolean(),
  specialization: Type.String(),
  translation_only: Estimate,
  translation_and_review: Estimate,
  review_only: Estimate,
});

const filesParam = Type.Array(Type.String({ maxLength: 255 }), {
  minItems: 1,
  maxItems: 1000,
  description: 'file names: files=a.po&files=b.po, files[]=…, files[0]=…, files=["a.po"] or files=[\'a.po\']',
});

export const QuotationParams = {
  files: filesParam,
  to_locale: Str('target language code from GET /1/locales', { maxLength: 40 }),
  is_including_not_translated: Type.Optional(Bool('include not translated phrases; default true')),
  is_including_not_approved: Type.Optional(Bool('include not approved phrases; default true')),
  is_including_outdated: Type.Optional(Bool('include phrases updated since the last order; default true')),
  specialization: Type.Optional(
    Type.Union(
      SPECIALIZATIONS.map((s) => Type.Literal(s)),
      { default: 'general' },
    ),
  ),
};

export const QuotationQuery = Type.Object({ ...AuthQuery, ...QuotationParams });

export const ORDER_TYPES = ['translate-only', 'translate-review', 'review-only'] as const;
export const TRANSLATOR_TYPES = ['preferred', 'fastest'] as const;
export const TONES = ['not-specified', 'formal', 'informal'] as const;

export const OrderBody = Type.Object({
  ...AuthQuery,
  ...QuotationParams,
  order_type: Type.Optional(
    Type.Union(
      ORDER_TYPES.map((s) => Type.Literal(s)),
      { default: 'translate-only' },
    ),
  ),
  translator_type: Type.Optional(
    Type.Union(
      TRANSLATOR_TYPES.map((s) => Type.Literal(s)),
      { default: 'fastest' },
    ),
  ),
  tone: Type.Optional(
    Type.Union(
      TONES.map((s) => Type.Literal(s)),
      { default: 'not-specified' },
    ),
  ),
  note: Type.Optional(Type.String({ maxLength: 5000 })),
});

export const OrdersQuery = Type.Object({
  ...AuthQuery,
  ...PageQuery,
  file_name: Type.Optional(Type.String({ maxLength: 255 })),
});

const Worker = Type.Object({
  name: Type.String(),
  role: Type.String(),
  word_count: Type.Integer(),
  ...Time('start'),
  ...Time('busy_until'),
});

export const Order = Type.Object({
  id: Type.Integer(),
  status: Type.String({ description: 'in-progress until the planned completion, then completed' }),
  amount: Str('decimal'),
  per_word_cost: Type.String(),
  files: Type.Array(Type.Object({ name: Type.String() })),
  from_language: Language,
  to_language: Language,
  order_type: Type.String(),
  translator_type: Type.String(),
  tone: Type.String(),
  specialization: Type.String(),
  note: Type.String(),
  string_count: Type.Integer(),
  word_count: Type.Integer(),
  ...Time('ordered'),
  tasks: Type.Optional(
    Type.Array(
      Type.Object({
        to_language: Language,
        language: Type.Object(Language.properties, { description: 'the same as to_language (kept for older clients)' }),
        status: Type.String(),
        translator: Type.Object({ name: Type.String() }),
        assignments: Type.Array(Worker),
        string_count: Type.Integer(),
        word_count: Type.Integer(),
        ...Time('will_complete'),
        seconds_to_complete: Type.Integer({ minimum: 0, description: 'until will_complete_at; 0 once completed' }),
        ...Time('completed'),
      }),
    ),
  ),
});

const Pixels = (description: string) => Type.Integer({ minimum: 0, maximum: 1_000_000, description });

export const ScreenshotTag = Type.Object({
  key: Str('key of the string shown', { minLength: 1, maxLength: 1000 }),
  x: Pixels('left edge'),
  y: Pixels('top edge'),
  width: Pixels('width'),
  height: Pixels('height'),
  file: Type.Optional(Type.Union([Str('file of the string', { maxLength: 255 }), Type.Null()])),
});

export const ScreenshotsBody = Type.Object({
  ...AuthQuery,
  screenshots: Type.Array(
    Type.Object({
      name: Str('unique within the project: a screenshot of the same name is replaced', {
        minLength: 1,
        maxLength: 255,
      }),
      image: Str('data URI, e.g. data:image/png;base64,… (PNG, JPEG, GIF, WebP, BMP or TIFF)'),
      tags: Type.Optional(Type.Array(ScreenshotTag, { maxItems: 1000 })),
    }),
    { minItems: 1, maxItems: 20 },
  ),
});

export const Screenshot = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  mime: Type.String(),
  byte_count: Type.Integer(),
  image_url: Str('path of the image'),
  tags: Type.Array(
    Type.Object({
      key: Type.String(),
      file: Type.Union([Type.String(), Type.Null()]),
      x: Type.Integer(),
      y: Type.Integer(),
      width: Type.Integer(),
      height: Type.Integer(),
    }),
  ),
  ...Time('created'),
  ...Time('updated'),
});

export const ScreenshotsQuery = Type.Object({ ...AuthQuery, ...PageQuery });

// ---- phrase collections (OneSky's resources/phrase_collection.md) ----------------------------------

export const CollectionsQuery = Type.Object({ ...AuthQuery, ...PageQuery });

export const CollectionKeyQuery = Type.Object({
  ...AuthQuery,
  collection_key: Type.String({ minLength: 1, maxLength: 255, description: 'key of a phrase collection' }),
});

export const CollectionItem = Type.Object({ key: Type.String(), ...Time('created') });

export const PhraseCollection = Type.Object({
  key: Type.String(),
  base_language: Type.Unknown({
    description:
      '{"<base language code>": {"<string key>": {"string", "description"?, "length_limit"?: ' +
      '{"type": "absolute" | "relative", "value", "is_exceed_allowed"}}}}',
    'x-examples': [{ en: { title: { string: 'Which team?', length_limit: { type: 'absolute', value: 80 } } } }],
  }),
  translations: Type.Unknown({ description: '{"<language code>": {"<string key>": "<translation>"}}' }),
  attachments: Type.Array(Type.Object({ name: Type.String() })),
  ...Time('created'),
});

export const CollectionsImportBody = Type.Object({
  ...AuthQuery,
  collections: Type.Unknown({
    description:
      '{"<collection key>": {"<string key>": {"string", "description"?, "length_limit"?}}}, ' +
      'or its JSON text (reference/phrase_collection_format.md)',
  }),
  is_keeping_all_strings: Type.Optional(
    Type.Boolean({ description: 'false: strings missing from a collection sent again are removed (default true)' }),
  ),
});

const QueuedImport = Type.Object({ id: Type.Integer(), ...Time('created') });

export const CollectionsImported = Type.Object({
  import: QueuedImport,
  imports: Type.Array(Type.Object({ ...QueuedImport.properties, key: Type.String() }), {
    description: "each collection's import, in the order sent (import is the first)",
  }),
});

export const AttachmentsQuery = Type.Object({ ...AuthQuery, ...PageQuery });

export const AttachmentQuery = Type.Object({
  ...CollectionKeyQuery.properties,
  name: Type.String({ minLength: 1, maxLength: 255, description: 'name of the attachment in the collection' }),
});

export const Attachment = Type.Object({
  name: Type.String(),
  collection_attached_to: Type.Object({ key: Type.String() }),
  ...Time('uploaded'),
});

export const AttachmentItem = Type.Object({ ...Attachment.properties, byte_count: Type.Integer() });

export const AttachmentUploadBody = {
  required: true,
  content: {
    'multipart/form-data': {
      schema: {
        type: 'object',
        required: ['file', 'collection_key'],
        properties: {
          file: { type: 'string', format: 'binary', description: 'saved under its base name in the collection' },
          collection_key: { type: 'string', description: 'the phrase collection to attach it to' },
          api_key: { type: 'string' },
          timestamp: { type: 'string' },
          dev_hash: { type: 'string' },
        },
      },
    },
  },
};
