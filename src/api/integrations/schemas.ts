import { Type } from 'typebox';
import { Nullable, StringEnum } from '../../http/schemas.js';
import { INTEGRATION_KINDS } from '../../http/scopes.js';

export const IntegrationIdentity = Type.Object({
  integration: Type.Object({
    id: Type.String({ format: 'uuid' }),
    name: Type.String(),
    kind: StringEnum([...INTEGRATION_KINDS]),
  }),
  organization: Type.Object({
    id: Type.String({ format: 'uuid' }),
    code: Type.String(),
    name: Type.String(),
  }),
  key: Type.Object({ prefix: Type.String(), name: Nullable(Type.String()) }),
  environment: StringEnum(['live', 'test']),
  scopes: Type.Array(Type.String()),
  rate_limits: Type.Object({
    per_minute: Type.Object({ key: Type.Integer(), organization: Type.Integer(), endpoint: Type.Integer() }),
  }),
  api_version: Type.Literal('v1'),
});
