// The paging fields of a list's `meta` (OneSky conventions): links keep the list's parameters.

export interface PageRequest {
  page: number;
  perPage: number;
  /** The records of every page. */
  total: number;
  /** The link of page n. */
  link(page: number): string;
  /** The files list offers no previous page past the one after the last; the orders list always does. */
  prevPastEnd: boolean;
}

export function pageMeta({ page, perPage, total, link, prevPastEnd }: PageRequest) {
  const pages = Math.ceil(total / perPage);
  const hasPrev = page > 1 && (prevPastEnd || page <= pages + 1);
  return {
    status: 200,
    record_count: total,
    page_count: pages,
    next_page: page < pages ? link(page + 1) : null,
    prev_page: hasPrev ? link(page - 1) : null,
  };
}
