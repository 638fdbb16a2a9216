// Route schemas are TypeBox (plain JSON Schema); these compile them. Query, path and header values
// arrive as strings and are coerced; bodies are taken exactly as sent (a number is not a string).
import { Ajv, type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { AppError, type ErrorDetails } from './errors.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

// A route schema is checked against JSON Schema's meta-schema by compilePending (the suite's
// document test), not at each compile: compiling the meta-schema cost each process's first
// request of a body and of a query about 25 ms of CPU each, for schemas that never change.
function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: false,
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    removeAdditional: false,
    strict: false,
    validateSchema: false,
  });
  addFormats(ajv);
  return ajv;
}

const bodyAjv = makeAjv(false);
const paramAjv = makeAjv(true);

/** One step of the walk below: a value, and the way back to the root for naming where it sits. */
interface Step {
  value: unknown;
  key: string;
  parent: Step | null;
}

const pointer = (step: Step | null): string => {
  const keys: string[] = [];
  for (let s = step; s?.parent; s = s.parent) keys.push(s.key.replace(/~/g, '~0').replace(/\//g, '~1'));
  return keys.length === 0 ? '' : `/${keys.reverse().join('/')}`;
};

/**
 * Where the first NUL character sits in a value (keys included), as a JSON pointer; null if none.
 * The walk keeps its own stack: a body of a few kilobytes can nest arrays thousands deep, past
 * what a recursive walk's call stack holds (which answered 500). Values are visited in document
 * order, so the first NUL is the one named, at any depth.
 */
function nulAt(root: unknown): string | null {
  const stack: Step[] = [{ value: root, key: '', parent: null }];
  for (let step = stack.pop(); step !== undefined; step = stack.pop()) {
    const { value } = step;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return pointer(step);
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--)
        stack.push({ value: value[i], key: String(i), parent: step });
    } else if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, item] = entries[i] as [string, unknown];
        stack.push({ value: item, key, parent: step });
        // The key itself, checked before its value: a NUL in it is named by the same pointer.
        stack.push({ value: key, key, parent: step });
      }
    }
  }
  return null;
}

// A query integer is plain decimal digits without a leading zero: coercion would otherwise read
// `1e2`, `+5`, ` 5`, `0x10` or `1.0` as numbers (and `1e309` as Infinity).
const QUERY_INTEGER = /^(0|[1-9][0-9]*)$/;

function integerProperties(schema: object): string[] {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  return Object.entries(properties)
    .filter(([, p]) => p.type === 'integer')
    .map(([name]) => name);
}

type Validate = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null };

function refusal(keyword: string, instancePath: string, params: Record<string, unknown>): ErrorObject {
  return { keyword, instancePath, schemaPath: '', params } as ErrorObject;
}

/** Validators not compiled yet (see compileValidator), each with its schema's check, for compilePending. */
const pending = new Map<() => unknown, () => void>();

/**
 * Checks every schema not compiled yet against the meta-schema, then compiles it: a schema that is
 * not valid JSON Schema, or that Ajv refuses, throws here, not at a request.
 */
export function compilePending(): number {
  const n = pending.size;
  for (const [compile, check] of pending) {
    pending.delete(compile); // a schema refused is refused once, not again at every later call
    check();
    compile();
  }
  return n;
}

/**
 * A route part's validator, compiled at its first use: a start compiled about seventy (~0.2 s of
 * CPU, most of a test file's service start) of which a request needs one or two, and a first
 * request pays ~3 ms. test/openapi/document.test.ts compiles them all.
 */
export function compileValidator({ schema, httpPart }: { schema: object; httpPart?: string }) {
  const ajv = httpPart === 'body' ? bodyAjv : paramAjv;
  let compiled: Validate | undefined;
  const validator = () => {
    if (!compiled) {
      compiled = ajv.compile(schema) as Validate;
      pending.delete(validator);
    }
    return compiled;
  };
  pending.set(validator, () => {
    if (!ajv.validateSchema(schema))
      throw new Error(`not a valid JSON Schema: ${ajv.errorsText(ajv.errors)}`);
  });
  const integers = httpPart === 'body' ? [] : integerProperties(schema);
  // PostgreSQL refuses the NUL character in text and jsonb: a value holding one would reach the
  // database and fail there as a 500. Refused here, for every part of every route of both APIs.
  const checked: Validate = (data) => {
    const nul = nulAt(data);
    if (nul !== null) {
      checked.errors = [refusal('pattern', nul, {})];
      return false;
    }
    for (const name of integers) {
      const raw = (data as Record<string, unknown> | null)?.[name];
      if (typeof raw === 'string' && !QUERY_INTEGER.test(raw)) {
        checked.errors = [refusal('type', `/${name}`, { type: 'integer' })];
        return false;
      }
    }
    const validate = validator();
    const ok = validate(data);
    checked.errors = validate.errors ?? null;
    return ok;
  };
  return checked;
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

/** The longest field name an error repeats (in `details` and its message) before it is cut. */
const MAX_NAME = 200;

/**
 * Turns the first schema violation into the contract's 400 validation_error; a path id that fails
 * (a NUL character, a malformed UUID) names nothing, so it is the contract's 404 for an absent id.
 */
export function validationError(errors: ErrorObject[], part: ValidationPart): AppError {
  if (part === 'params') return new AppError('not_found');
  const first = errors[0];
  if (!first) return new AppError('validation_error');
  const key = part === 'body' ? 'field' : 'param';
  const raw = nameOf(first);
  // A field nested thousands deep has a name as long: cut, so a hostile body is not echoed twice over.
  const cut = raw.length > MAX_NAME ? `${raw.slice(0, MAX_NAME)}…` : raw;
  const name = cut === '' ? (part === 'body' ? 'body' : part) : cut;
  const details: ErrorDetails = { [key]: name };
  if (first.keyword === 'enum') details.allowed = (first.params as { allowedValues: string[] }).allowedValues;
  return new AppError('validation_error', details, describe(first, name));
}
