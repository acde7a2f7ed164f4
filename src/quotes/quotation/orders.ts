// Orders: a quotation that was accepted. Creating one (in one transaction) stores the order,
// assigns the work to translators (their backlog from now on), and moves the "outdated"
// baseline of every ordered file in the target language to the order's time.
import { writeTransaction, type Database, type Executor } from '../../db/index.js';
import type { Principal } from '../../http/auth.js';
import { HttpError } from '../../http/errors.js';
import type { QuotesConfig } from '../config.js';
import { findLanguage } from '../common/locales.js';
import { makeQuotation, type QuoteRequest } from './quote.js';
import type { Level } from './rates.js';
import { pageMeta } from '../common/paging.js';
import { recountFileLocale } from '../store/files.js';
import {
  assignmentsOf,
  countOrders,
  findOrder,
  insertOrder,
  markOrdered,
  pageOfOrders,
  type AssignmentRow,
} from '../store/orders.js';
import type { OrderRow, Project } from '../store/rows.js';
import { timeFields } from '../common/time.js';

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
  db: Database,
  config: QuotesConfig,
  project: Project,
  principal: Principal,
  request: QuoteRequest,
  choices: OrderChoices,
): Promise<OrderRow> {
  const now = Date.now();
  // Read then write: the quotation is priced on the counts the order then moves.
  return writeTransaction(db, async (trx) => {
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
    const id = await insertOrder(
      trx,
      values,
      plan.assignments.map((a) => ({
        project_id: project.id,
        locale: request.to.code,
        translator: a.translator,
        role: a.role,
        word_count: a.words,
        starts_at: a.startsAt,
        busy_until: a.busyUntil,
      })),
    );
    for (const file of quotation.files) {
      await markOrdered(trx, file.id, request.to.code, now);
      await recountFileLocale(trx, file.id, request.to.code);
    }
    return { ...values, id };
  });
}

/** One order of the project with its tasks. */
export async function showOrder(db: Executor, project: Project, id: number) {
  const order = await findOrder(db, project.id, id);
  if (!order) throw new HttpError(404, `order ${id} not found in project ${project.id}`);
  return orderWithTasks(db, order);
}

export async function orderWithTasks(db: Executor, order: OrderRow) {
  return orderBody(order, (await assignmentsOf(db, [order.id])).get(order.id) ?? [], true);
}

/** A page of a project's orders (or of those of one file), newest first, with the `meta` paging fields. */
export async function listOrders(db: Database, project: Project, page: number, perPage: number, fileName?: string) {
  const { kysely, dialect } = db;
  const [total, orders] = await Promise.all([
    countOrders(kysely, dialect, project.id, fileName),
    pageOfOrders(kysely, dialect, project.id, fileName, perPage, (page - 1) * perPage),
  ]);
  const assignments = await assignmentsOf(
    kysely,
    orders.map((order) => order.id),
  );
  const fileParameter = fileName ? `&file_name=${encodeURIComponent(fileName)}` : '';
  const link = (n: number) => `/1/projects/${project.id}/orders?page=${n}&per_page=${perPage}${fileParameter}`;
  return {
    meta: pageMeta({ page, perPage, total, link, prevPastEnd: true }),
    data: orders.map((order) => orderBody(order, assignments.get(order.id) ?? [], false)),
  };
}

/** The order as the API shows it; its status follows the plan: in-progress until done. */
export function orderBody(order: OrderRow, assignments: AssignmentRow[], withTasks: boolean) {
  const now = Date.now();
  const done = assignments.reduce((max, a) => Math.max(max, a.busy_until), order.ordered_at);
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
    ...timeFields('ordered', order.ordered_at),
    ...(withTasks
      ? {
          tasks: [
            {
              // OneSky names a task's language to_language; language stays for the clients of today.
              to_language: to,
              language: to,
              status,
              translator: { name: translator?.translator ?? '' },
              assignments: assignments.map((a) => ({
                name: a.translator,
                role: a.role,
                word_count: a.word_count,
                ...timeFields('start', a.starts_at),
                ...timeFields('busy_until', a.busy_until),
              })),
              string_count: order.string_count,
              word_count: order.word_count,
              ...timeFields('will_complete', done),
              // As OneSky's sample shows it on each task (0 once completed).
              seconds_to_complete: Math.max(0, Math.ceil((done - now) / 1000)),
              ...timeFields('completed', status === 'completed' ? done : null),
            },
          ],
        }
      : {}),
  };
}
