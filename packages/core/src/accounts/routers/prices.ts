import { z } from "zod";
import { withCredential } from "../../schemas.ts";
import { authedProcedure, router } from "../../trpc.ts";
import { price } from "../schemas.ts";
import { tags } from "./shared.ts";

/** `accounts.prices.list`: the payment price catalog. */
export const pricesRouter = router({
  list: authedProcedure
    .meta({
      openapi: {
        method: "GET",
        path: "/accounts/payment/prices",
        tags,
        summary: "List payment prices",
        description: "The configured price catalog (PRICES_FILE), or the built-in one. Amounts are in cents.",
        protect: true,
        errorResponses: withCredential,
      },
    })
    .input(z.void())
    .output(z.object({ data: z.array(price) }))
    .query(({ ctx }) => ({ data: ctx.services.accounts.prices })),
});
