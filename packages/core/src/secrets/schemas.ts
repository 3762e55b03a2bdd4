import { z } from "zod";
import { pathParam } from "../schemas.ts";

export const secretKeyInput = z.object({ key: pathParam("Key of the secret.") });

export const secret = z.object({ key: z.string(), value: z.string() }).meta({ id: "Secret" });
