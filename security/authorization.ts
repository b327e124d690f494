/**
 * The `Authorization` field as every listener hands it to the gate (security/gate.ts): its field
 * lines joined with ", ", as HTTP combines the lines of one field (RFC 9110, 5.3), which is what
 * the HTTP port's `Headers` gives. `sent` is how many lines the client sent when the HTTP/2
 * stack delivered fewer: nghttp2 drops a line whose value begins or ends with whitespace (a
 * malformed request, RFC 9113 8.2.1), and each line it dropped is joined in as an empty one, so
 * the gate refuses the field as it refuses those lines on the HTTP port, instead of reading what
 * is left. Undefined when the request has no such field.
 */
export function combinedAuthorization(
  lines: readonly string[],
  sent = lines.length,
): string | undefined {
  if (lines.length === 0 && sent === 0) return undefined;
  if (sent <= lines.length) return lines.join(", ");
  return [...lines, ...new Array<string>(sent - lines.length).fill("")].join(", ");
}
