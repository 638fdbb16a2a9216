// What is loaded: the endpoints, and the inputs they need (a booking id, a cursor deep in the list)
// obtained through the API itself, since cursors are signed and cannot be made up.
export interface Endpoint {
  name: string;
  /** Path and query below the API base URL. */
  path: string;
  /** Path as reported (a cursor is shortened). */
  label: string;
}

export interface DeepCursor {
  cursor: string;
  /** Rows before the page the cursor opens. */
  rows: number;
  /** Pages of 25 before it. */
  pages: number;
  requests: number;
  seconds: number;
}

export const PAGE = 25;
export const DEEP_PAGES = 2000;
const WALK_LIMIT = 100;

interface ListPage {
  data: { id: string }[];
  next_cursor: string | null;
}

async function getJson<T>(url: string, key: string): Promise<{ status: number; body: T }> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
}

/**
 * Walks the bookings list 100 rows at a time until `DEEP_PAGES` pages of 25 lie behind, or as deep
 * as the organization's list allows while still leaving a full page after the cursor.
 */
export async function deepCursor(baseUrl: string, key: string, listLength: number): Promise<DeepCursor> {
  const target = Math.min(DEEP_PAGES * PAGE, Math.floor((listLength - PAGE) / WALK_LIMIT) * WALK_LIMIT);
  const started = performance.now();
  let cursor: string | null = null;
  let rows = 0;
  let requests = 0;
  while (rows < target) {
    const query: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
    const page = await getJson<ListPage>(`${baseUrl}/bookings?limit=${WALK_LIMIT}${query}`, key);
    requests += 1;
    if (page.status !== 200) throw new Error(`walking the bookings list: ${page.status}`);
    if (!page.body.next_cursor) break;
    rows += page.body.data.length;
    cursor = page.body.next_cursor;
  }
  if (!cursor) throw new Error('the bookings list is too short for a deep page');
  return {
    cursor,
    rows,
    pages: rows / PAGE,
    requests,
    seconds: Math.round((performance.now() - started) / 100) / 10,
  };
}

/** The loaded endpoints: a booking from the deep page is the one read by id. */
export async function readEndpoints(baseUrl: string, key: string, deep: DeepCursor): Promise<Endpoint[]> {
  const cursor = encodeURIComponent(deep.cursor);
  const page = await getJson<ListPage>(`${baseUrl}/bookings?limit=${PAGE}&cursor=${cursor}`, key);
  const id = page.body.data[0]?.id;
  if (!id) throw new Error('the deep page is empty');
  return [
    { name: 'identity', path: '/integrations/me', label: 'GET /integrations/me' },
    { name: 'bookings_first_page', path: `/bookings?limit=${PAGE}`, label: `GET /bookings?limit=${PAGE}` },
    {
      name: 'bookings_deep_page',
      path: `/bookings?limit=${PAGE}&cursor=${cursor}`,
      label: `GET /bookings?limit=${PAGE}&cursor=(${deep.pages} pages deep)`,
    },
    { name: 'booking_by_id', path: `/bookings/${id}`, label: 'GET /bookings/{id}' },
    { name: 'customers_first_page', path: '/customers', label: 'GET /customers' },
  ];
}
