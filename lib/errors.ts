import { preferredLanguage } from "./http/accept.ts";

/**
 * The one domain error model. Every protocol edge (REST, GraphQL, gRPC) renders these; nothing
 * else decides status codes or user messages.
 */

/** Stable, documented error codes (the `error` member of the detailed body). */
export type ErrorCode =
  | "bad-request"
  | "invalid-body"
  | "invalid-field"
  | "invalid-parameter"
  | "unauthorized"
  | "forbidden"
  | "book-not-found"
  | "address-not-found"
  | "route-not-found"
  | "method-not-allowed"
  | "not-acceptable"
  | "id-taken"
  | "request-in-progress"
  | "quota-exceeded"
  | "precondition-failed"
  | "precondition-required"
  | "events-expired"
  | "payload-too-large"
  | "unsupported-media-type"
  | "idempotency-key-reused"
  | "rate-limited"
  | "service-unavailable"
  | "storage-unavailable"
  | "deadline-exceeded"
  | "internal";

/** Languages user messages are translated into; English is the fallback. */
type Language = "en" | "de";

interface ErrorDefinition {
  status: number;
  messages: Record<Language, string>;
}

/** Per-code HTTP status and translated user messages (docs/errors.md, the body's `message`). */
export const ERROR_DEFINITIONS: Record<ErrorCode, ErrorDefinition> = {
  "bad-request": {
    status: 400,
    messages: {
      en: "The request could not be understood.",
      de: "Die Anfrage konnte nicht verstanden werden.",
    },
  },
  "invalid-body": {
    status: 400,
    messages: {
      en: "The request body could not be read.",
      de: "Der Inhalt der Anfrage konnte nicht gelesen werden.",
    },
  },
  "invalid-field": {
    status: 400,
    messages: {
      en: "A field has an invalid value.",
      de: "Ein Feld hat einen ungültigen Wert.",
    },
  },
  "invalid-parameter": {
    status: 400,
    messages: {
      en: "A parameter of the request is invalid.",
      de: "Ein Parameter der Anfrage ist ungültig.",
    },
  },
  "unauthorized": {
    status: 401,
    messages: { en: "Please sign in.", de: "Bitte melden Sie sich an." },
  },
  "forbidden": {
    status: 403,
    messages: {
      en: "You are not allowed to do this.",
      de: "Sie dürfen diese Aktion nicht ausführen.",
    },
  },
  "book-not-found": {
    status: 404,
    messages: { en: "The book was not found.", de: "Das Buch wurde nicht gefunden." },
  },
  "address-not-found": {
    status: 404,
    messages: {
      en: "The address was not found.",
      de: "Die Adresse wurde nicht gefunden.",
    },
  },
  "route-not-found": {
    status: 404,
    messages: {
      en: "This page does not exist.",
      de: "Diese Seite existiert nicht.",
    },
  },
  "method-not-allowed": {
    status: 405,
    messages: {
      en: "This action is not possible here.",
      de: "Diese Aktion ist hier nicht möglich.",
    },
  },
  "not-acceptable": {
    status: 406,
    messages: {
      en: "The requested format is not available.",
      de: "Das gewünschte Format ist nicht verfügbar.",
    },
  },
  "id-taken": {
    status: 409,
    messages: {
      en: "This identifier is not available.",
      de: "Diese Kennung ist nicht verfügbar.",
    },
  },
  "request-in-progress": {
    status: 409,
    messages: {
      en: "The same request is still being processed. Please try again shortly.",
      de: "Dieselbe Anfrage wird noch bearbeitet. Bitte gleich erneut versuchen.",
    },
  },
  "quota-exceeded": {
    status: 409,
    messages: {
      en: "You have stored as many addresses as allowed. Please delete some first.",
      de: "Sie haben so viele Adressen gespeichert wie erlaubt. Bitte löschen Sie zuerst welche.",
    },
  },
  "precondition-failed": {
    status: 412,
    messages: {
      en: "The data was changed in the meantime. Please reload.",
      de: "Die Daten wurden zwischenzeitlich geändert. Bitte neu laden.",
    },
  },
  "precondition-required": {
    status: 428,
    messages: {
      en: "Please confirm this action.",
      de: "Bitte bestätigen Sie diese Aktion.",
    },
  },
  "events-expired": {
    status: 410,
    messages: {
      en: "These changes are no longer available. Please reload.",
      de: "Diese Änderungen sind nicht mehr verfügbar. Bitte neu laden.",
    },
  },
  "payload-too-large": {
    status: 413,
    messages: {
      en: "The request is too large.",
      de: "Die Anfrage ist zu groß.",
    },
  },
  "unsupported-media-type": {
    status: 415,
    messages: {
      en: "The request format is not supported.",
      de: "Das Format der Anfrage wird nicht unterstützt.",
    },
  },
  "idempotency-key-reused": {
    status: 422,
    messages: {
      en: "This request key was already used for a different request.",
      de: "Dieser Anfrageschlüssel wurde bereits für eine andere Anfrage verwendet.",
    },
  },
  "rate-limited": {
    status: 429,
    messages: {
      en: "Too many requests. Please try again later.",
      de: "Zu viele Anfragen. Bitte später erneut versuchen.",
    },
  },
  "service-unavailable": {
    status: 503,
    messages: {
      en: "The service is temporarily unavailable. Please try again later.",
      de: "Der Dienst ist vorübergehend nicht verfügbar. Bitte später erneut versuchen.",
    },
  },
  "storage-unavailable": {
    status: 503,
    messages: {
      en: "Your data cannot be saved at the moment. Please try again later.",
      de: "Ihre Daten können im Moment nicht gespeichert werden. Bitte später erneut versuchen.",
    },
  },
  "deadline-exceeded": {
    // Only RPCs carry a deadline (grpc-timeout, connect-timeout-ms); 504 is Connect's status for it.
    status: 504,
    messages: {
      en: "The request's deadline passed before it was done. Nothing was changed.",
      de: "Die Frist der Anfrage ist abgelaufen, bevor sie erledigt war. Nichts wurde geändert.",
    },
  },
  "internal": {
    status: 500,
    messages: {
      en: "An unexpected error occurred.",
      de: "Ein unerwarteter Fehler ist aufgetreten.",
    },
  },
};

