import { z } from "zod";
import { withCredential } from "../../schemas.ts";
import { router } from "../../trpc.ts";
import { price } from "../schemas.ts";
import { op } from "./shared.ts";

/** `accounts.prices.list`: the payment price catalog. */
export const pricesRouter = router({
  list: op
    .authed({
      method: "GET",
      path: "/accounts/payment/prices",
      summary: "List payment prices",
      description: "The configured price catalog (PRICES_FILE), or the built-in one. Amounts are in cents.",
      errorResponses: withCredential,
    })
    .input(z.void())
    .output(z.object({ data: z.array(price) }))
    .query(({ ctx }) => ({ data: ctx.services.accounts.prices })),
});
