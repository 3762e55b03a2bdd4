import { router } from "../trpc.ts";
import { kvRouter } from "./kv/router.ts";
import { streamsRouter } from "./streams/router.ts";

/** `storage.streams.*` and `storage.kv.*` (with `storage.kv.keys.*`). */
export const storageRouter = router({
  streams: streamsRouter,
  kv: kvRouter,
});