/** One problem: a code plus the untranslated developer detail. */
export interface Problem {
  code: ErrorCode;
  detail: string;
  /**
   * The one input the problem is about, as the protocol that refused it names it (a JSON
   * member, a parameter, a protobuf field path); absent when it is not about one input.
   */
  field?: string;
}

/** An expected, mapped failure. Carries one or more problems that share one HTTP status. */
export class AppError extends Error {
  readonly problems: Problem[];
  readonly status: number;
  /** Seconds for `Retry-After` (503, 429). */
  readonly retryAfter: number | undefined;
  /** Extra headers the edge should send (for example `Allow` on 405). */
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    detail: string,
    options: {
      more?: Problem[];
      retryAfter?: number;
      headers?: Record<string, string>;
      cause?: unknown;
      /** The input the first problem is about (`Problem.field`). */
      field?: string;
    } = {},
  ) {
    super(detail, { cause: options.cause });
    this.name = "AppError";
    const first: Problem = options.field === undefined
      ? { code, detail }
      : { code, detail, field: options.field };
    this.problems = [first, ...(options.more ?? [])];
    this.status = ERROR_DEFINITIONS[code].status;
    this.retryAfter = options.retryAfter;
    this.headers = options.headers ?? {};
  }

  /** The first (most important) code. */
  get code(): ErrorCode {
    return this.problems[0]!.code;
  }
}

/** Builds one AppError from several problems of the same kind (all field errors of a body). */
export function appErrorFromProblems(problems: Problem[]): AppError {
  const [first, ...rest] = problems;
  if (!first) throw new TypeError("appErrorFromProblems needs at least one problem");
  return new AppError(first.code, first.detail, { more: rest, field: first.field });
}

/** The translated user message for a code. */
export function userMessage(code: ErrorCode, language: Language): string {
  return ERROR_DEFINITIONS[code].messages[language];
}

const LANGUAGES: readonly Language[] = ["en", "de"];

/**
 * Picks the best supported language from an `Accept-Language` header (lib/http/accept.ts:
 * RFC 9110 weights, RFC 4647 lookup); English when none is acceptable.
 */
export function negotiateLanguage(header: string | null | undefined): Language {
  return preferredLanguage(header, LANGUAGES) ?? "en";
}
