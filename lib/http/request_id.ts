// The client's id is echoed only when it is harmless in logs and headers.
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The client's `x-request-id` when well-formed, else a new UUID (every protocol, every port). */
export function requestIdFrom(header: string | null | undefined): string {
  return header && REQUEST_ID.test(header) ? header : crypto.randomUUID();
}
