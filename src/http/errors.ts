// One error type with stable codes, one table from code to HTTP status and message, one renderer
// for the envelope. Routes throw AppError; nothing else builds an error body.

export const ERRORS = {
  invalid_cursor: { status: 400, message: 'El cursor no es válido; vuelva a pedir la primera página.' },
  validation_error: { status: 400, message: 'Algún parámetro o campo no es válido.' },
  expired_key: { status: 401, message: 'La clave de API ha caducado.' },
  invalid_key: { status: 401, message: 'La clave de API no es válida.' },
  revoked_key: { status: 401, message: 'La clave de API ha sido revocada.' },
  unauthorized: { status: 401, message: 'Falta la cabecera Authorization: Bearer con la clave de API.' },
  wrong_environment: { status: 401, message: 'La clave de API es de otro entorno.' },
  api_disabled: { status: 403, message: 'La API no está habilitada para esta organización.' },
  forbidden: { status: 403, message: 'Acceso denegado.' },
  insufficient_scope: { status: 403, message: 'La clave no tiene el permiso necesario.' },
  integration_disabled: { status: 403, message: 'La integración está desactivada o revocada.' },
  not_found: { status: 404, message: 'No existe el recurso.' },
  method_not_allowed: { status: 405, message: 'Método no permitido.' },
  conflict: { status: 409, message: 'El estado actual no permite la operación.' },
  idempotency_conflict: {
    status: 409,
    message: 'La Idempotency-Key ya se usó con una petición distinta.',
  },
  idempotency_in_progress: {
    status: 409,
    message: 'Una petición con esta Idempotency-Key todavía está en curso.',
  },
  payload_too_large: { status: 413, message: 'El cuerpo de la petición supera el tamaño máximo.' },
  unsupported_media_type: { status: 415, message: 'El cuerpo debe enviarse como application/json.' },
  // The server's own answers, before any endpoint runs (docs/decisions.md, "Requests and errors").
  request_timeout: { status: 408, message: 'La petición no llegó completa a tiempo.' },
  headers_too_large: { status: 431, message: 'Las cabeceras de la petición son demasiado grandes.' },
  rate_limited: { status: 429, message: 'Demasiadas peticiones; espere los segundos de Retry-After.' },
  internal: { status: 500, message: 'Error interno.' },
  not_implemented: { status: 501, message: 'No implementado.' },
  unavailable: { status: 503, message: 'El servicio se está deteniendo; repita la petición.' },
} as const;

export type ErrorCode = keyof typeof ERRORS;

export interface ErrorDetails {
  param?: string;
  field?: string;
  allowed?: readonly string[];
  required_scope?: string;
  retry_after?: number;
  [key: string]: unknown;
}

export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    readonly details?: ErrorDetails,
    message?: string,
  ) {
    super(message ?? ERRORS[code].message);
    this.status = ERRORS[code].status;
  }
}

export interface ErrorBody {
  error: { code: ErrorCode; message: string; request_id: string; details?: ErrorDetails };
}

export function errorBody(error: AppError, requestId: string): ErrorBody {
  return {
    error: {
      code: error.code,
      message: error.message,
      request_id: requestId,
      ...(error.details ? { details: error.details } : {}),
    },
  };
}

export const invalidParam = (param: string, message?: string, allowed?: readonly string[]) =>
  new AppError('validation_error', allowed ? { param, allowed } : { param }, message);

export const invalidField = (field: string, message?: string, allowed?: readonly string[]) =>
  new AppError('validation_error', allowed ? { field, allowed } : { field }, message);

export const notFound = () => new AppError('not_found');
