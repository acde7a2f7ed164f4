// Orders: a quotation that was accepted. Creating one (in one transaction) stores the order,
// assigns the work to translators (their backlog from now on), and moves the "outdated"
// baseline of every ordered file in the target language to the order's time.
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { Principal } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import type { QuotesConfig } from './config.js';
import { findLanguage } from './locales.js';
import { makeQuotation, type QuoteRequest } from './quote.js';
import type { Level } from './rates.js';
import { recountFileLocale, type OrderRow, type Project } from './store.js';
import { timeFields } from './time.js';

export type OrderLevel = 'translate-only' | 'translate-review' | 'review-only';

const LEVEL_OF: Record<OrderLevel, Level> = {
  'translate-only': 'translation_only',
  'translate-review': 'translation_and_review',
  'review-only': 'review_only',
};

export interface OrderChoices {
  orderType: OrderLevel;
  translatorType: 'preferred' | 'fastest';
  tone: string;
  note: string;
}

export async function createOrder(
  db: Kysely<DB>,
  config: QuotesConfig,
  project: Project,
  principal: Principal,
  request: QuoteRequest,
  choices: OrderChoices,
): Promise<OrderRow> {
  const now = Date.now();
  return db.transaction().execute(async (trx) => {
    const quotation = await makeQuotation(trx, config, project, request, now);
    if (quotation.strings === 0) {
      throw new HttpError(409, 'Nothing to order: no string of these files is in the requested states');
    }
    const level = quotation.levels[LEVEL_OF[choices.orderType]];
    const plan = choices.translatorType === 'preferred' ? level.plans.preferred : level.plans.fastest;
    const values = {
      project_id: project.id,
      owner_id: principal.userId,
      from_locale: request.from.code,
      to_locale: request.to.code,
      files: JSON.stringify(quotation.files.map((file) => file.name)),
      order_type: choices.orderType,
      translator_type: choices.translatorType,
      tone: choices.tone,
      specialization: request.specialization,
      note: choices.note,
      include_not_translated: request.includeNotTranslated ? 1 : 0,
      include_not_approved: request.includeNotApproved ? 1 : 0,
      include_outdated: request.includeOutdated ? 1 : 0,
      string_count: quotation.strings,
      word_count: quotation.words,
      amount: level.total,
      per_word_cost: level.perWord,
      ordered_at: now,
    };
    const inserted = await trx.insertInto('quote_orders').values(values).returning('id').executeTakeFirstOrThrow();
    const orderId = Number(inserted.id);
    await trx
      .insertInto('quote_assignments')
      .values(
        plan.assignments.map((a) => ({
          order_id: orderId,
          project_id: project.id,
          locale: request.to.code,
          translator: a.translator,
          role: a.role,
          word_count: a.words,
          starts_at: a.startsAt,
          busy_until: a.busyUntil,
        })),
      )
      .execute();
    for (const file of quotation.files) {
      await trx
        .insertInto('quote_file_locales')
        .values({
          file_id: file.id,
          locale: request.to.code,
          ordered_at: now,
          translated_at: null,
          plural_forms: null,
          not_translated_strings: 0,
          not_translated_words: 0,
          not_approved_strings: 0,
          not_approved_words: 0,
          outdated_strings: 0,
          outdated_words: 0,
          approved_strings: 0,
          approved_words: 0,
        })
        .onConflict((oc) => oc.columns(['file_id', 'locale']).doUpdateSet({ ordered_at: now }))
        .execute();
      await recountFileLocale(trx, file.id, request.to.code);
    }
    return { ...values, id: orderId };
  });
}

/** The order as the API shows it; its status follows the plan: in-progress until done. */
export async function orderBody(db: Kysely<DB>, order: OrderRow, withTasks: boolean) {
  const assignments = await db
    .selectFrom('quote_assignments')
    .selectAll()
    .where('order_id', '=', order.id)
    .orderBy('id')
    .execute();
  const now = Date.now();
  const done = assignments.reduce((max, a) => Math.max(max, Number(a.busy_until)), Number(order.ordered_at));
  const status = done <= now ? 'completed' : 'in-progress';
  const to = findLanguage(order.to_locale)!;
  const translator = assignments.find((a) => a.role === 'translate') ?? assignments[0];
  return {
    id: order.id,
    status,
    amount: order.amount,
    per_word_cost: order.per_word_cost,
    files: (JSON.parse(order.files) as string[]).map((name) => ({ name })),
    from_language: findLanguage(order.from_locale)!,
    to_language: to,
    order_type: order.order_type,
    translator_type: order.translator_type,
    tone: order.tone,
    specialization: order.specialization,
    note: order.note,
    string_count: order.string_count,
    word_count: order.word_count,
    ...timeFields('ordered', Number(order.ordered_at)),
    ...(withTasks
      ? {
          tasks: [
            {
              language: to,
              status,
              translator: { name: translator?.translator ?? '' },
              assignments: assignments.map((a) => ({
                name: a.translator,
                role: a.role,
                word_count: a.word_count,
                ...timeFields('start', Number(a.starts_at)),
                ...timeFields('busy_until', Number(a.busy_until)),
              })),
              string_count: order.string_count,
              word_count: order.word_count,
              ...timeFields('will_complete', done),
              ...timeFields('completed', status === 'completed' ? done : null),
            },
          ],
        }
      : {}),
  };
}
