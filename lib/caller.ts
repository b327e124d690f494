/**
 * Who is calling, as the gate decided (security/gate.ts); every protocol reads it, none decides
 * it. The anonymous caller of authentication off is security/caller.ts's `ANONYMOUS`.
 */
export interface Caller {
  /** Owner of the addresses this caller creates and sees: the token's `sub`, or the anonymous owner. */
  owner: string;
  /** The verified token's `sub`; undefined when the call carried no verified token. */
  subject: string | undefined;
  /** Scopes the verified token grants (empty without a token). */
  scopes: ReadonlySet<string>;
  /** When the verified token expires (ms since the epoch); a stream it opened ends then. */
  expiresAt?: number | undefined;
}
