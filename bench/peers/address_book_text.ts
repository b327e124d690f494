// The matrix ceilings' own strings: the ETag of a version (the quoted versionstamp) and the page
// cursor (the last id, base64url). The bench compares what they mean with this server's
// answers, not their bytes: the server's are its own business (opaque to clients).

/** The entity tag of a stored version. */
export function etagOf(versionstamp: string): string {
  return `"${versionstamp}"`;
}

/** The cursor of a page that ends at `id`. */
export function cursorAfter(id: number): string {
  return btoa(`a1:${id}`).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** The id a cursor resumes after; 0 for none (the first page), NaN for one not issued here. */
export function afterCursor(cursor: string | null | undefined): number {
  if (!cursor) return 0;
  try {
    const match = /^a1:(\d+)$/.exec(atob(cursor.replaceAll("-", "+").replaceAll("_", "/")));
    return match ? Number(match[1]) : NaN;
  } catch {
    return NaN;
  }
}
