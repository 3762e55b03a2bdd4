import { notImplemented } from "../not-implemented.ts";
import { authedProcedure, router } from "../trpc.ts";
import { secret, secretKeyInput } from "./schemas.ts";

export const secretsRouter = router({
  get: authedProcedure
    .meta({
      openapi: { method: "GET", path: "/secrets/{key}", tags: ["secrets"], summary: "Read a secret", protect: true },
    })
    .input(secretKeyInput)
    .output(secret)
    .query(() => notImplemented()),
});
