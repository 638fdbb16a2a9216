// Route schemas are TypeBox (plain JSON Schema); these compile them. Query, path and header values
// arrive as strings and are coerced; bodies are taken exactly as sent (a number is not a string).
import { Ajv, type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { AppError, type ErrorDetails } from './errors.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: false,
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    removeAdditional: false,
    strict: false,
  });
  addFormats(ajv);
  return ajv;
}

const bodyAjv = makeAjv(false);
const paramAjv = makeAjv(true);

export function compileValidator({ schema, httpPart }: { schema: object; httpPart?: string }) {
  return (httpPart === 'body' ? bodyAjv : paramAjv).compile(schema);
}

export type ValidationPart = 'body' | 'querystring' | 'params' | 'headers';

function nameOf(error: ErrorObject): string {
  const path = error.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  const params = error.params as Record<string, unknown>;
  if (error.keyword === 'required') path.push(String(params.missingProperty));
  if (error.keyword === 'additionalProperties') path.push(String(params.additionalProperty));
  return path.join('.');
}

function describe(error: ErrorObject, name: string): string {
  const p = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return `Falta ${name}, que es obligatorio.`;
    case 'additionalProperties':
      return `${name} no se admite aquí.`;
    case 'enum':
      return `${name} debe ser uno de: ${(p.allowedValues as unknown[]).join(', ')}.`;
    case 'type':
      return `${name} debe ser de tipo ${String(p.type)}.`;
    case 'format':
      return `${name} no tiene el formato ${String(p.format)}.`;
    case 'minimum':
      return `${name} debe ser como mínimo ${String(p.limit)}.`;
    case 'maximum':
      return `${name} debe ser como máximo ${String(p.limit)}.`;
    case 'minLength':
      return `${name} debe tener al menos ${String(p.limit)} caracteres.`;
    case 'maxLength':
      return `${name} debe tener como máximo ${String(p.limit)} caracteres.`;
    case 'pattern':
      return `${name} contiene caracteres no admitidos.`;
    case 'minProperties':
      return 'El cuerpo debe contener al menos un campo.';
    default:
      return `${name} no es válido.`;
  }
}

/** Turns the first schema violation into the contract's 400 validation_error. */
export function validationError(errors: ErrorObject[], part: ValidationPart): AppError {
  const first = errors[0];
  if (!first) return new AppError('validation_error');
  const key = part === 'body' ? 'field' : 'param';
  const raw = nameOf(first);
  const name = raw === '' ? (part === 'body' ? 'body' : part) : raw;
  const details: ErrorDetails = { [key]: name };
  if (first.keyword === 'enum') details.allowed = (first.params as { allowedValues: string[] }).allowedValues;
  return new AppError('validation_error', details, describe(first, name));
}
