import { requestAllowed } from "../accounts/path-patterns.ts";
import type { Principal } from "../caller.ts";
import { DomainError } from "../errors.ts";
import { inspectPayload } from "../templates/index.ts";

/** A `{{secrets.<key>}}` a saved payload names, with the field it is in (`steps.1.payload.url`). */
export interface SecretReference {
  key: string;
  field: string;
}

/** Every secret a payload names, each with its field under `at`. */
export function secretReferences(payload: unknown, at: string): SecretReference[] {
  return inspectPayload(payload).references.flatMap(({ field, reference }) =>
    reference.root === "secrets" ? [{ key: reference.path[0] as string, field: [at, ...field].join(".") }] : [],
  );
}

/**
 * Saving a reference to a secret is using it (a run will send it wherever the payload says):
 * the saving credential must be allowed to read the secret, `GET /secrets/<key>`. Every
 * member may (secrets are the account's); a restricted API key only as its paths allow.
 */
export function requireSecretReads(principal: Principal, references: readonly SecretReference[]): void {
  const allowed = principal.allowedPaths;
  if (!allowed) return;
  const unreadable = references.find(({ key }) => !requestAllowed(allowed, { method: "GET", path: `/secrets/${key}` }));
  if (unreadable) {
    throw new DomainError(
      "forbidden",
      `this API key may not read secret ${unreadable.key} (GET /secrets/${unreadable.key}), which ${unreadable.field} names`,
    );
  }
}
