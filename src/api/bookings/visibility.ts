// Who sees a booking: its originator and, through the exchange, its executor. The one place the
// rule is written; `organization` is the placeholder of the reading organization's id.
export function visibleTo(organization: string, alias = 'b'): string {
  return `(${alias}.originator_organization_id = ${organization} OR ${alias}.executor_organization_id = ${organization})`;
}
