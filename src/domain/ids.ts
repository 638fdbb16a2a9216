// The one spelling of a UUID the service accepts: canonical text, either case. Path ids, filters
// and cursor payloads are checked against it before they reach SQL.
export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

const UUID = new RegExp(UUID_PATTERN);

export const isUuid = (value: string): boolean => UUID.test(value);
