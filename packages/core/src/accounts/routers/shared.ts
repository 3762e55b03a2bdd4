import { z } from "zod";
import { operations } from "../../trpc.ts";
import { authResult } from "../schemas.ts";

export const op = operations(["accounts"]);
export const authData = z.object({ data: authResult });
export const noInput = z.object({});

/** Error statuses of the operations that sign someone in. */
export const signInErrors = { 400: "Invalid input", 401: "Not signed in", 429: "Too many attempts (see Retry-After)" };
