import { type AppError, appErrorFromProblems, type Problem } from "../errors.ts";

/** What zod reports of one failed check (its `issues`). */
export interface ZodIssueLike {
  path: PropertyKey[];
  message: string;
}

/** Turns zod issues into problems: body fields are `invalid-field`, the rest `invalid-parameter`. */
export function problemsFromIssues(target: string, issues: readonly ZodIssueLike[]): Problem[] {
  // One problem per field: zod may report follow-up checks on a value of the wrong type, and
  // only the first issue of a field says something useful.
  const seen = new Set<string>();
  const firstPerField = issues.filter((issue) => {
    const key = issue.path.map(String).join(".");
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return firstPerField.map((issue) => {
    const name = issue.path.map(String).join(".") || "(root)";
    if (target === "json") {
      const text = issue.message.includes("received undefined") ? "is required" : issue.message;
      return { code: "invalid-field", detail: `Field "${name}": ${text}.`, field: name };
    }
    const where = target === "param"
      ? "Path parameter"
      : target === "query"
      ? "Query parameter"
      : "Header";
    return {
      code: "invalid-parameter",
      detail: `${where} "${name}" ${issue.message}.`,
      field: name,
    };
  });
}

/**
 * The error of input that failed its schema in `target` (`json`, `param`, `query`, `header`):
 * what every validator renders, the route's and a handler's own.
 */
export function invalidInput(target: string, issues: readonly ZodIssueLike[]): AppError {
  return appErrorFromProblems(problemsFromIssues(target, issues));
}
