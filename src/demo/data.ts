import type { Queryable } from '../db/db.js';

export async function seedDemoData(_db: Queryable, _organizationId: string): Promise<void> {}
