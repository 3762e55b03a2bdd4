import { router } from "../trpc.ts";
import { nodesRouter } from "./nodes/router.ts";
import { registryRouter } from "./registry/router.ts";

export const hubRouter = router({
  registry: registryRouter,
  nodes: nodesRouter,
});
