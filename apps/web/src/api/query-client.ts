import { QueryClient } from "@tanstack/react-query";
import { PlatformError } from "./client.ts";

/** The page's one cache of API answers: the routes' loaders fill it, the pages read it. */
export const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // A refusal will not change by asking again; a lost connection may.
      retry: (count, error) =>
        count < 2 && !(error instanceof PlatformError && error.status >= 400 && error.status < 500),
      refetchOnWindowFocus: false,
    },
  },
});
