// The endpoints the read benchmark loads, and their inputs (a cursor deep in the list, a booking id
// from that page) obtained through the API itself: cursors are signed and cannot be made up.
import { call } from './proc.js';

export interface Endpoint {
  name: string;
  /** Path and query below the API base URL. */
  path: string;
  label: string;
}

const PAGE = 25;
const DEEP_PAGES = 2000;
const WALK_LIMIT = 100;

type ListPage = { data: { id: string }[]; next_cursor: string | null };

/**
 * Walks the bookings list 100 rows at a time until 2,000 pages of 25 lie behind, or as deep as the
 * organization's list allows while leaving a full page after the cursor.
 */
export async function readEndpoints(baseUrl: string, key: string, listLength: number): Promise<Endpoint[]> {
  const target = Math.min(DEEP_PAGES * PAGE, Math.floor((listLength - PAGE) / WALK_LIMIT) * WALK_LIMIT);
  let cursor = '';
  let rows = 0;
  while (rows < target) {
    const after = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
    const page = await call<ListPage>(`${baseUrl}/bookings?limit=${WALK_LIMIT}${after}`, 'GET', key);
    if (!page.next_cursor) break;
    rows += page.data.length;
    cursor = page.next_cursor;
  }
  if (!cursor) throw new Error('the bookings list is too short for a deep page');
  const deep = `/bookings?limit=${PAGE}&cursor=${encodeURIComponent(cursor)}`;
  const id = (await call<ListPage>(`${baseUrl}${deep}`, 'GET', key)).data[0]?.id;
  if (!id) throw new Error('the deep page is empty');
  return [
    { name: 'identity', path: '/integrations/me', label: 'GET /integrations/me' },
    { name: 'bookings_first_page', path: `/bookings?limit=${PAGE}`, label: `GET /bookings?limit=${PAGE}` },
    {
      name: 'bookings_deep_page',
      path: deep,
      label: `GET /bookings?limit=${PAGE}, ${rows / PAGE} pages deep`,
    },
    { name: 'booking_by_id', path: `/bookings/${id}`, label: 'GET /bookings/{id}' },
    { name: 'customers_first_page', path: '/customers', label: 'GET /customers' },
  ];
}
